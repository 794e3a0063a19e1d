"""Events (core/v1 and events.k8s.io/v1) on the fake API server, against the recordings."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client

from routectl_sim.apiserver import FakeApiServer
from tests.apiserver.harness import (
    TOKEN,
    replay,
    request_body,
    response_body,
    same_json,
    seed_cluster,
    status_of,
)

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

CORE_CREATE = "40-event-core-v1-create-failedtocreateroute"
MINIMAL_CREATE = "40-event-core-v1-create-minimal-generatename"
V1_CREATE = "41-event-events-k8s-io-v1-create-failedtocreateroute"


@pytest.fixture
async def server() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token=TOKEN) as fake:
        seed_cluster(fake)
        yield fake


@pytest.mark.parametrize("name", [CORE_CREATE, MINIMAL_CREATE, V1_CREATE])
async def test_create_fills_what_the_server_fills(server, session, name):
    """POSTed Events come back 201 with the server-filled fields of the recording."""
    status, _, body = await replay(session, server, name)
    assert status == 201
    assert same_json(body, response_body(name))


async def test_generate_name_gets_a_random_suffix(server, session):
    """``generateName`` yields the prefix plus five characters."""
    _, _, body = await replay(session, server, MINIMAL_CREATE)
    prefix = request_body(MINIMAL_CREATE)["metadata"]["generateName"]
    assert body["metadata"]["name"].startswith(prefix)
    assert len(body["metadata"]["name"]) == len(prefix) + 5


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("40-event-core-v1-create-namespace-mismatch-400", 400),
        ("41-event-events-k8s-io-v1-missing-eventtime-422", 422),
    ],
)
async def test_create_errors_match_recording(server, session, name, code):
    """A namespace mismatch is 400, an events.k8s.io Event without eventTime 422, as recorded."""
    status, _, body = await replay(session, server, name)
    assert status == code
    assert body == response_body(name)


async def test_events_k8s_io_event_reads_back_as_core(server, session):
    """An events.k8s.io/v1 Event read through /api/v1 shows the core field names."""
    await replay(session, server, V1_CREATE)
    name = "41-event-events-k8s-io-v1-read-back-as-core-v1"
    status, _, body = await replay(session, server, name)
    assert status == 200
    assert same_json(body, response_body(name))


async def test_list_with_field_selector_matches_recording(server, session):
    """LIST with ``involvedObject.kind`` and ``reason`` selectors returns the recorded items."""
    for name in (CORE_CREATE, MINIMAL_CREATE, V1_CREATE):
        await replay(session, server, name)
    name = "42-event-core-v1-list-fieldselector"
    status, _, body = await replay(session, server, name)
    assert status == 200
    expected = response_body(name)
    assert same_json(body, expected)
    assert len(server.events()) == 3


async def test_patch_updates_count_and_last_timestamp(server, core):
    """A strategic merge PATCH bumps ``count`` and ``lastTimestamp`` of a core Event."""
    created = await core.create_namespaced_event("default", request_body(CORE_CREATE))
    patched = await core.patch_namespaced_event(
        created.metadata.name,
        "default",
        {"count": 2, "lastTimestamp": "2026-11-29T06:40:00Z"},
        _preload_content=False,
    )
    body = await patched.json()
    assert body["count"] == 2
    assert body["lastTimestamp"] == "2026-11-29T06:40:00Z"
    assert body["firstTimestamp"] == "2026-11-29T06:36:44Z"


async def test_node_event_outside_default_namespace_is_invalid(server, core):
    """A legacy Event about a cluster-scoped Node must live in ``default`` (422 elsewhere)."""
    event = request_body(CORE_CREATE)
    event["metadata"]["namespace"] = "kube-system"
    with pytest.raises(client.ApiException) as caught:
        await core.create_namespaced_event("kube-system", event)
    body = status_of(caught.value)
    assert caught.value.status == 422
    assert body["details"]["causes"][0]["field"] == "involvedObject.namespace"

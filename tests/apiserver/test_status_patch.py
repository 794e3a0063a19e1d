"""PATCH of Nodes and ``nodes/status``: strategic merge ordering, no-ops, content types."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from routectl_sim.apiserver import ApiError, FakeApiServer
from tests.apiserver.harness import (
    TOKEN,
    recorded,
    replay,
    request_body,
    response_body,
    same_json,
    seed_cluster,
)

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

ROUTE_CREATED = {
    "type": "NetworkUnavailable",
    "status": "False",
    "reason": "RouteCreated",
    "message": "RouteController created a route",
    "lastTransitionTime": "2026-11-29T06:36:21Z",
    "lastHeartbeatTime": "2026-11-29T06:36:21Z",
}


@pytest.fixture
async def server() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token=TOKEN) as fake:
        seed_cluster(fake)
        yield fake


def condition_types(node: dict[str, Any]) -> list[str]:
    """The node's condition types in order."""
    return [c["type"] for c in node["status"]["conditions"]]


@pytest.mark.parametrize(
    "name",
    [
        "20-node-status-smp-networkunavailable-new",
        "20-node-status-smp-networkunavailable-existing",
        "20-node-status-smp-networkunavailable-existing-middle",
    ],
)
async def test_strategic_merge_places_conditions_as_recorded(server, session, name):
    """A new condition sent alone is prepended; an existing one is updated where it stands."""
    status, _, body = await replay(session, server, name)
    assert status == 200
    assert same_json(body, response_body(name))


async def test_kubernetes_asyncio_patch_node_status_prepends_new_condition(server, core):
    """``CoreV1Api.patch_node_status`` sends SMP, and the new condition lands first."""
    response = await core.patch_node_status(
        "kind-control-plane", {"status": {"conditions": [ROUTE_CREATED]}}, _preload_content=False
    )
    body = await response.json()
    assert condition_types(body) == [
        "NetworkUnavailable",
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
        "Ready",
    ]
    assert server.requests[-1].content_type == "application/strategic-merge-patch+json"


async def test_heartbeat_change_is_a_write_and_repeat_is_a_no_op(server, session):
    """Changing only lastHeartbeatTime bumps the RV; the identical patch again keeps it."""
    await replay(session, server, "20-node-status-smp-networkunavailable-new")
    first = server.resource_version
    _, _, noop = await replay(session, server, "21-node-status-smp-networkunavailable-repeat-noop")
    assert noop["metadata"]["resourceVersion"] == str(first) == str(server.resource_version)
    name = "21-node-status-smp-networkunavailable-heartbeat-only"
    _, _, beat = await replay(session, server, name)
    assert same_json(beat, response_body(name))
    assert beat["metadata"]["resourceVersion"] == str(first + 1)


async def test_repeated_patch_later_keeps_resource_version(server, session):
    """The recorded "much later" identical SMP on my-node is still a no-op."""
    await replay(session, server, "20-node-status-smp-networkunavailable-existing")
    before = server.resource_version
    name = "21-node-status-smp-repeat-noop-later"
    status, _, body = await replay(session, server, name)
    assert status == 200
    assert same_json(body, response_body(name))
    assert server.resource_version == before


async def test_merge_patch_replaces_the_condition_list(server, session):
    """``application/merge-patch+json`` replaces ``conditions`` with the patch's list."""
    await replay(session, server, "20-node-status-smp-networkunavailable-new")
    name = "22-node-status-merge-patch-replaces-conditions"
    status, _, body = await replay(session, server, name)
    assert status == 200
    assert same_json(body, response_body(name))
    assert condition_types(body) == ["NetworkUnavailable"]


async def test_status_patch_of_missing_node_is_not_found(server, session):
    """SMP of ``/status`` on a missing Node is the recorded 404."""
    name = "23-node-status-smp-missing-node-404"
    status, _, body = await replay(session, server, name)
    assert status == 404
    assert body == response_body(name)


async def test_patch_with_plain_json_content_type_is_unsupported(server, session):
    """PATCH with ``Content-Type: application/json`` is the recorded 415."""
    name = "24-node-status-patch-content-type-application-json-415"
    status, _, body = await replay(session, server, name)
    assert status == 415
    assert body == response_body(name)


async def test_status_sent_to_main_resource_is_ignored(server, session):
    """Conditions patched on ``/nodes/{name}`` are silently dropped and the RV is kept."""
    before = server.resource_version
    name = "25-node-smp-status-via-main-resource-ignored"
    status, _, body = await replay(session, server, name)
    assert status == 200
    assert same_json(body, response_body(name))
    assert server.resource_version == before


async def test_json_patch_appends_and_duplicates(server, session):
    """A JSON patch ``add /status/conditions/-`` appends, and repeating it stores a duplicate."""
    for name in (
        "26-node-status-json-patch-append",
        "26-node-status-json-patch-append-again-duplicate",
    ):
        status, _, body = await replay(session, server, name)
        assert status == 200
        assert same_json(body, response_body(name))


async def test_label_merge_patch_and_status_patch_match_recording(server, session):
    """The recorded label merge-patch and Ready+addresses SMP give the recorded objects."""
    await replay(session, server, "12-watch-step1-node-create")
    for name in ("12-watch-step2-node-patch-labels-merge", "12-watch-step3-node-patch-status-smp"):
        status, _, body = await replay(session, server, name)
        assert status == 200
        assert same_json(body, response_body(name))


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        (
            [{"type": "Ready", "status": "False"}, ROUTE_CREATED],
            ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready", "NetworkUnavailable"],
        ),
        (
            [ROUTE_CREATED, {"type": "Ready", "status": "False"}],
            ["NetworkUnavailable", "MemoryPressure", "DiskPressure", "PIDPressure", "Ready"],
        ),
        (
            [{"type": "DiskPressure", "$patch": "delete"}],
            ["MemoryPressure", "PIDPressure", "Ready"],
        ),
    ],
    ids=["update-then-new", "new-then-update", "patch-delete"],
)
async def test_condition_order_rules(server, patch, expected):
    """SMP merges by type with kube-api-semantics §4.2 ordering and ``$patch: delete``."""
    node = server.patch_node_status("kind-control-plane", {"status": {"conditions": patch}})
    assert condition_types(node) == expected


async def test_patch_fields_merge_and_null_deletes(server):
    """Absent fields of a merged condition are kept; a ``null`` field is removed."""
    node = server.patch_node_status(
        "kind-control-plane",
        {"status": {"conditions": [{"type": "Ready", "status": "False", "message": None}]}},
    )
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready == {
        "type": "Ready",
        "status": "False",
        "lastHeartbeatTime": "2022-01-27T14:44:03Z",
        "lastTransitionTime": "2022-01-27T14:37:53Z",
        "reason": "KubeletReady",
    }


async def test_addresses_merge_by_type_unless_replaced(server):
    """``status.addresses`` merges by type like the real schema; ``$patch: replace`` replaces."""
    merged = server.patch_node_status(
        "kind-control-plane",
        {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.9"}]}},
    )
    assert merged["status"]["addresses"] == [
        {"type": "InternalIP", "address": "10.0.0.9"},
        {"type": "Hostname", "address": "kind-control-plane"},
    ]
    replaced = server.patch_node_status(
        "kind-control-plane",
        {
            "status": {
                "addresses": [{"$patch": "replace"}, {"type": "InternalIP", "address": "10.0.0.7"}]
            }
        },
    )
    assert replaced["status"]["addresses"] == [{"type": "InternalIP", "address": "10.0.0.7"}]


async def test_spec_sent_to_status_is_ignored(server):
    """Spec changes sent to ``/status`` are dropped (the status strategy keeps the spec)."""
    before = server.resource_version
    node = server.patch_node_status("my-node", {"spec": {"unschedulable": True}})
    assert "unschedulable" not in node["spec"]
    assert server.resource_version == before


async def test_resource_version_in_patch_is_a_precondition(server, session):
    """A patch carrying a stale ``metadata.resourceVersion`` is 409 Conflict."""
    patch = {"metadata": {"resourceVersion": "5"}, "status": {"conditions": [ROUTE_CREATED]}}
    status, _, body = await replay(
        session, server, "20-node-status-smp-networkunavailable-new", body=patch
    )
    assert status == 409
    assert body["reason"] == "Conflict"
    assert body["details"] == {"name": "kind-control-plane", "kind": "nodes"}


async def test_times_are_normalized_and_naive_times_rejected(server):
    """Fractional seconds are dropped on condition times; a time without zone is 422."""
    fractional = dict(ROUTE_CREATED, lastHeartbeatTime="2026-11-29T06:36:21.987654+00:00")
    node = server.patch_node_status("my-node", {"status": {"conditions": [fractional]}})
    assert node["status"]["conditions"][0]["lastHeartbeatTime"] == "2026-11-29T06:36:21Z"
    naive = dict(ROUTE_CREATED, lastHeartbeatTime="2026-11-29T06:36:21.987654")
    with pytest.raises(ApiError) as caught:
        server.patch_node_status("my-node", {"status": {"conditions": [naive]}})
    assert caught.value.code == 422
    assert caught.value.status["details"]["causes"][0]["field"] == "patch"
    assert 'cannot parse "" as "Z07:00"' in caught.value.status["message"]


async def test_merge_key_missing_is_server_error(server, session):
    """An SMP condition without ``type`` fails like the real server (500, not a merge)."""
    status, _, body = await replay(
        session,
        server,
        "20-node-status-smp-networkunavailable-new",
        body={"status": {"conditions": [{"status": "True"}]}},
    )
    assert status == 500
    assert body["message"] == "map: map[status:True] does not contain declared merge key: type"


async def test_json_patch_that_does_not_apply_is_unprocessable(server, session):
    """A JSON patch removing a missing path is 422 with the generic server message."""
    status, _, body = await replay(
        session,
        server,
        "26-node-status-json-patch-append",
        body=[{"op": "remove", "path": "/status/nope"}],
    )
    assert status == 422
    assert body["message"] == "the server rejected our request due to an error in our request"


async def test_recorded_request_keeps_patch_body(server, session):
    """Each request is recorded with method, path, content type, body and final status."""
    name = "20-node-status-smp-networkunavailable-new"
    await replay(session, server, name)
    last = server.requests[-1]
    assert (last.method, last.path, last.status) == (
        "PATCH",
        "/api/v1/nodes/kind-control-plane/status",
        200,
    )
    assert last.content_type == recorded(name)["request"]["headers"]["Content-Type"]
    assert last.json() == request_body(name)
    assert json.loads(last.body) == request_body(name)

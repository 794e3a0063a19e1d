"""coordination.k8s.io/v1 Leases on the fake API server, replayed against the recordings."""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from routectl_sim.apiserver import FakeApiServer
from tests.apiserver.harness import (
    TOKEN,
    admin_client,
    replay,
    request_body,
    response_body,
    same_json,
    status_of,
)

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

NAMESPACE, NAME = "kube-system", "cloud-controller-manager"


@pytest.fixture
async def server() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token=TOKEN) as fake:
        yield fake


@pytest.fixture
async def leases(server: FakeApiServer) -> AsyncIterator[client.CoordinationV1Api]:
    async with admin_client(server) as api:
        yield client.CoordinationV1Api(api)


def put_with(server: FakeApiServer, name: str) -> dict[str, Any]:
    """A recorded PUT body, re-targeted at our Lease's uid and current resourceVersion."""
    body: dict[str, Any] = request_body(name)
    current = server.get_lease(NAMESPACE, NAME)
    assert current is not None
    for field in ("uid", "resourceVersion"):
        body["metadata"][field] = current["metadata"][field]
    return body


async def test_get_missing_lease_is_not_found(server, session):
    """GET of a Lease that does not exist is the recorded 404 (group coordination.k8s.io)."""
    status, _, body = await replay(session, server, "50-lease-get-missing-404")
    assert status == 404
    assert body == response_body("50-lease-get-missing-404")


async def test_create_get_update_match_recording(server, session):
    """POST 201, GET, and PUT with the current RV (200, new RV) answer as recorded."""
    status, _, created = await replay(session, server, "51-lease-create")
    assert status == 201
    assert same_json(created, response_body("51-lease-create"))
    _, _, fetched = await replay(session, server, "52-lease-get")
    assert fetched == created
    name = "53-lease-put-update"
    status, _, updated = await replay(session, server, name, body=put_with(server, name))
    assert status == 200
    assert same_json(updated, response_body(name))
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


async def test_stale_put_and_duplicate_post_conflict(server, session):
    """A stale RV is 409 Conflict and a second POST 409 AlreadyExists, with recorded texts."""
    await replay(session, server, "51-lease-create")
    assert server.resource_version != 250  # the recorded body carries the stale RV 250
    status, _, body = await replay(session, server, "54-lease-put-stale-rv-409-conflict")
    assert status == 409
    assert body == response_body("54-lease-put-stale-rv-409-conflict")
    status, _, body = await replay(session, server, "55-lease-post-duplicate-409-alreadyexists")
    assert status == 409
    assert body == response_body("55-lease-post-duplicate-409-alreadyexists")


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("56-lease-put-renewtime-3-fraction-digits-400", 400),
        ("56-lease-put-renewtime-9-fraction-digits", 400),
        ("56-lease-put-renewtime-no-fraction", 400),
        ("56-lease-put-renewtime-offset-plus0000", 200),
    ],
)
async def test_micro_time_needs_six_fraction_digits(server, session, name, code):
    """renewTime must have exactly 6 fractional digits; ``+00:00`` is accepted and sent as Z."""
    await replay(session, server, "51-lease-create")
    status, _, body = await replay(session, server, name, body=put_with(server, name))
    assert status == code
    assert same_json(body, response_body(name))


async def test_put_without_resource_version_is_invalid(server, session):
    """Leases need ``metadata.resourceVersion`` on PUT: 422 as recorded."""
    await replay(session, server, "51-lease-create")
    name = "57-lease-put-without-resourceversion"
    status, _, body = await replay(session, server, name)
    assert status == 422
    assert body == response_body(name)


@pytest.mark.parametrize("name", ["58-lease-put-missing-no-rv", "58-lease-put-missing-with-rv"])
async def test_put_of_missing_lease_creates_it(server, session, name):
    """PUT to a missing Lease creates it (201), even with a resourceVersion in the body."""
    status, _, body = await replay(session, server, name)
    assert status == 201
    assert same_json(body, response_body(name))


async def test_delete_list_and_name_mismatch(server, session):
    """DELETE answers Status Success; LIST is a LeaseList; a name mismatch on PUT is 400."""
    await replay(session, server, "51-lease-create")
    for name in ("53-lease-put-update", "56-lease-put-renewtime-offset-plus0000"):
        await replay(session, server, name, body=put_with(server, name))
    await replay(session, server, "58-lease-put-missing-no-rv")
    await replay(session, server, "58-lease-put-missing-with-rv")
    status, _, listed = await replay(session, server, "59-lease-list-kube-system")
    assert status == 200
    expected = response_body("59-lease-list-kube-system")
    expected["items"] = expected["items"][1:]  # the apiserver's own identity lease
    assert same_json(listed, expected)
    status, _, deleted = await replay(session, server, "59-lease-delete")
    assert status == 200
    assert same_json(deleted, response_body("59-lease-delete"))
    name = "59-lease-put-name-mismatch-400"
    status, _, body = await replay(session, server, name)
    assert status == 400
    assert body == response_body(name)


async def test_kubernetes_asyncio_lease_round_trip(server, leases):
    """CoordinationV1Api create/read/replace work, and a stale replace raises 409."""
    spec = client.V1LeaseSpec(
        holder_identity="a",
        lease_duration_seconds=15,
        renew_time=datetime.datetime(2026, 11, 29, 6, 36, 54, 263096, tzinfo=datetime.UTC),
    )
    body = client.V1Lease(metadata=client.V1ObjectMeta(name="elector"), spec=spec)
    created = await leases.create_namespaced_lease("default", body)
    created.spec.holder_identity = "b"
    replaced = await leases.replace_namespaced_lease("elector", "default", created)
    assert replaced.spec.holder_identity == "b"
    assert (
        server.get_lease("default", "elector")["spec"]["renewTime"] == "2026-11-29T06:36:54.263096Z"
    )
    with pytest.raises(client.ApiException) as caught:
        await leases.replace_namespaced_lease("elector", "default", created)
    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "Conflict"
    assert [lease["metadata"]["name"] for lease in server.leases()] == ["elector"]

"""Authentication, RBAC denials and injected faults of the fake API server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client, config as kube_config

from routectl_sim.apiserver import FakeApiServer
from tests.apiserver.harness import (
    TOKEN,
    recorded,
    replay,
    response_body,
    seed_cluster,
    status_of,
)

pytestmark = [pytest.mark.integration, pytest.mark.looptime]


@pytest.fixture
async def server() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token=TOKEN, user="norights") as fake:
        seed_cluster(fake)
        yield fake


@pytest.fixture
async def api(server: FakeApiServer, tmp_path: Path) -> AsyncIterator[client.ApiClient]:
    path = tmp_path / "kubeconfig"
    server.kubeconfig(path)
    configuration = client.Configuration()
    await kube_config.load_kube_config(config_file=str(path), client_configuration=configuration)
    async with client.ApiClient(configuration) as api_client:
        yield api_client


async def test_no_token_is_forbidden_anonymous(server, session):
    """Without Authorization the request is ``system:anonymous`` and gets the recorded 403."""
    name = "60-auth-no-token-list-nodes"
    status, headers, body = await replay(session, server, name)
    assert status == 403
    assert body == response_body(name)
    assert headers["X-Content-Type-Options"] == "nosniff"


async def test_wrong_token_is_unauthorized(server, session):
    """An unknown bearer token gets the recorded minimal 401 Status."""
    name = "60-auth-invalid-token-401"
    path = recorded(name)["request"]["path_and_query"]
    async with session.get(server.url + path, headers={"Authorization": "Bearer nope"}) as response:
        body = await response.json()
    assert response.status == 401
    assert body == response_body(name)


@pytest.mark.parametrize(
    ("name", "verb", "resource"),
    [
        ("61-auth-norights-token-list-nodes-403", "list", "nodes"),
        ("61-auth-norights-token-watch-nodes-403", "watch", "nodes"),
        ("61-auth-norights-token-patch-node-status-403", "patch", "nodes/status"),
        ("61-auth-norights-token-get-lease-403", "get", "leases"),
    ],
)
async def test_forbid_answers_like_rbac(server, session, name, verb, resource):
    """``forbid`` makes the verb a 403 with RBAC's exact message, before any watch stream."""
    server.forbid(verb=verb, resource=resource)
    path = recorded(name)["request"]["path_and_query"]
    async with session.request(
        recorded(name)["request"]["method"],
        server.url + path,
        headers={**recorded(name)["request"]["headers"], "Authorization": f"Bearer {TOKEN}"},
        data=json.dumps(recorded(name)["request"]["body"])
        if recorded(name)["request"]["body"]
        else None,
    ) as response:
        body = await response.json()
    assert response.status == 403
    assert body == response_body(name)
    server.allow(verb=verb, resource=resource)
    status, _, _ = await replay(session, server, "06-node-get")
    assert status == 200


async def test_kubeconfig_carries_url_and_token(server, api):
    """The written kubeconfig lets kubernetes-asyncio reach the server with the token."""
    nodes = await client.CoreV1Api(api).list_node()
    assert len(nodes.items) == 7
    assert server.requests[-1].status == 200


async def test_fail_next_answers_status_with_retry_after(server, api):
    """``fail_next`` answers matching requests with a Status and ``Retry-After``, then stops."""
    server.fail_next(
        method="GET", path_regex=r"^/api/v1/nodes$", status=429, times=2, retry_after=3
    )
    core = client.CoreV1Api(api)
    for _ in range(2):
        with pytest.raises(client.ApiException) as caught:
            await core.list_node()
        assert caught.value.status == 429
        assert caught.value.headers is not None
        assert caught.value.headers["Retry-After"] == "3"
        body = status_of(caught.value)
        assert body["reason"] == "TooManyRequests"
        assert body["details"] == {"retryAfterSeconds": 3}
    assert len((await core.list_node()).items) == 7


async def test_fail_next_can_target_watches_only(server, api, session):
    """``fail_next(watch=True)`` fails the watch request but not the list."""
    server.fail_next(method="GET", path_regex="/api/v1/nodes", status=500, watch=True)
    core = client.CoreV1Api(api)
    assert len((await core.list_node()).items) == 7
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with session.get(f"{server.url}/api/v1/nodes?watch=true", headers=headers) as response:
        body = await response.json()
    assert response.status == 500
    assert body["reason"] == "InternalError"


async def test_unavailable_answers_service_unavailable(server, api):
    """While ``unavailable`` is set every request is a 503 ServiceUnavailable Status."""
    server.unavailable = True
    core = client.CoreV1Api(api)
    with pytest.raises(client.ApiException) as caught:
        await core.read_node("my-node")
    assert caught.value.status == 503
    assert status_of(caught.value)["reason"] == "ServiceUnavailable"
    server.unavailable = False
    assert (await core.read_node("my-node")).metadata.name == "my-node"


async def test_hang_lets_client_timeouts_fire(server, api, looptime):
    """While ``hang`` is set requests stall, so a client timeout fires on loop time."""
    server.hang = True
    core = client.CoreV1Api(api)
    with pytest.raises(asyncio.TimeoutError):
        await core.read_node("my-node", _request_timeout=5)
    assert looptime == pytest.approx(5, abs=0.1)

    async def read() -> str:
        node = await core.read_node("my-node")
        return str(node.metadata.name)

    stalled = asyncio.create_task(read())
    await asyncio.sleep(30)
    assert not stalled.done()
    server.hang = False
    assert await stalled == "my-node"


async def test_close_releases_stalled_requests(session):
    """Closing the server while requests hang ends them instead of waiting forever."""
    server = FakeApiServer()
    await server.start()
    server.hang = True
    request = asyncio.create_task(session.get(f"{server.url}/api/v1/nodes"))
    await asyncio.sleep(1)
    await server.aclose()
    with pytest.raises(aiohttp.ClientError):
        await request


async def test_post_with_non_json_content_type_is_unsupported(server, session):
    """A POST body that is not ``application/json`` is refused with 415."""
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "text/plain"}
    async with session.post(f"{server.url}/api/v1/nodes", headers=headers, data="{}") as response:
        body = await response.json()
    assert response.status == 415
    assert body["reason"] == "UnsupportedMediaType"


async def test_unknown_path_and_method(server, session):
    """Unknown paths are 404 and unsupported methods 405, both as Status objects."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with session.get(f"{server.url}/api/v1/configmaps", headers=headers) as response:
        missing = await response.json()
    async with session.post(f"{server.url}/api/v1/nodes/my-node", headers=headers) as response:
        method = await response.json()
    assert (missing["code"], missing["reason"]) == (404, "NotFound")
    assert (method["code"], method["reason"]) == (405, "MethodNotAllowed")


async def test_version_is_public(server, session):
    """``/version`` answers without credentials, like the real public-info endpoints."""
    async with session.get(f"{server.url}/version") as response:
        body = await response.json()
    assert response.status == 200
    assert body["gitVersion"] == "v1.36.2"

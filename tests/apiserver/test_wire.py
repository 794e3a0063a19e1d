"""Wire-level details of the fake API server: framing, Go JSON encoding, odd requests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest

from routectl_sim.apiserver import FakeApiServer
from tests.apiserver.harness import TOKEN, seed_cluster

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def server() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token=TOKEN) as fake:
        yield fake


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(headers=AUTH) as http:
        yield http


async def test_small_bodies_have_length_and_big_ones_are_chunked(server, session):
    """Bodies up to 2 KiB carry Content-Length, bigger ones are chunked; all end in a newline."""
    seed_cluster(server)
    async with session.get(f"{server.url}/api/v1/nodes/no-such-node") as response:
        small = await response.read()
        small_headers = response.headers
    async with session.get(f"{server.url}/api/v1/nodes") as response:
        big = await response.read()
        big_headers = response.headers
    assert small_headers["Content-Length"] == str(len(small))
    assert big_headers["Transfer-Encoding"] == "chunked"
    assert small.endswith(b"}\n")
    assert big.endswith(b"}\n")


async def test_json_is_compact_and_html_escaped_like_go(server, session):
    """Bodies are compact, and ``<``, ``>``, ``&`` in strings are sent as ``\\u003c`` and so on."""
    server.create_node({"metadata": {"name": "n", "annotations": {"note": "<a & b>"}}})
    async with session.get(f"{server.url}/api/v1/nodes/n") as response:
        raw = await response.read()
    assert b'"note":"\\u003ca \\u0026 b\\u003e"' in raw
    assert b'": ' not in raw
    assert json.loads(raw)["metadata"]["annotations"]["note"] == "<a & b>"


async def test_watch_events_are_single_compact_lines(server, session):
    """Each watch event is one compact JSON object followed by exactly one newline."""
    seed_cluster(server)
    url = f"{server.url}/api/v1/nodes?watch=true&resourceVersion=0&timeoutSeconds=1"
    async with session.get(url) as response:
        raw = await response.read()
    lines = raw.split(b"\n")
    assert lines[-1] == b""
    assert len(lines) == 8
    for line in lines[:-1]:
        event = json.loads(line)
        assert event["object"]["kind"] == "Node"
        assert b'": ' not in line


async def test_non_numeric_resource_version_is_internal_error(server, session):
    """``resourceVersion=abc`` is a 500 without reason, as on the real server."""
    async with session.get(f"{server.url}/api/v1/nodes?resourceVersion=abc") as response:
        body = await response.json()
    assert response.status == 500
    assert "reason" not in body
    assert body["message"] == (
        'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax'
    )


async def test_json_patch_replace_and_remove(server, session):
    """JSON patch ``replace`` and ``remove`` operate on the Node like RFC 6902 says."""
    server.create_node({"metadata": {"name": "n", "labels": {"a": "1", "b": "2"}}})
    operations = [
        {"op": "replace", "path": "/metadata/labels/a", "value": "9"},
        {"op": "remove", "path": "/metadata/labels/b"},
    ]
    async with session.patch(
        f"{server.url}/api/v1/nodes/n",
        data=json.dumps(operations),
        headers={"Content-Type": "application/json-patch+json"},
    ) as response:
        patched = await response.json()
    assert response.status == 200
    assert patched["metadata"]["labels"] == {"a": "9"}


async def test_lease_watch_sees_renewals(server, session):
    """Leases can be watched too: a renewal PUT shows up as MODIFIED."""
    lease = server.create_lease(
        {"metadata": {"name": "l", "namespace": "kube-system"}, "spec": {"holderIdentity": "a"}}
    )
    start = lease["metadata"]["resourceVersion"]
    leases = f"{server.url}/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    url = f"{leases}?watch=1&resourceVersion={start}&timeoutSeconds=2"

    async def renew() -> None:
        await asyncio.sleep(0.5)
        lease["spec"]["renewTime"] = "2026-11-29T06:36:54.263096Z"
        async with session.put(f"{leases}/l", json=lease) as response:
            assert response.status == 200

    task = asyncio.create_task(renew())
    async with session.get(url) as response:
        events = [json.loads(line) async for line in response.content]
    await task
    assert [(e["type"], e["object"]["kind"]) for e in events] == [("MODIFIED", "Lease")]

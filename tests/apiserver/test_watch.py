"""WATCH on the fake API server: events, bookmarks, timeouts, 410s and cut connections."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch

from routectl_sim.apiserver import FakeApiServer
from tests.apiserver.harness import (
    TOKEN,
    recorded,
    replay,
    request_body,
    response_body,
    same_json,
    seed_cluster,
    watch_lines,
)

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


async def read_watch(
    session: aiohttp.ClientSession, url: str, **headers: str
) -> tuple[aiohttp.ClientResponse, list[dict[str, Any]]]:
    """Run a watch request to its end; return the response and its events."""
    async with session.get(url, headers=headers) as response:
        raw = await response.read()
    return response, watch_lines(raw)


async def test_watch_from_list_resource_version_matches_recording(server, session, looptime):
    """A watch from the list RV sees ADDED, MODIFIED, MODIFIED, DELETED, a BOOKMARK, then ends."""
    seed_cluster(server)
    status, _, listed = await replay(session, server, "10-node-list-before-watch")
    assert status == 200
    assert same_json(listed, response_body("10-node-list-before-watch"))
    start = listed["metadata"]["resourceVersion"]
    url = f"{server.url}/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion={start}&timeoutSeconds=5"

    async def writer() -> None:
        await asyncio.sleep(0.5)
        for step in ("12-watch-step1-node-create", "12-watch-step2-node-patch-labels-merge"):
            await replay(session, server, step)
        await replay(session, server, "12-watch-step3-node-patch-status-smp")
        await replay(session, server, "12-watch-step4-node-delete")

    task = asyncio.create_task(writer())
    response, events = await read_watch(session, url)
    await task
    expected = response_body("11-watch-nodes-from-list-rv-timeout5")
    assert response.status == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["Transfer-Encoding"] == "chunked"
    assert [e["type"] for e in events] == [e["type"] for e in expected]
    assert same_json(events[:4], expected[:4])
    deleted, bookmark = events[3], events[4]
    assert deleted["object"]["metadata"]["resourceVersion"] == str(server.resource_version)
    assert bookmark["object"]["metadata"] == {"resourceVersion": str(server.resource_version)}
    assert {k: v for k, v in bookmark["object"].items() if k != "metadata"} == {
        k: v for k, v in expected[4]["object"].items() if k != "metadata"
    }
    assert looptime == pytest.approx(5, abs=0.1)


@pytest.mark.parametrize(
    ("name", "bookmark"),
    [
        ("13-watch-nodes-rv-unset", False),
        ("13-watch-nodes-rv-empty-bookmarks", True),
        ("13-watch-nodes-rv0", True),
        ("14-watch-nodes-sendinitialevents", True),
        ("14-watch-nodes-sendinitialevents-rv0", True),
        ("15-watch-sendinitialevents-without-bookmarks", False),
    ],
)
async def test_initial_events_then_end_marker(server, session, looptime, name, bookmark):
    """Initial-state watches send ADDED per Node by name, then the initial-events-end BOOKMARK."""
    seed_cluster(server)
    path = recorded(name)["request"]["path_and_query"]
    response, events = await read_watch(session, server.url + path)
    expected = response_body(name)
    assert response.status == 200
    assert [e["type"] for e in events] == [e["type"] for e in expected]
    assert same_json(events[:7], expected[:7])
    if bookmark:
        assert events[-1]["object"]["metadata"] == {
            "resourceVersion": str(server.resource_version),
            "annotations": {"k8s.io/initial-events-end": "true"},
        }
    assert looptime == pytest.approx(3, abs=0.1)


async def test_send_initial_events_requires_not_older_than(server, session):
    """``sendInitialEvents`` without ``resourceVersionMatch=NotOlderThan`` is the recorded 422."""
    name = "15-watch-sendinitialevents-without-rvmatch-422"
    status, _, body = await replay(session, server, name)
    assert status == 422
    assert body == response_body(name)


@pytest.mark.parametrize(
    "name",
    [
        "76-watch-nodes-too-old-rv-1-410",
        "76-watch-nodes-too-old-compacted-rv-259-410",
        "76-watch-nodes-too-old-uncompacted-rv-297-older-than-cache-410",
    ],
)
async def test_too_old_resource_version_is_one_error_event(server, session, looptime, name):
    """A watch from before the kept history gets HTTP 200, one ERROR 410 event, and EOF at once."""
    seed_cluster(server)
    server.expire_history()
    path = recorded(name)["request"]["path_and_query"]
    path = path.replace("=259", "=3").replace("=297", "=6")
    response, events = await read_watch(session, server.url + path)
    assert response.status == 200
    assert same_json(events, response_body(name))
    assert events[0]["object"]["message"] == (
        f"too old resource version: {path.split('resourceVersion=')[1].split('&')[0]} "
        f"({server.resource_version})"
    )
    assert looptime < 0.1


async def test_too_old_resource_version_as_http_status(server, session):
    """With ``watch_410_as_http_status`` the same watch is answered HTTP 410 with a Status."""
    seed_cluster(server)
    server.expire_history()
    server.watch_410_as_http_status = True
    async with session.get(f"{server.url}/api/v1/nodes?watch=1&resourceVersion=1") as response:
        body = await response.json()
    assert response.status == 410
    assert body["reason"] == "Expired"
    assert body["code"] == 410


async def test_history_limit_expires_old_resource_versions(session):
    """Only ``history_limit`` changes are kept; resuming from before them is 410."""
    async with FakeApiServer(token=TOKEN, history_limit=2) as server:
        for index in range(4):
            server.create_node({"metadata": {"name": f"n{index}"}})
        url = f"{server.url}/api/v1/nodes?watch=1&resourceVersion=1&timeoutSeconds=1"
        _, too_old = await read_watch(session, url)
        url = f"{server.url}/api/v1/nodes?watch=1&resourceVersion=2&timeoutSeconds=1"
        _, replayed = await read_watch(session, url)
    assert too_old[0]["object"]["message"] == "too old resource version: 1 (2)"
    assert [e["object"]["metadata"]["name"] for e in replayed] == ["n2", "n3"]


@pytest.mark.parametrize(
    "name", ["80-watch-nodes-accept-json-stream-watch", "80-watch-nodes-no-accept-header"]
)
async def test_quiet_watch_is_json_and_silent(server, session, looptime, name):
    """A watch at the current RV is ``application/json`` chunked, with no events and no bookmark."""
    seed_cluster(server)
    request = recorded(name)["request"]
    path = request["path_and_query"].replace("310", str(server.resource_version))
    response, events = await read_watch(session, server.url + path, **request["headers"])
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["Transfer-Encoding"] == "chunked"
    assert events == []
    assert looptime == pytest.approx(4, abs=0.1)


async def test_future_resource_version_watch_waits_silently(server, session, looptime):
    """A watch from a future RV is accepted and stays silent until its timeout (recording 75)."""
    seed_cluster(server)
    name = "75-watch-nodes-future-rv-too-large"
    future = str(server.resource_version + 100000)
    path = recorded(name)["request"]["path_and_query"].replace("100291", future)
    response, events = await read_watch(session, server.url + path)
    assert response.status == 200
    assert events == response_body(name) == []
    assert looptime == pytest.approx(10, abs=0.1)


async def test_future_resource_version_watch_skips_changes_up_to_it(server, session):
    """A watch from a future RV N delivers only changes after N."""
    seed_cluster(server)
    target = server.resource_version + 2
    url = f"{server.url}/api/v1/nodes?watch=1&resourceVersion={target}&timeoutSeconds=5"

    async def writer() -> None:
        await asyncio.sleep(1)
        for label in ("a", "b", "c"):
            server.patch_node("my-node", {"metadata": {"labels": {label: "x"}}})

    task = asyncio.create_task(writer())
    _, events = await read_watch(session, url)
    await task
    assert [e["object"]["metadata"]["resourceVersion"] for e in events] == [str(target + 1)]


async def test_watch_of_departed_client_is_released(server, session, looptime):
    """When the client hangs up, the server notices within seconds and forgets the watch."""
    url = f"{server.url}/api/v1/nodes?watch=1&resourceVersion=0"
    async with session.get(url) as response:
        assert response.status == 200
        await asyncio.sleep(0.1)
        assert server.open_watches == 1
    await asyncio.sleep(6)
    assert server.open_watches == 0


async def test_bookmarks_every_interval_and_before_deadline(server, session, looptime):
    """Bookmarks come each ``bookmark_interval`` and 2 s before the deadline, as recorded (30)."""
    seed_cluster(server)
    start = server.resource_version
    url = (
        f"{server.url}/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion={start}"
        "&fieldSelector=metadata.name%3Dno-such-node&timeoutSeconds=75"
    )
    times: list[float] = []

    async def writer() -> None:
        await asyncio.sleep(10)
        server.patch_node("my-node", {"metadata": {"labels": {"a": "b"}}})

    task = asyncio.create_task(writer())
    bookmarks = []
    async with session.get(url) as response:
        async for line in response.content:
            bookmarks.append(json.loads(line))
            times.append(asyncio.get_running_loop().time())
    await task
    recorded_stream = recorded("30-watch-nodes-bookmark-timing-75s")["response"]
    assert [round(chunk["t_s"]) for chunk in recorded_stream["stream"]["chunks"]] == [60, 73, 75]
    assert times == [pytest.approx(60, abs=0.1), pytest.approx(73, abs=0.1)]
    assert same_json(bookmarks, recorded_stream["body"])
    assert looptime == pytest.approx(75, abs=0.1)


async def test_watch_during_finalizer_delete_sees_modified_only(server, session):
    """Deleting a Node with finalizers shows watchers a MODIFIED, not a DELETED (recording 90)."""
    seed_cluster(server)
    start = server.resource_version
    url = f"{server.url}/api/v1/nodes?watch=1&resourceVersion={start}&timeoutSeconds=4"

    async def deleter() -> None:
        await asyncio.sleep(0.5)
        await replay(session, server, "90-node-delete-with-finalizers")
        await replay(session, server, "90-node-delete-with-finalizers-again")

    task = asyncio.create_task(deleter())
    _, events = await read_watch(session, url)
    await task
    expected = [
        e
        for e in response_body("90-watch-during-delete-with-finalizers")
        if e["type"] != "BOOKMARK"
    ]
    assert same_json(events, expected)


async def test_selector_transitions_become_added_and_deleted(server, session):
    """An object that starts matching a selector is ADDED; one that stops is DELETED."""
    seed_cluster(server)
    start = server.resource_version
    url = f"{server.url}/api/v1/nodes?watch=1&resourceVersion={start}&labelSelector=team%3Dnet&timeoutSeconds=5"

    async def writer() -> None:
        await asyncio.sleep(1)
        server.patch_node("my-node", {"metadata": {"labels": {"team": "net"}}})
        server.patch_node("my-node", {"metadata": {"labels": {"x": "y"}}})
        server.patch_node("my-node", {"metadata": {"labels": {"team": None}}})
        server.patch_node("kind-control-plane", {"metadata": {"labels": {"x": "y"}}})

    task = asyncio.create_task(writer())
    _, events = await read_watch(session, url)
    await task
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    deleted = events[2]["object"]
    assert deleted["metadata"]["labels"]["team"] == "net"
    assert deleted["metadata"]["resourceVersion"] == str(start + 3)


async def test_no_op_write_emits_no_event(server, session):
    """A write that changes nothing keeps the RV and produces no watch event."""
    seed_cluster(server)
    start = server.resource_version
    url = f"{server.url}/api/v1/nodes?watch=1&resourceVersion={start}&timeoutSeconds=2"

    async def writer() -> None:
        await asyncio.sleep(0.5)
        server.patch_node("my-node", {"metadata": {"name": "my-node"}})
        server.patch_node_status("my-node", {"status": {}})

    task = asyncio.create_task(writer())
    _, events = await read_watch(session, url)
    await task
    assert events == []
    assert server.resource_version == start


async def test_drop_watches_cuts_the_stream(server, session):
    """``drop_watches`` ends the chunked body abruptly: the client sees a payload error."""
    seed_cluster(server)
    url = f"{server.url}/api/v1/nodes?watch=1&resourceVersion=0"
    async with session.get(url) as response:
        for _ in range(7):
            await response.content.readline()
        server.drop_watches()
        with pytest.raises(aiohttp.ClientPayloadError):
            await response.content.read()


async def test_end_watches_ends_cleanly(server, session, looptime):
    """``end_watches`` finishes every stream cleanly, like a server-side timeout."""
    url = f"{server.url}/api/v1/nodes?watch=1&resourceVersion=0"

    async def ender() -> None:
        await asyncio.sleep(7)
        server.end_watches()

    task = asyncio.create_task(ender())
    response, events = await read_watch(session, url)
    await task
    assert response.status == 200
    assert events == []
    assert looptime == pytest.approx(7, abs=0.1)


async def test_kubernetes_asyncio_watch_sees_typed_events(server, core):
    """kubernetes-asyncio's Watch gets typed Nodes, dict BOOKMARKs and a clean end."""
    seed_cluster(server)
    start = str(server.resource_version)

    async def writer() -> None:
        await asyncio.sleep(0.5)
        server.create_node(request_body("12-watch-step1-node-create"))

    task = asyncio.create_task(writer())
    async with watch.Watch() as stream:
        seen = [
            (event["type"], event["raw_object"]["metadata"]["resourceVersion"])
            async for event in stream.stream(
                core.list_node,
                resource_version=start,
                allow_watch_bookmarks=True,
                timeout_seconds=3,
            )
        ]
    await task
    rv = str(server.resource_version)
    assert seen == [("ADDED", rv), ("BOOKMARK", rv)]


async def test_kubernetes_asyncio_watch_raises_on_gone(server, core):
    """The ERROR 410 event becomes ``ApiException(status=410)`` in kubernetes-asyncio."""
    seed_cluster(server)
    server.expire_history()
    async with watch.Watch() as stream:
        with pytest.raises(client.ApiException) as caught:
            async for _ in stream.stream(core.list_node, resource_version="1", timeout_seconds=3):
                pass
    assert caught.value.status == 410

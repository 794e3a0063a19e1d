"""The informer resumes a cut watch after the last event it applied, never before it."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from routectl.errors import ImpossibleObjectError, KubeError, ResourceVersionGoneError
from routectl.kube import NodeEvent, NodeViews
from routectl.kube.decode import decode_event, decode_page
from routectl.kube.informer import Informer, NodeStore

pytestmark = pytest.mark.looptime


def event(kind: str, name: str, version: int) -> dict[str, Any]:
    node = {"metadata": {"name": name, "uid": name, "resourceVersion": str(version)}}
    return {"type": kind, "object": node}


class ScriptedSource:
    """Lists at resourceVersion 10; the first watch delivers two events and is cut."""

    def __init__(self) -> None:
        self.watched_from: list[str] = []

    async def list_node_views(self) -> NodeViews:
        """An empty cluster at resourceVersion 10."""
        return NodeViews(nodes=[], skipped=[], impossible=[], resource_version="10")

    async def watch_node_events(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[NodeEvent]:
        """Replay like an API server would: every event after ``resource_version``."""
        self.watched_from.append(resource_version)
        history = [event("ADDED", "gone", 11), event("DELETED", "gone", 12)]
        for item in history:
            if int(item["object"]["metadata"]["resourceVersion"]) > int(resource_version):
                yield decode_event(orjson.dumps(item))
        if len(self.watched_from) == 1:
            raise KubeError("watch nodes: API server unreachable: ClientPayloadError")
        await asyncio.sleep(3600)


async def test_a_watch_cut_mid_stream_resumes_after_the_last_event_applied() -> None:
    """Cut after two events, the watch resumes from the second's resourceVersion: a deleted
    Node is not brought back by a replay (which once made a leader hand its CIDR to the
    ghost and delete the right route, as the chaos sweep found)."""
    source = ScriptedSource()
    seen: list[tuple[str | None, str | None]] = []
    informer = Informer(
        kube=source,
        store=NodeStore(),
        on_change=lambda old, new: seen.append(
            (old.name if old else None, new.name if new else None)
        ),
        on_relist=lambda reason: None,
        rng=random.Random(1),
        clock=lambda: asyncio.get_running_loop().time(),
    )
    task = asyncio.create_task(informer.run())
    await asyncio.sleep(60)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert source.watched_from == ["10", "12"]
    assert seen == [(None, "gone"), ("gone", None)]


class ImpossibleSource:
    """Lists one good Node, then watches it turn impossible (spec: null), and relists it so."""

    def __init__(self) -> None:
        self.lists = 0

    def node(self, spec: object, version: int) -> dict[str, Any]:
        meta = {"name": "n1", "uid": "u1", "resourceVersion": str(version)}
        return {"metadata": meta, "spec": spec}

    async def list_node_views(self) -> NodeViews:
        """First the good Node; on a relist, the impossible one (decoded as the client does)."""
        self.lists += 1
        spec = {"podCIDRs": ["10.244.1.0/24"]} if self.lists == 1 else None
        body = {"metadata": {"resourceVersion": "10"}, "items": [self.node(spec, 10)]}
        page = decode_page(orjson.dumps(body))
        return NodeViews(
            nodes=page.nodes,
            skipped=page.skipped,
            impossible=page.impossible,
            resource_version=page.resource_version,
        )

    async def watch_node_events(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[NodeEvent]:
        """MODIFIED with spec: null, then the watch expires (410): relist."""
        if self.lists == 1:
            yield decode_event(orjson.dumps({"type": "MODIFIED", "object": self.node(None, 11)}))
            raise ResourceVersionGoneError("too old", status=410)
        await asyncio.sleep(3600)


async def test_a_node_turned_impossible_keeps_its_last_view_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A Node served with spec: null (by a watch event, then by a relist) is not a Node
    without a pod CIDR: its last view stands, so its route stays, and a WARNING says why."""
    store = NodeStore()
    informer = Informer(
        kube=ImpossibleSource(),
        store=store,
        on_change=lambda old, new: None,
        on_relist=lambda reason: None,
        rng=random.Random(1),
        clock=lambda: asyncio.get_running_loop().time(),
    )
    task = asyncio.create_task(informer.run())
    await asyncio.sleep(60)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    kept = store.get("n1")
    assert kept is not None
    assert kept.pod_cidrs == ("10.244.1.0/24",)
    told = [r.getMessage() for r in caplog.records if "never serves" in r.getMessage()]
    assert told, "a WARNING says why"
    assert all("spec is null" in line and "its routes stay" in line for line in told)


class NeverReadableSource(ImpossibleSource):
    """Lists n1 with spec: null from the start; the watch serves it so again (a heartbeat),
    then readable; a relist serves it impossible again, then the watch deletes it."""

    async def list_node_views(self) -> NodeViews:
        self.lists += 1
        body = {"metadata": {"resourceVersion": "10"}, "items": [self.node(None, 10)]}
        page = decode_page(orjson.dumps(body))
        return NodeViews(
            nodes=page.nodes,
            skipped=page.skipped,
            impossible=page.impossible,
            resource_version=page.resource_version,
        )

    async def watch_node_events(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[NodeEvent]:
        if self.lists == 1:
            yield decode_event(orjson.dumps({"type": "MODIFIED", "object": self.node(None, 11)}))
            await asyncio.sleep(10)
            good = self.node({"podCIDRs": ["10.244.1.0/24"]}, 12)
            yield decode_event(orjson.dumps({"type": "MODIFIED", "object": good}))
            await asyncio.sleep(10)
            raise ResourceVersionGoneError("too old", status=410)
        await asyncio.sleep(10)
        yield decode_event(orjson.dumps({"type": "DELETED", "object": self.node(None, 13)}))
        await asyncio.sleep(3600)


async def test_a_node_never_seen_readable_is_unknown_until_it_can_be_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A Node impossible from its first sighting is *unknown* (with its UID, for Events),
    said once however often it is served so (the sync warns); a readable view ends that (a relist
    that serves it impossible again keeps that view, as for any Node); a delete forgets it."""
    caplog.set_level(logging.INFO, logger="routectl.informer")
    store = NodeStore()
    informer = Informer(
        kube=NeverReadableSource(),
        store=store,
        on_change=lambda old, new: None,
        on_relist=lambda reason: None,
        rng=random.Random(1),
        clock=lambda: asyncio.get_running_loop().time(),
    )
    task = asyncio.create_task(informer.run())
    await asyncio.sleep(5)
    assert store.get("n1") is None
    assert list(store.unknown) == ["n1"]
    assert "spec is null" in store.unknown["n1"]
    assert [(v.name, v.uid) for v in store.unknown_views()] == [("n1", "u1")]
    told = [r for r in caplog.records if r.levelname == "INFO" and "unknown" in r.message]
    assert len(told) == 1, "said once, not on every event that serves it so"
    await asyncio.sleep(10)  # served readable
    assert store.unknown == {}
    assert store.get("n1") is not None
    await asyncio.sleep(10)  # relisted impossible: its last view stands, it is not unknown
    assert store.unknown == {}
    assert store.get("n1") is not None
    await asyncio.sleep(20)  # deleted
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert store.get("n1") is None
    assert store.unknown == {}


def test_a_relist_replaces_the_unknown_nodes() -> None:
    """A full list's impossible Nodes are the unknown ones; one gone from it is forgotten."""
    store = NodeStore()
    first = ImpossibleObjectError("Node a: spec is null", name="a", uid="ua")
    store.mark_unknown(first)
    store.set_unknown([ImpossibleObjectError("Node b: spec is null", name="b")])
    assert list(store.unknown) == ["b"]


class DeletedWhileUnknownSource(NeverReadableSource):
    """Lists n1 with spec: null; the watch then deletes it."""

    async def watch_node_events(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[NodeEvent]:
        await asyncio.sleep(10)
        yield decode_event(orjson.dumps({"type": "DELETED", "object": self.node(None, 11)}))
        await asyncio.sleep(3600)


async def test_an_unknown_node_deleted_is_a_change_so_its_routes_are_planned() -> None:
    """Deleting an unknown Node hands its (name-only) view to on_change as removed: the sync
    it asks for may now plan its routes away."""
    seen: list[tuple[str | None, str | None]] = []
    store = NodeStore()
    informer = Informer(
        kube=DeletedWhileUnknownSource(),
        store=store,
        on_change=lambda old, new: seen.append(
            (old.name if old else None, new.name if new else None)
        ),
        on_relist=lambda reason: None,
        rng=random.Random(1),
        clock=lambda: asyncio.get_running_loop().time(),
    )
    task = asyncio.create_task(informer.run())
    await asyncio.sleep(5)
    assert list(store.unknown) == ["n1"]
    assert seen == []  # becoming unknown changes no plan by itself
    await asyncio.sleep(10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert store.unknown == {}
    assert seen == [("n1", None)]

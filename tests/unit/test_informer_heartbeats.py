"""A kubelet heartbeat costs its decode: the store keeps the very same record, nobody hears."""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from routectl.errors import ImpossibleObjectError
from routectl.kube import NodeEvent, NodeViews
from routectl.kube.decode import decode_event
from routectl.kube.informer import Informer, NodeStore
from routectl.model import NodeView
from tests.conftest import load_fixture

pytestmark = pytest.mark.looptime


def heartbeat(node: dict[str, Any], version: int) -> dict[str, Any]:
    beat = copy.deepcopy(node)
    beat["metadata"]["resourceVersion"] = str(version)
    for condition in beat["status"]["conditions"]:
        condition["lastHeartbeatTime"] = f"2026-11-29T00:{version % 60:02d}:00Z"
    return beat


class Source:
    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events

    async def list_node_views(self) -> NodeViews:
        return NodeViews(nodes=[], skipped=[], impossible=[], resource_version="1")

    async def watch_node_events(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[NodeEvent]:
        for event in self.events:
            yield decode_event(orjson.dumps(event))
        await asyncio.sleep(3600)


async def test_heartbeats_leave_the_stored_record_alone_and_changes_replace_it() -> None:
    node = load_fixture("nodes", "gke-1.json")
    name = node["metadata"]["name"]
    changed = heartbeat(node, 40)
    for condition in changed["status"]["conditions"]:
        if condition["type"] == "NetworkUnavailable":
            condition["reason"] = "NoRouteCreated"
    script = [
        {"type": "ADDED", "object": heartbeat(node, 2)},
        *({"type": "MODIFIED", "object": heartbeat(node, v)} for v in range(3, 30)),
        {"type": "MODIFIED", "object": changed},
    ]
    store = NodeStore()
    heard: list[tuple[NodeView | None, NodeView | None]] = []
    kept: list[NodeView | None] = []
    informer = Informer(
        kube=Source(script[:-1]),
        store=store,
        on_change=lambda old, new: heard.append((old, new)),
        on_relist=lambda reason: None,
        rng=random.Random(1),
        clock=lambda: asyncio.get_running_loop().time(),
    )
    task = asyncio.create_task(informer.run())
    await asyncio.sleep(1)
    kept.append(store.get(name))
    assert len(heard) == 1  # the ADDED only
    assert informer.resource_version == "29"  # every heartbeat moved the version on
    informer._handle(decode_event(orjson.dumps(script[-1])))
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert heard[0][1] is kept[0]  # the record stored at ADDED stayed through 27 heartbeats
    assert len(heard) == 2
    assert heard[1][1] is store.get(name)
    condition = store.get(name).network_unavailable  # type: ignore[union-attr]
    assert condition is not None
    assert condition.reason == "NoRouteCreated"


def test_the_store_version_counts_changes_and_no_heartbeat() -> None:
    """NodeStore.version goes up with a write that changes a Node, never with one that
    changes nothing (a kubelet heartbeat), a removal of a Node it never had, or a relist
    that finds the same Nodes."""
    store = NodeStore()
    a = NodeView(name="a", uid="u", pod_cidrs=("10.244.1.0/24",), addresses=())
    store.upsert(a)
    v = store.version
    store.upsert(NodeView(name="a", uid="u", pod_cidrs=("10.244.1.0/24",), addresses=()))
    store.remove("nobody")
    assert store.replace([a]) == []
    store.set_unknown([])
    assert store.version == v
    store.upsert(NodeView(name="a", uid="u", pod_cidrs=("10.244.2.0/24",), addresses=()))
    assert store.version == v + 1
    store.remove("a")
    assert store.version == v + 2
    spec_null = ImpossibleObjectError("node x: spec is null", name="x")
    assert store.mark_unknown(spec_null)
    assert not store.mark_unknown(ImpossibleObjectError("node x: spec is null", name="x"))
    assert store.version == v + 3, "the same reason again changes nothing"
    store.set_unknown([spec_null])
    assert store.version == v + 3
    store.upsert(NodeView(name="x", uid="u", pod_cidrs=(), addresses=()))  # readable now
    assert store.version == v + 4

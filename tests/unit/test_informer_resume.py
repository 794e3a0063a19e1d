"""The informer resumes a cut watch after the last event it applied, never before it."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from routectl.errors import KubeError
from routectl.kube import NodeListing
from routectl.kube.informer import Informer, NodeStore
from routectl.kube.informer import Informer, NodeStore
from routectl.kube import NodeEvent, NodeViews
from routectl.kube.decode import decode_event

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
        return NodeViews(nodes=[], skipped=[], resource_version="10")

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

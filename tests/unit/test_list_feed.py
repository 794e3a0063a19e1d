"""A list's changes reach the sync in one call: the informer hands them over at once, and
the feed notes each and asks the queue once, counting every request it stands for."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from routectl.kube import NodeEvent, NodeViews
from routectl.kube.informer import Informer, NodeChanges, NodeStore
from routectl.model import NodeAddress, NodeView
from routectl.process.wiring import Feed
from routectl.sync.changes import Changes
from routectl.sync.queue import CoalescingQueue, QueueState

pytestmark = pytest.mark.looptime


def node(name: str, *cidrs: str, address: str = "10.0.0.1") -> NodeView:
    return NodeView(
        name=name,
        uid=f"uid-{name}",
        pod_cidrs=cidrs,
        addresses=(NodeAddress(type="InternalIP", address=address),),
    )


class Source:
    """Lists ``listed``, then watches one ADDED event of ``added``."""

    def __init__(self, listed: list[NodeView], added: NodeView) -> None:
        self.listed = listed
        self.added = added

    async def list_node_views(self) -> NodeViews:
        return NodeViews(nodes=self.listed, skipped=[], impossible=[], resource_version="1")

    async def watch_node_events(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[NodeEvent]:
        yield NodeEvent(type="ADDED", name=self.added.name, resource_version="2", view=self.added)
        await asyncio.sleep(3600)


async def test_a_list_goes_to_on_changes_in_one_call_and_a_watch_event_to_on_change() -> None:
    listed = [node("a", "10.244.1.0/24"), node("b", "10.244.2.0/24")]
    added = node("c", "10.244.3.0/24")
    batches: list[NodeChanges] = []
    one: list[tuple[NodeView | None, NodeView | None]] = []
    informer = Informer(
        kube=Source(listed, added),
        store=NodeStore(),
        on_change=lambda old, new: one.append((old, new)),
        on_changes=batches.append,
        on_relist=lambda reason: None,
        rng=random.Random(1),
        clock=lambda: asyncio.get_running_loop().time(),
    )
    task = asyncio.create_task(informer.run())
    await asyncio.sleep(1)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert batches == [[(None, listed[0]), (None, listed[1])]]
    assert one == [(None, added)]


async def test_the_feed_notes_every_change_and_asks_once_for_all_that_need_a_sync() -> None:
    """Three new Nodes and a change no sync needs (same CIDRs and addresses): every change
    is noted, the queue hears one call that counts three requests."""
    changes = Changes()
    queue = CoalescingQueue(batch_window=0.5)
    feed = Feed(changes, queue, watch_mode=True)
    old = node("d", "10.244.4.0/24")
    changed = node("d", "10.244.4.0/24")
    await asyncio.sleep(7)
    feed.many(
        [
            (None, node("a", "10.244.1.0/24")),
            (None, node("b", "10.244.2.0/24")),
            (None, node("c")),
            (old, changed),
        ]
    )
    assert queue.state.requests == 3
    assert queue.state.requested_at == 7
    assert queue.state.triggers == {"node_change"}
    assert changes.waiting() == ["a", "b"]
    assert changes.claims["10.244.2.0/24"] == {"b"}
    assert changes.take().names == {"a", "b", "c", "d"}
    feed.one(changed, node("d", "10.244.4.0/24", address="10.0.0.2"))
    assert queue.state.requests == 4
    feed.one(None, None)  # nothing at all: no request
    assert queue.state.requests == 4


def test_one_request_counting_several_is_several_requests() -> None:
    """request(count=n) leaves the queue as n requests at the same time would."""
    many, once = QueueState(batch_window=1.0), QueueState(batch_window=1.0)
    for _ in range(5):
        many.request(now=3.0, trigger="node_change", settle=True)
    once.request(now=3.0, trigger="node_change", settle=True, count=5)
    assert once == many
    batch = once.claim(now=3.0)
    assert batch is not None
    assert batch.requests == 5

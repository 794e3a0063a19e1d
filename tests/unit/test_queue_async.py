"""CoalescingQueue waits on the loop clock: batching, min interval, close."""

from __future__ import annotations

import asyncio

import pytest

from routectl.sync.queue import CoalescingQueue

pytestmark = pytest.mark.looptime


async def test_a_lone_event_starts_at_once_and_a_burst_under_load_makes_one_sync() -> None:
    """The first request while idle is claimed at once; the burst that lands during that
    sync makes one more sync, one batch window after its first request."""
    q = CoalescingQueue(batch_window=2.0)
    loop = asyncio.get_running_loop()
    q.request()
    first = await q.claim()
    assert first is not None
    assert loop.time() == 0.0
    for _ in range(100):
        q.request()
        await asyncio.sleep(0.01)
    q.done()
    batch = await q.claim()
    assert batch is not None
    assert batch.requests == 100
    assert loop.time() == pytest.approx(2.0)


async def test_change_during_sync_is_not_lost_and_honours_min_interval() -> None:
    """A change that lands mid-sync makes one more sync, no sooner than min_interval."""
    q = CoalescingQueue(batch_window=0.0, min_interval=10.0)
    loop = asyncio.get_running_loop()
    q.request()
    assert await q.claim() is not None
    await asyncio.sleep(1)
    q.request()
    q.done()
    assert await q.claim() is not None
    assert loop.time() == pytest.approx(10.0)


async def test_close_wakes_a_waiting_claim() -> None:
    """close() makes a waiting claim return None."""
    q = CoalescingQueue(batch_window=0.0)
    waiter = asyncio.create_task(q.claim())
    await asyncio.sleep(5)
    q.close()
    assert await waiter is None

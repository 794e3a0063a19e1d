"""CoalescingQueue waits on the loop clock: batching, min interval, delayed requests, close."""

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


async def test_a_delayed_request_arrives_after_its_delay_with_what_it_asked() -> None:
    """request_after is client-go's AddAfter: nothing is due until the request arrives."""
    q = CoalescingQueue(batch_window=0.0)
    loop = asyncio.get_running_loop()
    q.request_after(30.0, key="later", trigger="periodic", fresh_listing=True)
    assert q.pending("later")
    batch = await q.claim()
    assert batch is not None
    assert loop.time() == pytest.approx(30.0)
    assert batch.fresh_listing
    assert batch.triggers == frozenset({"periodic"})
    assert not q.pending("later")


async def test_a_sync_in_between_does_not_take_a_delayed_request() -> None:
    """A sync claimed before the delayed request arrives leaves it pending: it still comes."""
    q = CoalescingQueue(batch_window=0.0)
    loop = asyncio.get_running_loop()
    q.request_after(30.0, key="later", fresh_listing=True)
    await asyncio.sleep(5)
    q.request()
    early = await q.claim()
    assert early is not None
    assert not early.fresh_listing
    q.done()
    late = await q.claim()
    assert late is not None
    assert late.fresh_listing
    assert loop.time() == pytest.approx(30.0)


async def test_one_delayed_request_per_key_replaced_kept_or_cancelled() -> None:
    """replace=True moves it, replace=False keeps the first, cancel drops it."""
    q = CoalescingQueue(batch_window=0.0)
    loop = asyncio.get_running_loop()
    q.request_after(30.0, key="wake")
    q.request_after(10.0, key="wake")  # replaced: now due at 10
    q.request_after(50.0, key="look", replace=False)
    q.request_after(5.0, key="look", replace=False)  # kept at 50
    assert await q.claim() is not None
    assert loop.time() == pytest.approx(10.0)
    q.done()
    q.request_after(1.0, key="wake")
    q.cancel("wake")
    assert await q.claim() is not None
    assert loop.time() == pytest.approx(50.0)


async def test_a_delayed_request_that_arrives_during_a_sync_makes_one_more() -> None:
    """Arriving while a sync runs, it is claimed when that sync is done."""
    q = CoalescingQueue(batch_window=0.0)
    loop = asyncio.get_running_loop()
    q.request()
    assert await q.claim() is not None
    q.request_after(2.0, key="later", fresh_listing=True)
    await asyncio.sleep(5)
    q.done()
    batch = await q.claim()
    assert batch is not None
    assert batch.fresh_listing
    assert loop.time() == pytest.approx(5.0)


async def test_close_drops_what_was_to_come() -> None:
    """A closed queue claims nothing, delayed requests included."""
    q = CoalescingQueue(batch_window=0.0)
    q.request_after(1.0, key="later")
    q.close()
    assert await q.claim() is None


async def test_a_settling_queue_waits_for_a_burst_to_pause() -> None:
    """Whole-table clouds: the sync waits until the requests pause (``settle_quiet``),
    so a burst is one sync, not one for its first request and one for the rest."""
    q = CoalescingQueue(batch_window=0.5, min_interval=10.0, settle_cap=10.0, settle_quiet=0.5)
    loop = asyncio.get_running_loop()
    for _ in range(40):
        q.request(settle=True)
        await asyncio.sleep(0.1)
    batch = await q.claim()
    assert batch is not None
    assert batch.requests == 40
    assert loop.time() == pytest.approx(4.0 + 0.4)  # the last request at 3.9, then 0.5 quiet


async def test_a_settling_queue_writes_a_steady_stream_at_the_cap() -> None:
    """Requests that never pause wait no longer than the cap after the first of them."""
    q = CoalescingQueue(batch_window=0.5, min_interval=10.0, settle_cap=10.0, settle_quiet=0.5)
    loop = asyncio.get_running_loop()
    claims: list[float] = []

    async def worker() -> None:
        while (batch := await q.claim()) is not None:
            claims.append(loop.time())
            assert batch.requests > 0
            q.done()

    task = asyncio.create_task(worker())
    for _ in range(250):  # a request every 0.1 s for 25 s
        q.request(settle=True)
        await asyncio.sleep(0.1)
    await asyncio.sleep(11)
    q.close()
    await task
    # each sync at the cap after the first request it takes (the one after the last claim)
    assert claims == [pytest.approx(t, abs=0.11) for t in (10.0, 20.0, 30.0)]


async def test_settling_is_only_for_a_settling_queue_and_settling_requests() -> None:
    """Per-route clouds (no cap) keep the leading edge, and so does a request that does not
    ask to settle (the service's first sync)."""
    loop = asyncio.get_running_loop()
    for queue, settle in (
        (CoalescingQueue(batch_window=0.5, min_interval=10.0), True),
        (
            CoalescingQueue(batch_window=0.5, min_interval=10.0, settle_cap=10.0, settle_quiet=0.5),
            False,
        ),
    ):
        started = loop.time()
        queue.request(settle=settle)
        assert await queue.claim() is not None
        assert loop.time() == started


async def test_settling_never_cuts_a_backoff_short() -> None:
    """A retry's wait holds whatever settling requests come meanwhile."""
    q = CoalescingQueue(batch_window=0.5, settle_cap=10.0, settle_quiet=0.5)
    loop = asyncio.get_running_loop()
    q.retry_after(30.0)
    await asyncio.sleep(1)
    q.request(settle=True)
    batch = await q.claim()
    assert batch is not None
    assert loop.time() == pytest.approx(30.0)

"""Limiter: routectl's one token bucket to wait on, for cloud and API requests alike."""

from __future__ import annotations

import asyncio

import pytest

from routectl.cloud.budget import Limiter

pytestmark = pytest.mark.looptime


async def _times(limiter: Limiter, count: int) -> list[float]:
    loop = asyncio.get_running_loop()
    times: list[float] = []

    async def one() -> None:
        await limiter.acquire()
        times.append(loop.time())

    await asyncio.gather(*(one() for _ in range(count)))
    return times


async def test_a_full_bucket_lets_the_burst_through_at_once_then_paces() -> None:
    """client-go's bucket starts full: ``burst`` at once, then one per 1/qps seconds."""
    start = asyncio.get_running_loop().time()
    times = [t - start for t in await _times(Limiter(qps=2.0, burst=3), 7)]
    assert times == pytest.approx([0, 0, 0, 0.5, 1.0, 1.5, 2.0])


async def test_an_empty_bucket_starts_as_if_burst_requests_had_just_been_made() -> None:
    """start_empty: the first token arrives 1/qps after the moment given."""
    start = asyncio.get_running_loop().time()
    limiter = Limiter(qps=4.0, burst=10)
    limiter.start_empty(at=start)
    times = [t - start for t in await _times(limiter, 3)]
    assert times == pytest.approx([0.25, 0.5, 0.75])


async def test_waiters_are_served_in_the_order_they_came() -> None:
    """First come, first served: no waiter is overtaken by a later one."""
    limiter = Limiter(qps=1.0, burst=1)
    order: list[int] = []

    async def one(number: int) -> None:
        await limiter.acquire()
        order.append(number)

    async with asyncio.TaskGroup() as group:
        for number in range(6):
            group.create_task(one(number))
            await asyncio.sleep(0)
    assert order == list(range(6))


async def test_a_cancelled_waiter_takes_no_token() -> None:
    """A waiter cancelled while it waits leaves its token to the next one."""
    limiter = Limiter(qps=1.0, burst=1)
    await limiter.acquire()  # the only token
    loop = asyncio.get_running_loop()
    waiter = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0.5)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    start = loop.time()
    await limiter.acquire()
    assert loop.time() - start == pytest.approx(0.5)  # the token due at 1.0 s is still there


def test_a_bucket_needs_a_rate_and_a_token() -> None:
    """qps > 0 and burst >= 1, or a ValueError at construction."""
    for qps, burst in ((0.0, 1), (1.0, 0)):
        with pytest.raises(ValueError, match="qps > 0 and burst >= 1"):
            Limiter(qps=qps, burst=burst)

"""RateLimitedProvider: the bucket, retries, retry-after, timeouts and success rules.

Time is the event loop's (looptime); budgets are checked on the simulated cloud's call log.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    ProviderTimeoutError,
)
from routectl.gate import CallPolicy, RateLimitedProvider
from routectl.model import Route
from routectl.testing import CloudSettings, FakeCloud, Fault

pytestmark = pytest.mark.looptime


def route(i: int) -> Route:
    return Route(target_node=f"n{i}", destination_cidr=f"10.244.{i}.0/24")


def gate(cloud: FakeCloud, **policy) -> RateLimitedProvider:
    defaults = {"qps": 2.0, "burst": 5, "backoff_base": 1.0, "backoff_cap": 8.0}
    return RateLimitedProvider(
        cloud.provider("c"), policy=CallPolicy(**(defaults | policy)), rng=random.Random(1)
    )


def max_calls_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    return max(
        (sum(1 for t in times[i:] if t < start + window) for i, start in enumerate(times)),
        default=0,
    )


async def test_bucket_is_never_exceeded() -> None:
    """50 concurrent creates at 2 req/s, burst 5, get no throttled answer from a 2 req/s cloud."""
    cloud = FakeCloud(CloudSettings(qps=2.0, burst=5, write_latency=1.0))
    provider = gate(cloud)
    await asyncio.gather(*(provider.create_route(route(i), name_hint="h") for i in range(50)))
    assert cloud.count("create", "ok") == 50
    assert cloud.count(outcome="throttled") == 0
    times = [c.time for c in cloud.calls]
    assert max_calls_in_window(times, 1.0) <= 5 + 2
    assert max_calls_in_window(times, 10.0) <= 5 + 20
    assert asyncio.get_running_loop().time() >= (50 - 5) / 2.0


async def test_token_wait_is_counted() -> None:
    """Time spent waiting for tokens is reported; a new gate has no burst credit yet."""
    provider = gate(FakeCloud(), qps=1.0, burst=1)
    await asyncio.gather(*(provider.create_route(route(i), name_hint="h") for i in range(3)))
    assert provider.statistics().token_wait_seconds == pytest.approx(1.0 + 2.0 + 3.0, abs=0.01)


async def test_a_new_gate_adds_no_burst_to_a_spent_budget() -> None:
    """A replica taking over right after another spent the cloud's burst is not throttled."""
    cloud = FakeCloud(CloudSettings(qps=1.0, burst=5))
    first = gate(cloud, qps=1.0, burst=5)
    await asyncio.gather(*(first.create_route(route(i), name_hint="h") for i in range(5)))
    second = gate(cloud, qps=1.0, burst=5)
    await asyncio.gather(*(second.create_route(route(i), name_hint="h") for i in range(5, 15)))
    assert cloud.count(outcome="throttled") == 0


async def test_transient_errors_are_retried() -> None:
    """Two transient failures are retried and the third attempt succeeds."""
    cloud = FakeCloud()
    cloud.fail_next("create", Fault(error=ProviderError("503")), times=2)
    provider = gate(cloud)
    await provider.create_route(route(1), name_hint="h")
    assert [c.outcome for c in cloud.calls] == ["error", "error", "ok"]
    assert provider.statistics().count("create", "error") == 2
    assert provider.statistics().count("create", "ok") == 1


async def test_retry_after_is_honoured_for_every_call() -> None:
    """A throttled answer with retry-after holds back the retry and every other call."""
    cloud = FakeCloud()
    cloud.fail_next("create", Fault(error=ProviderThrottledError("slow down", retry_after=7.0)))
    provider = gate(cloud, qps=100.0, burst=100)
    first = asyncio.create_task(provider.create_route(route(1), name_hint="h"))
    await asyncio.sleep(0.1)
    await provider.list_routes()
    await first
    throttled_at = cloud.calls[0].time
    later = [c.time for c in cloud.calls[1:]]
    assert all(t >= throttled_at + 7.0 for t in later), cloud.calls


async def test_terminal_errors_are_not_retried() -> None:
    """A terminal error is raised after one attempt."""
    cloud = FakeCloud()
    cloud.fail_next("create", Fault(error=ProviderTerminalError("quota")))
    with pytest.raises(ProviderTerminalError):
        await gate(cloud).create_route(route(1), name_hint="h")
    assert cloud.count("create") == 1


async def test_gives_up_after_max_attempts() -> None:
    """A persistent transient error reaches the caller after max_attempts attempts."""
    cloud = FakeCloud()
    cloud.fail_next("delete", Fault(error=ProviderError("503")), times=10)
    with pytest.raises(ProviderError):
        await gate(cloud, max_attempts=3).delete_route(route(1))
    assert cloud.count("delete") == 3


async def test_already_exists_and_not_found_count_as_success() -> None:
    """Creating an existing route and deleting a missing one both succeed."""
    cloud = FakeCloud()
    provider = gate(cloud)
    await provider.create_route(route(1), name_hint="h")
    await provider.create_route(route(1), name_hint="h")
    await provider.delete_route(route(2))
    stats = provider.statistics()
    assert stats.count("create", "already_exists") == 1
    assert stats.count("delete", "not_found") == 1
    assert cloud.count() == 3


async def test_hung_call_times_out_and_is_retried() -> None:
    """A call that never answers times out and the retry succeeds."""
    cloud = FakeCloud()
    cloud.fail_next("list", Fault(hang=True))
    provider = gate(cloud, timeout=5.0)
    assert list(await provider.list_routes()) == []
    assert provider.statistics().count("list", "timeout") == 1
    assert asyncio.get_running_loop().time() >= 5.0


async def test_call_that_succeeded_but_timed_out_is_idempotent() -> None:
    """A create that took effect but never answered is retried and finds the route there."""
    cloud = FakeCloud()
    cloud.fail_next("create", Fault(hang_after_success=True))
    provider = gate(cloud, timeout=5.0)
    await provider.create_route(route(1), name_hint="h")
    assert len(cloud.routes("c")) == 1
    assert provider.statistics().count("create", "already_exists") == 1


async def test_timeouts_exhausted_raise_provider_timeout() -> None:
    """When every attempt hangs, the caller gets ProviderTimeoutError."""
    cloud = FakeCloud()
    cloud.fail_next("list", Fault(hang=True), times=5)
    with pytest.raises(ProviderTimeoutError):
        await gate(cloud, timeout=2.0, max_attempts=2).list_routes()


async def test_concurrency_is_bounded() -> None:
    """No more calls are in flight than the concurrency limit."""
    cloud = FakeCloud(CloudSettings(write_latency=10.0))
    provider = gate(cloud, qps=1000.0, burst=1000, concurrency=3)
    tasks = [asyncio.create_task(provider.create_route(route(i), name_hint="h")) for i in range(9)]
    await asyncio.sleep(5.0)
    assert cloud.in_flight == 3
    await asyncio.gather(*tasks)
    assert cloud.max_in_flight == 3
    assert len(cloud.routes("c")) == 9


async def test_invalid_policy_is_refused() -> None:
    """A zero rate or concurrency is a configuration error, not a hang."""
    with pytest.raises(ValueError, match="qps"):
        RateLimitedProvider(
            FakeCloud().provider("c"), policy=CallPolicy(qps=0), rng=random.Random(1)
        )


@pytest.mark.timeout(30)
async def test_a_long_queue_drains_on_a_virtual_clock() -> None:
    """100 calls through a 1 req/s bucket of 10 finish on a clock that only moves when idle.

    aiolimiter alone can spin forever there: a float residue in its level asks for a wait of
    femto-seconds, which a virtual (or coarse) clock never lets pass.
    """
    cloud = FakeCloud(CloudSettings(qps=1.0, burst=10, write_latency=1.0))
    provider = gate(cloud, qps=1.0, burst=10)
    await asyncio.gather(*(provider.create_route(route(i), name_hint="h") for i in range(100)))
    assert len(cloud.routes("c")) == 100
    assert cloud.count(outcome="throttled") == 0

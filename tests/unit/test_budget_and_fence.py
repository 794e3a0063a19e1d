"""The request budget (bucket and capped pause) and the fence (no write past the lease)."""

from __future__ import annotations

import asyncio
import datetime
import logging
import math

import pytest

from routectl.cloud.budget import Budget
from routectl.cloud.fence import MARGIN, MIN_WRITE, Fence
from routectl.errors import WriteFencedError
from routectl.observe.metrics import Metrics

pytestmark = pytest.mark.looptime
EPOCH = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def budget(**overrides: float) -> tuple[Budget, Metrics]:
    metrics = Metrics.create()
    values = {"qps": 2.0, "burst": 5, "max_pause": 120.0} | overrides
    made = Budget(
        qps=values["qps"],
        burst=int(values["burst"]),
        max_pause=values["max_pause"],
        wall_clock=lambda: EPOCH,
        observer=metrics,
    )
    return made, metrics


async def test_requests_never_exceed_burst_plus_rate_times_window() -> None:
    """Any window of W seconds holds at most burst + qps x W requests, the first one too."""
    made, metrics = budget(qps=2.0, burst=5)
    loop = asyncio.get_running_loop()
    times: list[float] = []

    async def request() -> None:
        await made.spend("poll")
        times.append(loop.time())

    await asyncio.gather(*(request() for _ in range(60)))
    for start in times:
        for window in (0.5, 1.0, 10.0):
            inside = sum(1 for t in times if start <= t < start + window)
            assert inside <= 5 + 2 * window + 1e-9
    assert made.requests["poll"] == 60
    assert metrics.cloud_requests.labels(operation="poll")._value.get() == 60


async def test_a_long_retry_after_is_capped_said_once_and_shown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An hour's hint pauses every request for the cap only; one WARNING; a gauge says until."""
    made, metrics = budget(max_pause=120.0)
    with caplog.at_level(logging.WARNING, logger="routectl.cloud"):
        assert made.pause(3600.0, what="create: throttled") == 120.0
        assert made.pause(3600.0, what="create: throttled") == 120.0  # no news: no new line
    (record,) = caplog.records
    assert "asked routectl to wait 1h0m0s" in record.getMessage()
    assert "holding every cloud call back for 2m0s (--cloud-retry-after-cap)" in record.getMessage()
    assert metrics.cloud_paused_until._value.get() == EPOCH.timestamp() + 120.0
    loop = asyncio.get_running_loop()
    started = loop.time()
    await made.spend()
    assert loop.time() - started == pytest.approx(120.0, abs=0.6)


async def test_an_absurd_retry_after_is_said_as_a_number(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Retry-After: 1e30 is said as 1e+30s, not as 277777777777777803006914950h57m11.8s."""
    made, _ = budget(max_pause=120.0)
    with caplog.at_level(logging.WARNING, logger="routectl.cloud"):
        made.pause(1e30, what="list: throttled")
    (record,) = caplog.records
    assert "asked routectl to wait 1e+30s before its next call" in record.getMessage()


async def test_short_pauses_call_after_call_are_one_warning_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A cloud that asks for a second on every call (or a plugin's default for a hint it
    could not use, such as -1e30) is not one WARNING per call: once a minute, the rest at
    DEBUG; a long pause is said whenever it is news."""
    made, _ = budget(max_pause=120.0)
    await asyncio.sleep(5)  # not at the loop's time zero, where no pause is news
    with caplog.at_level(logging.DEBUG, logger="routectl.cloud"):
        for _ in range(20):  # 20 calls over 50 s, each throttled, each asking for a second
            assert made.pause(1.0, what="list: throttled") == 1.0
            await asyncio.sleep(2.5)
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert len([r for r in caplog.records if r.levelno == logging.DEBUG]) == 19
        made.pause(30.0, what="list: throttled")  # a long pause is news at once
        assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2
        await asyncio.sleep(90)
        made.pause(1.0, what="list: throttled")  # a minute later: said again
        assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 3


@pytest.mark.parametrize("hint", [None, -5.0, 0.0, math.nan])
async def test_hints_that_are_not_waits_pause_nothing(hint: float | None) -> None:
    """A missing, negative, zero or NaN retry-after holds nothing back."""
    made, _ = budget()
    assert made.pause(hint, what="x") == 0.0
    assert made.paused_for() == 0.0


async def test_an_infinite_hint_is_cut_to_the_cap() -> None:
    """A date years ahead (or infinity) is honoured for the cap, not for years."""
    made, _ = budget(max_pause=30.0)
    assert made.pause(math.inf, what="x") == 30.0


async def test_an_open_fence_admits_everything() -> None:
    """Without leader election the fence never refuses and never cuts a timeout."""
    fence = Fence(open_=True)
    assert fence.admit(timeout=30.0, what="create") == 30.0


async def test_a_fence_cuts_writes_to_the_lease_and_refuses_near_its_end() -> None:
    """A write gets at most what the lease still covers; under MIN_WRITE it is not started."""
    loop = asyncio.get_running_loop()
    fence = Fence(open_=False)
    with pytest.raises(WriteFencedError, match="create: not started"):
        fence.admit(timeout=30.0, what="create")
    fence.grant(loop.time() + 15.0)
    assert fence.admit(timeout=30.0, what="create") == pytest.approx(15.0 - MARGIN)
    assert fence.admit(timeout=5.0, what="create") == 5.0
    await asyncio.sleep(15.0 - MARGIN - MIN_WRITE + 0.01)
    with pytest.raises(WriteFencedError):
        fence.admit(timeout=30.0, what="create")
    fence.grant(loop.time() + 15.0)
    fence.revoke()
    with pytest.raises(WriteFencedError):
        fence.admit(timeout=30.0, what="create")


async def spend_times(made: Budget, count: int) -> list[float]:
    loop = asyncio.get_running_loop()
    times: list[float] = []
    for _ in range(count):
        await made.spend("create")
        times.append(loop.time())
    return times


async def test_without_news_of_a_predecessor_the_bucket_starts_drained() -> None:
    made, _ = budget(qps=2.0, burst=5)
    start = asyncio.get_running_loop().time()
    times = await spend_times(made, 3)
    assert [t - start for t in times] == pytest.approx([0.5, 1.0, 1.5])


async def test_with_no_predecessor_the_burst_is_there_at_once() -> None:
    """The first leader of a Lease (or after a long quiet) has its whole burst."""
    made, _ = budget(qps=2.0, burst=5)
    made.start_quiet_since(None)
    start = asyncio.get_running_loop().time()
    times = await spend_times(made, 7)
    assert [t - start for t in times] == pytest.approx([0, 0, 0, 0, 0, 0.5, 1.0])


async def test_a_recent_predecessor_leaves_only_what_has_refilled_since() -> None:
    """Quiet for 1 s at qps 2: two tokens are back, the rest refill at qps."""
    made, _ = budget(qps=2.0, burst=5)
    now = asyncio.get_running_loop().time()
    made.start_quiet_since(now - 1.0)
    made.start_quiet_since(None)  # only the first word counts
    times = await spend_times(made, 3)
    assert [t - now for t in times] == pytest.approx([0, 0, 0.5])


async def test_a_predecessor_that_may_spend_until_later_leaves_a_drained_bucket() -> None:
    made, _ = budget(qps=2.0, burst=5)
    now = asyncio.get_running_loop().time()
    made.start_quiet_since(now + 30.0)
    times = await spend_times(made, 1)
    assert times[0] - now == pytest.approx(0.5)


@pytest.mark.parametrize("gap", [0.0, 0.7, 1.3, 2.5, 10.0])
async def test_a_leader_and_its_successor_together_stay_within_the_budget(gap: float) -> None:
    """The predecessor spends its burst and more, stops; the successor starts ``gap``
    seconds later with the predecessor's stop as its quiet moment: any window of the two
    together holds at most burst + qps x W requests, so the cloud never throttles."""
    loop = asyncio.get_running_loop()
    before, _ = budget(qps=2.0, burst=5)
    before.start_quiet_since(None)
    first = await spend_times(before, 8)
    stopped = loop.time()
    await asyncio.sleep(gap)
    after, _ = budget(qps=2.0, burst=5)
    after.start_quiet_since(stopped)
    times = first + await spend_times(after, 8)
    for start in times:
        for window in (0.0, 0.5, 1.0, 3.0, 10.0):
            inside = sum(1 for t in times if start <= t <= start + window + 1e-9)
            assert inside <= 5 + 2 * window + 1e-6, (start, window, times)

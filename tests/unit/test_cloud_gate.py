"""CloudGate: the bucket, retries, retry-after, timeouts and success rules.

Time is the event loop's (looptime); budgets are checked on the simulated cloud's call log.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Collection
from typing import Any, cast

import pytest

from routectl.cloud.budget import Budget
from routectl.cloud.fence import Fence
from routectl.cloud.gate import CloudGate
from routectl.cloud.policy import CallPolicy
from routectl.config.syntax import format_duration
from routectl.errors import (
    CloudPausedError,
    CloudWriteFencedError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    ProviderTimeoutError,
    RouteAlreadyExistsError,
    RouteHeldError,
)
from routectl.model import Route
from routectl.observe.logctx import v
from routectl.testing import CloudSettings, FakeCloud, FakeProvider, Fault
from tests.fakes import EPOCH_CLOCK, gated

pytestmark = pytest.mark.looptime


def route(i: int) -> Route:
    return Route(target_node=f"n{i}", destination_cidr=f"10.244.{i}.0/24")


def gate(cloud: FakeCloud, **policy) -> CloudGate:
    defaults = {"qps": 2.0, "burst": 5, "backoff_base": 1.0, "backoff_cap": 8.0}
    return gated(FakeProvider.over(cloud, "c"), CallPolicy(**(defaults | policy)))


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
    """Creating an existing route (the same Node's) and deleting a missing one succeed."""
    cloud = FakeCloud()
    provider = gate(cloud)
    await provider.create_route(route(1), name_hint="h")
    await provider.create_route(route(1), name_hint="h")
    await provider.delete_route(route(2))
    stats = provider.statistics()
    assert stats.count("create", "already_exists") == 1
    assert stats.count("delete", "not_found") == 1
    assert cloud.count() == 3


async def test_already_exists_held_by_another_node_fails_naming_it() -> None:
    """A create whose destination another Node's route holds is not done: RouteHeldError."""
    cloud = FakeCloud()
    cloud.add_route("c", Route(target_node="n9", destination_cidr="10.244.1.0/24", name="r9"))
    provider = gate(cloud)
    with pytest.raises(RouteHeldError, match="held by the route r9 to node n9") as caught:
        await provider.create_route(route(1), name_hint="h")
    assert caught.value.holder is not None
    assert caught.value.holder.target_node == "n9"
    assert cloud.count("create") == 1, "a held destination is not retried within the call"


async def test_already_exists_held_by_a_blackhole_fails() -> None:
    """The same Node's name on a blackhole route is not the route asked for."""
    cloud = FakeCloud()
    cloud.add_route("c", route(1))
    cloud.blackhole_node("c", "n1")
    with pytest.raises(RouteHeldError, match="blackhole"):
        await gate(cloud).create_route(route(1), name_hint="h")


class SaysExistsWithoutHolder:
    """A plugin that answers "already exists" without saying who holds the destination."""

    def __init__(self, listed: list[Route]) -> None:
        self.listed = listed
        self.lists = 0

    async def list_routes(self) -> Collection[Route]:
        self.lists += 1
        await asyncio.sleep(1.0)
        return list(self.listed)

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        raise RouteAlreadyExistsError(f"{route.destination_cidr} exists")

    async def delete_route(self, route: Route) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


async def test_already_exists_without_holder_is_decided_by_a_listing() -> None:
    """Without a holder, one listing (shared by concurrent creates) decides: ours and right
    is done, a destination listed for another Node or not listed at all is not."""
    plugin = SaysExistsWithoutHolder(
        [route(1), Route(target_node="n9", destination_cidr="10.244.2.0/24", name="r9")]
    )
    provider = gated(plugin, CallPolicy(qps=100.0, burst=100))
    results = await asyncio.gather(
        provider.create_route(route(1), name_hint="h"),
        provider.create_route(route(2), name_hint="h"),
        provider.create_route(route(3), name_hint="h"),
        return_exceptions=True,
    )
    assert results[0] is None
    assert isinstance(results[1], RouteHeldError)
    assert "node n9" in str(results[1])
    assert isinstance(results[2], RouteHeldError)
    assert "does not list as its own" in str(results[2])
    assert plugin.lists == 1


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
    with pytest.raises(ProviderTimeoutError) as caught:
        await gate(cloud, timeout=2.0, max_attempts=2).list_routes()
    waited = asyncio.get_running_loop().time()
    assert str(caught.value).startswith("list did not answer within 2s (2 attempts over ")
    assert f"over {format_duration(waited)})" in str(caught.value), "the time really waited"


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
        gated(FakeProvider.over(FakeCloud(), "c"), CallPolicy(qps=0))
    with pytest.raises(ValueError, match="concurrency"):
        gated(FakeProvider.over(FakeCloud(), "c"), CallPolicy(concurrency=0))


@pytest.mark.timeout(30)
async def test_a_long_queue_drains_on_a_virtual_clock() -> None:
    """100 calls through a 1 req/s bucket of 10 finish on a clock that only moves when idle.

    A bucket that asks for a wait of femto-seconds (a float residue) would spin forever
    there: a virtual (or coarse) clock never lets such a wait pass.
    """
    cloud = FakeCloud(CloudSettings(qps=1.0, burst=10, write_latency=1.0))
    provider = gate(cloud, qps=1.0, burst=10)
    await asyncio.gather(*(provider.create_route(route(i), name_hint="h") for i in range(100)))
    assert len(cloud.routes("c")) == 100
    assert cloud.count(outcome="throttled") == 0


class Surprising(FakeProvider):
    """A plugin whose creates fail outside routectl's error tree."""

    def __init__(self, cloud: FakeCloud, error: Exception) -> None:
        super().__init__(cluster_name="c", options={}, cloud=cloud)
        self.error = error

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Raise the surprise."""
        raise self.error


@pytest.mark.parametrize(
    "surprise", [KeyError("routes"), ValueError("bad json"), ConnectionResetError(104, "reset")]
)
async def test_a_plugin_surprise_is_a_transient_error_logged_once(
    surprise: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    """Anything a plugin raises outside the tree leaves the gate as a ProviderError."""
    policy = CallPolicy(max_attempts=2, backoff_base=1.0, backoff_cap=8.0)
    provider = gated(Surprising(FakeCloud(), surprise), policy)
    with caplog.at_level(v(1), logger="routectl"):
        for _ in range(2):
            with pytest.raises(ProviderError, match="unexpected failure in the provider"):
                await provider.create_route(route(1), name_hint="h")
    default = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert len(default) == 1, "one line at the default verbosity, however often it fails"
    assert not default[0].exc_info, "no traceback at the default verbosity"
    assert type(surprise).__name__ in default[0].getMessage()
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1, "the traceback once, at -v=1"
    assert tracebacks[0].levelno == v(1)
    assert provider.statistics().count("create", "error") == 4


async def test_a_long_retry_after_fails_the_call_at_once_and_pauses_every_call() -> None:
    """Retry-After: 3600 is cut to the cap; the call fails now instead of hanging for it."""
    cloud = FakeCloud()
    cloud.fail_next("create", Fault(error=ProviderThrottledError("slow down", retry_after=3600)))
    provider = gate(cloud)  # backoff cap 8 s, retry-after cap 120 s
    loop = asyncio.get_running_loop()
    with pytest.raises(ProviderThrottledError) as raised:
        await provider.create_route(route(1), name_hint="h")
    assert raised.value.retry_after == 120.0
    assert loop.time() < 1.0  # failed at once, visibly
    started = loop.time()
    await provider.create_route(route(2), name_hint="h")
    assert loop.time() - started >= 119.0  # every call waited out the (capped) pause


async def test_a_write_the_fence_refuses_is_never_sent() -> None:
    """A closed fence stops creates and deletes before the cloud sees them; lists still go."""
    cloud = FakeCloud()
    provider = gated(FakeProvider.over(cloud, "c"), CallPolicy(), fence=Fence(open_=False))
    with pytest.raises(CloudWriteFencedError):
        await provider.create_route(route(1), name_hint="h")
    with pytest.raises(CloudWriteFencedError):
        await provider.delete_route(route(1))
    await provider.list_routes()
    assert [c.operation for c in cloud.calls] == ["list"]
    assert provider.statistics().count("create", "fenced") == 1


async def test_a_write_never_outlives_the_lease() -> None:
    """A write that hangs is cut at the lease's end, not at the (longer) call timeout."""
    cloud = FakeCloud()
    cloud.fail_next("create", Fault(hang=True))
    fence = Fence(open_=False)
    loop = asyncio.get_running_loop()
    fence.grant(loop.time() + 10.0)
    provider = gated(
        FakeProvider.over(cloud, "c"), CallPolicy(timeout=30.0, max_attempts=1), fence=fence
    )
    with pytest.raises(ProviderTimeoutError):
        await provider.create_route(route(1), name_hint="h")
    assert loop.time() <= 10.0


async def test_a_plugin_that_paces_itself_takes_the_tokens() -> None:
    """With the budget handed to the plugin, the gate spends no token of its own."""
    budget = Budget(qps=1.0, burst=1, max_pause=60.0, wall_clock=EPOCH_CLOCK)
    provider = gated(
        FakeProvider.over(FakeCloud(), "c"), CallPolicy(qps=1.0, burst=1), budget=budget
    )
    await provider.create_route(route(1), name_hint="h")
    assert budget.requests == {}


class Garbled(FakeProvider):
    """A plugin whose listing carries entries of the wrong shape (typed as a plugin author
    might get them wrong), or is not a collection at all."""

    answer: Any = ()

    async def list_routes(self) -> Collection[Route]:
        return cast("Collection[Route]", self.answer)


class Observed:
    """A CallObserver that remembers what it was told."""

    def __init__(self) -> None:
        self.malformed = 0

    def attempt(self, *, operation: str, result: str, seconds: float) -> None:
        """Ignore attempts."""

    def malformed_route(self) -> None:
        self.malformed += 1


async def test_listed_entries_of_the_wrong_shape_are_left_out_and_told_once(caplog) -> None:
    good = Route(target_node="n1", destination_cidr="10.244.1.0/24", name="r1")
    bad: list[Any] = [
        Route(target_node="gw", destination_cidr=None, name="null"),  # type: ignore[arg-type]
        Route(target_node=None, destination_cidr="10.244.9.0/24", name="x"),  # type: ignore[arg-type]
        Route(target_node="n1", destination_cidr="10.244.2.0/24", blackhole="no"),  # type: ignore[arg-type]
        Route(target_node="n1", destination_cidr="10.244.3.0/24", target_node_addresses=["a"]),  # type: ignore[arg-type]
        {"destination": "10.244.4.0/24"},
    ]
    plugin = Garbled(cluster_name="c", options={}, cloud=FakeCloud())
    plugin.answer = [good, *bad]
    observer = Observed()
    gate = CloudGate(
        plugin,
        policy=CallPolicy(),
        rng=random.Random(1),
        budget=Budget(qps=10.0, burst=10, max_pause=120.0, wall_clock=EPOCH_CLOCK),
        fence=Fence(open_=True),
        observer=observer,
    )
    with caplog.at_level(logging.WARNING, logger="routectl.cloud"):
        assert list(await gate.list_routes()) == [good]
        assert list(await gate.list_routes()) == [good]
    told = [r.getMessage() for r in caplog.records if "MalformedRoute" in r.getMessage()]
    assert len(told) == len(bad)
    assert observer.malformed == 2 * len(bad)


async def test_a_listing_that_is_not_a_collection_is_a_transient_error() -> None:
    plugin = Garbled(cluster_name="c", options={}, cloud=FakeCloud())
    plugin.answer = None
    gate = gated(plugin, CallPolicy(max_attempts=1))
    with pytest.raises(ProviderError, match="unexpected failure in the provider: TypeError"):
        await gate.list_routes()


async def test_a_write_cut_off_without_an_answer_leaves_the_lease_in_doubt() -> None:
    """A create cancelled mid-call, or timed out, may still be carried out by the cloud: the
    fence says so for a lease's length (the elector then lets the Lease expire); a listing
    cut off, or a write that answered, leaves no doubt."""
    cloud = FakeCloud(CloudSettings(write_latency=10.0, list_latency=10.0))
    fence = Fence(open_=True)
    provider = gated(FakeProvider.over(cloud, "c"), CallPolicy(timeout=60.0), fence=fence)
    listing = asyncio.create_task(provider.list_routes())
    await asyncio.sleep(1.0)
    listing.cancel()
    await asyncio.gather(listing, return_exceptions=True)
    await provider.create_route(route(1), name_hint="h")
    assert not fence.in_doubt(within=15.0), "reads and answered writes leave no doubt"
    create = asyncio.create_task(provider.create_route(route(2), name_hint="h"))
    await asyncio.sleep(1.0)
    create.cancel()
    await asyncio.gather(create, return_exceptions=True)
    assert fence.in_doubt(within=15.0)
    await asyncio.sleep(16.0)
    assert not fence.in_doubt(within=15.0), "the doubt lasts a lease's length"
    cloud.fail_next("delete", Fault(hang=True))
    with pytest.raises(ProviderTimeoutError):
        await gated(
            FakeProvider.over(cloud, "c"), CallPolicy(timeout=5.0, max_attempts=1), fence=fence
        ).delete_route(route(1))
    assert fence.in_doubt(within=15.0), "a write that timed out is in doubt too"


@pytest.mark.parametrize(
    ("asked", "said"),
    [(math.inf, "wait forever; calls wait 2m0s"), (3.43587e8, "wait 95440h50m0s; calls wait 2m0s")],
)
async def test_a_huge_retry_after_is_said_in_words(asked: float, said: str) -> None:
    """Retry-After values print as durations, never as 'infs' or '3.43587e+08s'."""
    cloud = FakeCloud()
    cloud.fail_next("create", Fault(error=ProviderThrottledError("slow down", retry_after=asked)))
    with pytest.raises(CloudPausedError) as caught:
        await gate(cloud).create_route(route(1), name_hint="h")
    assert said in str(caught.value)
    assert "inf" not in str(caught.value)
    assert "e+" not in str(caught.value)


def paced(cloud: FakeCloud, budget: Budget, *, fence: Fence | None = None, **policy) -> CloudGate:
    """A gate over a plugin that spends ``budget`` on each of its own requests."""
    provider = FakeProvider(cluster_name="c", options={}, cloud=cloud, budget=budget)
    return gated(provider, CallPolicy(**policy), budget=budget, fence=fence)


async def test_the_call_timeout_bounds_the_cloud_not_the_wait_for_the_budget() -> None:
    """60 creates at once behind a bucket of one request a second: the last waits a minute
    for its token, twice the call timeout, and none of them times out."""
    cloud = FakeCloud(CloudSettings(write_latency=1.0))
    budget = Budget(qps=1.0, burst=1, max_pause=60.0, wall_clock=EPOCH_CLOCK)
    provider = paced(cloud, budget, timeout=30.0, max_attempts=1)
    loop = asyncio.get_running_loop()
    await asyncio.gather(*(provider.create_route(route(i), name_hint="h") for i in range(60)))
    assert provider.statistics().count("create", "timeout") == 0
    assert len(cloud.routes("c")) == 60
    assert loop.time() >= 59.0


async def test_the_call_timeout_still_bounds_the_cloud_after_a_wait_for_the_budget() -> None:
    """A write that hangs after waiting 20 s for its token times out 10 s later."""
    cloud = FakeCloud()
    cloud.fail_next("create", Fault(hang=True))
    budget = Budget(qps=0.05, burst=1, max_pause=60.0, wall_clock=EPOCH_CLOCK)  # drained
    provider = paced(cloud, budget, timeout=10.0, max_attempts=1)
    loop = asyncio.get_running_loop()
    with pytest.raises(ProviderTimeoutError):
        await provider.create_route(route(1), name_hint="h")
    assert loop.time() == pytest.approx(30.0)


async def test_a_write_that_waited_for_the_budget_asks_the_fence_again() -> None:
    """The lease lost while a write waits for its token: the write is never sent."""
    cloud = FakeCloud()
    budget = Budget(qps=0.05, burst=1, max_pause=60.0, wall_clock=EPOCH_CLOCK)  # token at 20 s
    fence = Fence(open_=False)
    loop = asyncio.get_running_loop()
    fence.grant(loop.time() + 15.0)
    provider = paced(cloud, budget, fence=fence, timeout=10.0, max_attempts=1)
    creating = asyncio.create_task(provider.create_route(route(1), name_hint="h"))
    await asyncio.sleep(5.0)
    fence.revoke()
    with pytest.raises(CloudWriteFencedError):
        await creating
    assert [c.operation for c in cloud.calls] == []
    assert provider.statistics().count("create", "fenced") == 1


async def test_a_write_that_waited_for_the_budget_never_outlives_the_lease() -> None:
    """A lease renewed while the write waits lets it go; a hang is cut at the lease's end."""
    cloud = FakeCloud()
    cloud.fail_next("create", Fault(hang=True))
    budget = Budget(qps=0.05, burst=1, max_pause=60.0, wall_clock=EPOCH_CLOCK)  # token at 20 s
    fence = Fence(open_=False)
    loop = asyncio.get_running_loop()
    fence.grant(loop.time() + 15.0)
    provider = paced(cloud, budget, fence=fence, timeout=30.0, max_attempts=1)
    creating = asyncio.create_task(provider.create_route(route(1), name_hint="h"))
    await asyncio.sleep(5.0)
    fence.grant(loop.time() + 20.0)  # renewed: valid until 25 s
    with pytest.raises(ProviderTimeoutError):
        await creating
    assert [c.operation for c in cloud.calls] == ["create"]
    assert 20.0 <= loop.time() <= 25.0


class Lingering(FakeProvider):
    """A plugin whose create starts a task that spends the budget after the call is over
    (a shared look-up, a prefetch): it inherits the call's context."""

    later: asyncio.Task[None] | None = None

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        assert self.budget is not None
        self.later = asyncio.create_task(self.budget.spend("late"))
        await super().create_route(route, name_hint=name_hint)


async def test_a_task_that_outlives_its_call_spends_as_any_other() -> None:
    """A request of a task the call started, made after the call ended, just waits."""
    budget = Budget(qps=1.0, burst=1, max_pause=60.0, wall_clock=EPOCH_CLOCK)
    plugin = Lingering(cluster_name="c", options={}, cloud=FakeCloud(), budget=budget)
    provider = gated(plugin, CallPolicy(timeout=30.0, max_attempts=1), budget=budget)
    await provider.create_route(route(1), name_hint="h")
    assert plugin.later is not None
    await plugin.later
    assert budget.requests["late"] == 1

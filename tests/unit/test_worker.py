"""The worker: one sync at a time, failures requeued by type, bugs not swallowed."""

from __future__ import annotations

import asyncio
import random
from ipaddress import ip_network
from typing import Any

import pytest

from routectl.config import Settings
from routectl.errors import (
    KubeError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RoutectlError,
    SyncFailedError,
)
from routectl.observe.metrics import Metrics
from routectl.sync.queue import Batch, CoalescingQueue
from routectl.sync.worker import UNHEALTHY_AFTER, SyncHealth, run_worker

pytestmark = pytest.mark.looptime


class ScriptedSync:
    """A sync that raises the scripted errors in turn (None: succeeds), noting when it ran."""

    def __init__(self, *outcomes: BaseException | None) -> None:
        self.outcomes = list(outcomes)
        self.times: list[float] = []

    async def __call__(self, batch: Batch) -> None:
        self.times.append(asyncio.get_running_loop().time())
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome


def settings(**overrides: Any) -> Settings:
    base = {"retry_backoff_base": 1.0, "retry_backoff_cap": 120.0}
    return Settings(
        cluster_cidrs=(ip_network("10.244.0.0/16"),), provider="fake", **(base | overrides)
    )


async def run(
    sync: ScriptedSync, *, until: float, health: SyncHealth | None = None, **overrides: Any
) -> None:
    queue = CoalescingQueue(batch_window=0.0)
    queue.request()
    worker = asyncio.create_task(
        run_worker(
            queue=queue,
            sync=sync,
            settings=settings(**overrides),
            metrics=Metrics.create(),
            rng=random.Random(1),
            health=health or SyncHealth(),
        )
    )
    await asyncio.sleep(until)
    queue.close()
    await worker


def group(*errors: RoutectlError) -> SyncFailedError:
    return SyncFailedError("some failed", list(errors))


async def test_failures_back_off_and_success_resets() -> None:
    """Transient failures retry after growing delays; a success ends the retries."""
    sync = ScriptedSync(ProviderError("a"), group(KubeError("b")), None)
    await run(sync, until=100)
    assert len(sync.times) == 3
    first, second = sync.times[1] - sync.times[0], sync.times[2] - sync.times[1]
    assert 0.8 <= first <= 1.0
    assert 1.6 <= second <= 2.0


async def test_retry_after_and_terminal_errors_decide_the_delay() -> None:
    """A cloud's retry-after is honoured; an all-terminal failure waits the whole cap."""
    sync = ScriptedSync(
        group(ProviderThrottledError("slow", retry_after=45.0), ProviderError("x")),
        group(ProviderTerminalError("quota")),
        None,
    )
    await run(sync, until=1000)
    assert sync.times[1] - sync.times[0] == pytest.approx(45.0)
    assert sync.times[2] - sync.times[1] == pytest.approx(120.0)


async def test_without_retries_a_failure_waits_for_the_next_change() -> None:
    """--retry-failed-syncs=false: nothing runs again until someone requests it."""
    sync = ScriptedSync(ProviderError("a"))
    await run(sync, until=1000, retry_failed_syncs=False)
    assert len(sync.times) == 1


async def test_a_bug_is_not_swallowed() -> None:
    """An exception outside routectl's tree ends the worker."""
    with pytest.raises(KeyError):
        await run(ScriptedSync(KeyError("bug")), until=10)


async def test_health_turns_bad_after_failures_in_a_row_and_recovers() -> None:
    """Three failed syncs in a row make the worker unhealthy; a success heals it."""
    health = SyncHealth()
    errors = [ProviderError(f"down {i}") for i in range(UNHEALTHY_AFTER)]
    await run(ScriptedSync(*errors), until=5, health=health)  # failed at 0 s, ~1 s, ~3 s
    assert (health.healthy, health.failures) == (False, UNHEALTHY_AFTER)
    assert health.last_error == f"down {UNHEALTHY_AFTER - 1}"
    await run(ScriptedSync(None), until=5, health=health)
    assert (health.healthy, health.failures, health.last_error) == (True, 0, "")


async def test_terminal_failures_alone_keep_the_worker_healthy() -> None:
    """Syncs failing only with terminal, per-route errors do not make it unhealthy."""
    health = SyncHealth()
    errors = [group(ProviderTerminalError("no IPv6")) for _ in range(UNHEALTHY_AFTER + 1)]
    await run(ScriptedSync(*errors), until=1000, health=health)
    assert health.healthy

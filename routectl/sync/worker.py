"""The worker: claims syncs one at a time and decides, by type, what a failure means.

A sync that fails with cloud or Kubernetes errors (:class:`~routectl.errors.ProviderError`,
:class:`~routectl.errors.KubeError`, alone or grouped in a
:class:`~routectl.errors.SyncFailedError`) is requeued after
:func:`~routectl.ratelimit.retry_delay`: exponential backoff with jitter, never sooner than
a cloud's retry-after, the whole cap when every error was terminal. With
``--retry-failed-syncs=false`` failures wait for the next change, as in upstream's watch
mode. Anything else is a bug: it ends the worker, and the process with it. After
:data:`UNHEALTHY_AFTER` syncs in a row failed with errors that were not all terminal,
:class:`SyncHealth` says so (readiness).
"""

from __future__ import annotations

import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable

from routectl.config import Settings
from routectl.errors import KubeError, ProviderError, ProviderTerminalError, RoutectlError
from routectl.observe.logctx import SYNC
from routectl.observe.metrics import Metrics
from routectl.ratelimit import retry_delay
from routectl.sync.queue import Batch, CoalescingQueue

logger = logging.getLogger("routectl.controller")

Sync = Callable[[Batch], Awaitable[None]]
UNHEALTHY_AFTER = 3
"""Consecutive failed syncs after which the worker reports itself unhealthy (readiness)."""


@dataclasses.dataclass(slots=True)
class SyncHealth:
    """How the last syncs went: consecutive failures and the last error (for /readyz)."""

    failures: int = 0
    last_error: str = ""

    @property
    def healthy(self) -> bool:
        """False after :data:`UNHEALTHY_AFTER` failed syncs in a row."""
        return self.failures < UNHEALTHY_AFTER


async def run_worker(
    *,
    queue: CoalescingQueue,
    sync: Sync,
    settings: Settings,
    metrics: Metrics,
    rng: random.Random,
    health: SyncHealth,
) -> None:
    """Claim syncs one at a time until the queue closes; requeue failures with backoff."""
    failures = 0
    number = 0
    while (batch := await queue.claim()) is not None:
        metrics.events_per_batch.observe(batch.requests)
        number += 1
        SYNC.set(number)  # every line the sync logs carries sync=<number>
        try:
            await sync(batch)
        except* (ProviderError, KubeError) as group:
            errors = _leaves(group)
            failures += 1
            # Terminal errors are per-route answers of a working cloud (quota, a family it
            # cannot route): reported on the Nodes, they do not make the worker unhealthy.
            terminal = all(isinstance(e, ProviderTerminalError) for e in errors)
            health.failures = 0 if terminal else health.failures + 1
            health.last_error = group.message or str(errors[0])
            delay = retry_delay(
                errors,
                failures=failures,
                base=settings.retry_backoff_base,
                cap=settings.retry_backoff_cap,
                jitter=rng.uniform(0.8, 1.0),
            )
            _requeue(queue, health.last_error, delay, settings=settings)
        else:
            failures, health.failures, health.last_error = 0, 0, ""
        finally:
            queue.done()


def _leaves(group: BaseExceptionGroup[ProviderError | KubeError]) -> list[RoutectlError]:
    leaves: list[RoutectlError] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            leaves.extend(_leaves(exc))
        else:
            leaves.append(exc)
    return leaves


def _requeue(queue: CoalescingQueue, what: str, delay: float, *, settings: Settings) -> None:
    if settings.retry_failed_syncs:
        logger.warning("Couldn't reconcile node routes: %s, requeuing in %.1fs", what, delay)
        queue.retry_after(delay)
    else:
        logger.warning("Couldn't reconcile node routes: %s", what)

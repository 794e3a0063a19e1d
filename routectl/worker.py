"""The worker: claims syncs one at a time and decides what a failure means.

A failed sync is requeued with exponential backoff and jitter (never shorter than a cloud's
retry-after); one that failed only with terminal errors (quota, permissions, a family the
cloud cannot route) is retried slowly, at the backoff cap. With ``--retry-failed-syncs=false``
failures wait for the next change, as in upstream's watch mode. Anything that is not a
routectl error is a bug: it ends the worker, and the process with it.
"""

from __future__ import annotations

import logging
import random

from routectl.controller import Controller, SyncFailedError
from routectl.errors import KubeError, ProviderError, ProviderTerminalError
from routectl.queue import CoalescingQueue
from routectl.ratelimit import backoff_delay

logger = logging.getLogger("routectl.controller")


async def run_worker(
    controller: Controller, queue: CoalescingQueue, *, rng: random.Random | None = None
) -> None:
    """Claim syncs one at a time until the queue closes; requeue failures with backoff."""
    settings = controller.settings
    jitter = rng or random.Random()  # noqa: S311 -- jitter, not cryptography
    failures = 0
    while (batch := await queue.claim()) is not None:
        controller.metrics.events_per_batch.observe(batch.requests)
        try:
            await controller.sync(batch)
        except (ProviderError, KubeError, SyncFailedError) as exc:
            failures += 1
            delay = backoff_delay(
                failures=failures, base=settings.retry_backoff_base, cap=settings.retry_backoff_cap
            ) * jitter.uniform(0.8, 1.0)
            hint = getattr(exc, "retry_after", None)
            delay = max(delay, hint or 0.0)
            if getattr(exc, "terminal", False) or isinstance(exc, ProviderTerminalError):
                # Retrying soon cannot help (quota, permissions, an unroutable family): retry
                # slowly, so an operator's fix is picked up without spending the budget.
                delay = settings.retry_backoff_cap
            if settings.retry_failed_syncs:
                logger.warning("Couldn't reconcile node routes: %s, requeuing in %.1fs", exc, delay)
                queue.retry_after(delay)
            else:
                logger.warning("Couldn't reconcile node routes: %s", exc)
        else:
            failures = 0
        finally:
            queue.done()

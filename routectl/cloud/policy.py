"""How cloud calls are paced and retried, and what the gate reports of them.

Promises: :class:`CallPolicy`'s defaults are the settings table's own (one declaration per
setting); :func:`call_policy` is the only place the settings become a policy, and
``--cloud-qps=0`` means a bucket so large no call ever waits. Pure: no I/O, no clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Protocol

from routectl.config import Settings, default_of

__all__ = [
    "NO_OBSERVER",
    "UNLIMITED",
    "CallObserver",
    "CallPolicy",
    "CallStatistics",
    "call_policy",
]

UNLIMITED = 1e9
"""The bucket of ``--cloud-qps=0``: so large no call ever waits."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CallPolicy:
    """How cloud calls are paced and retried; the defaults are the settings' defaults."""

    qps: float = default_of("cloud_qps")
    """Sustained cloud calls per second, every attempt counted (retries included)."""
    burst: int = default_of("cloud_burst")
    """Calls allowed at once after a quiet period."""
    concurrency: int = default_of("max_concurrent_route_operations")
    """Calls in flight at once; upstream's ``maxConcurrentRouteOperations``."""
    timeout: float = default_of("cloud_call_timeout")
    """Seconds one attempt may take before it counts as a (transient) failure."""
    max_attempts: int = default_of("cloud_max_attempts")
    """Attempts per call before the error reaches the worker, which requeues the sync."""
    backoff_base: float = default_of("cloud_call_backoff_base")
    """Seconds before the first retry; doubles with each retry, with jitter."""
    backoff_cap: float = default_of("cloud_call_backoff_cap")
    """The longest wait between two attempts (a cloud's ``retry_after`` may be longer)."""


def call_policy(settings: Settings) -> CallPolicy:
    """The policy ``settings`` ask for. ``--cloud-qps=0`` means no client-side limit: a
    bucket so large it never makes a call wait."""
    unlimited = settings.cloud_qps <= 0
    return CallPolicy(
        qps=UNLIMITED if unlimited else settings.cloud_qps,
        burst=int(UNLIMITED) if unlimited else settings.cloud_burst,
        concurrency=settings.max_concurrent_route_operations,
        timeout=settings.cloud_call_timeout,
        max_attempts=settings.cloud_max_attempts,
        backoff_base=settings.cloud_call_backoff_base,
        backoff_cap=settings.cloud_call_backoff_cap,
    )


class CallObserver(Protocol):
    """Receives one record per attempt, and one per listed route left out for its shape
    (for metrics); must not block."""

    def attempt(self, *, operation: str, result: str, seconds: float) -> None: ...

    def malformed_route(self) -> None: ...


class _NoObserver:
    def attempt(self, *, operation: str, result: str, seconds: float) -> None:
        """Ignore the record."""

    def malformed_route(self) -> None:
        """Ignore the record."""


NO_OBSERVER: CallObserver = _NoObserver()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CallStatistics:
    """Counters of a :class:`CloudGate`, for tests and metrics."""

    attempts: Mapping[tuple[str, str], int]
    token_wait_seconds: float

    def count(self, operation: str, result: str | None = None) -> int:
        """Attempts of ``operation`` (with ``result``, if given)."""
        return sum(
            n for (op, res), n in self.attempts.items() if op == operation and result in (None, res)
        )

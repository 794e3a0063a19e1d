"""Pure rate-limiting arithmetic: a token bucket, exponential backoff, and retry delays.

Nothing here sleeps, reads a clock or draws a random number (jitter is passed in), so the
simulated cloud (which answers "throttled" when its own budget is spent) and tests can
drive it with any notion of time. :func:`retry_delay` is where a failed sync's errors
decide, by type, when it runs again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from routectl.errors import ProviderTerminalError, ProviderThrottledError, RoutectlError

# Clients pacing at exactly the same rate must not be refused over float rounding.
_EPSILON = 1e-9


@dataclasses.dataclass(slots=True, kw_only=True)
class TokenBucket:
    """A bucket of ``burst`` tokens refilled at ``rate`` per second, starting full."""

    rate: float
    burst: float
    tokens: float = -1.0
    stamp: float = 0.0

    def __post_init__(self) -> None:
        if self.rate <= 0 or self.burst < 1:
            raise ValueError("a token bucket needs rate > 0 and burst >= 1")
        if self.tokens < 0:
            self.tokens = self.burst

    def _refill(self, now: float) -> None:
        if now > self.stamp:
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now

    def try_take(self, *, now: float) -> float:
        """Take a token if one is there and return 0; else return the seconds until one is."""
        self._refill(now)
        if self.tokens >= 1 - _EPSILON:
            self.tokens = max(0.0, self.tokens - 1)
            return 0.0
        return (1 - self.tokens) / self.rate


def backoff_delay(*, failures: int, base: float, cap: float) -> float:
    """``base * 2**(failures-1)``, capped: the delay before retry number ``failures``."""
    if failures <= 0:
        return 0.0
    return float(min(cap, base * 2 ** min(failures - 1, 62)))


def retry_delay(
    errors: Collection[RoutectlError], *, failures: int, base: float, cap: float, jitter: float
) -> float:
    """When a sync that failed with ``errors`` (its ``failures``-th failure) runs again.

    Exponential backoff scaled by ``jitter``, never sooner than a cloud's retry-after; a
    sync that failed only with terminal errors (quota, permissions, a family the cloud
    cannot route) waits the whole ``cap``, so an operator's fix is picked up without
    spending the budget on calls that cannot succeed.
    """
    if errors and all(isinstance(e, ProviderTerminalError) for e in errors):
        return cap
    delay = backoff_delay(failures=failures, base=base, cap=cap) * jitter
    for error in errors:
        match error:
            case ProviderThrottledError(retry_after=int() | float() as hint):
                delay = max(delay, hint)
    return delay

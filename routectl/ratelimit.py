"""Pure rate-limiting arithmetic: a token bucket, backoff, retry delays, Retry-After.

Nothing here sleeps, reads a clock or draws a random number (jitter is passed in), so the
simulated cloud (which answers "throttled" when its own budget is spent) and tests can
drive it with any notion of time. :func:`retry_delay` is where a failed sync's errors
decide, by type, when it runs again. :func:`parse_retry_after` is how every plugin reads a
cloud's ``Retry-After`` header (part of the plugin SDK).
"""

from __future__ import annotations

import dataclasses
import email.utils
import math
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


def parse_retry_after(
    value: object, *, date: object = None, now: float | None = None
) -> float | None:
    """The seconds a ``Retry-After`` header asks for, as the cloud sent them, or None.

    ``value`` is the header's value: delta-seconds, or an HTTP-date, from which the
    answer's own ``Date`` header (``date``) is taken away when it is readable, else ``now``
    (Unix seconds; the caller's wall clock), else the date cannot be read. None when there is
    no header or it cannot be read (``NaN`` and infinity included: no server means them);
    a negative number (a date in the past) is returned as sent, for the caller's policy.
    """
    text = "" if value is None else str(value).strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        when = _http_date(text)
        if when is None:
            return None
        sent = _http_date("" if date is None else str(date))
        reference = sent if sent is not None else now
        if reference is None:
            return None
        seconds = when - reference
    return seconds if math.isfinite(seconds) else None


def _http_date(text: str) -> float | None:
    try:
        return email.utils.parsedate_to_datetime(text.strip()).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None

"""retry_delay: a failed sync's errors decide, by type, when it runs again."""

from __future__ import annotations

from routectl.errors import (
    KubeError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
)
from routectl.ratelimit import retry_delay


def delay(*errors, failures: int = 1, jitter: float = 1.0) -> float:
    return retry_delay(list(errors), failures=failures, base=1.0, cap=120.0, jitter=jitter)


def test_backoff_doubles_with_each_failure_and_scales_with_jitter() -> None:
    """base x 2^(failures-1), times the jitter drawn by the caller."""
    assert delay(ProviderError("x"), failures=1) == 1.0
    assert delay(ProviderError("x"), failures=4) == 8.0
    assert delay(KubeError("x"), failures=4, jitter=0.5) == 4.0


def test_never_sooner_than_the_clouds_retry_after() -> None:
    """The largest retry-after of the group wins over a shorter backoff."""
    hinted = [ProviderThrottledError("slow", retry_after=30), ProviderThrottledError("x")]
    assert delay(*hinted, ProviderError("y")) == 30.0
    assert delay(ProviderThrottledError("slow", retry_after=0.5), failures=3) == 4.0


def test_only_terminal_errors_wait_the_whole_cap() -> None:
    """All terminal: the cap; one transient error among them: ordinary backoff."""
    assert delay(ProviderTerminalError("quota"), ProviderTerminalError("perm")) == 120.0
    assert delay(ProviderTerminalError("quota"), KubeError("503")) == 1.0

"""retry_delay: a failed sync's errors decide, by type, when it runs again."""

from __future__ import annotations

import pytest

from routectl.errors import (
    KubeError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
)
from routectl.ratelimit import parse_retry_after, retry_delay


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


@pytest.mark.parametrize(
    ("value", "date", "now", "seconds"),
    [
        ("5", None, None, 5.0),
        (" 2.5 ", None, None, 2.5),
        ("-3", None, None, -3.0),  # a past moment, as sent: the caller's policy decides
        ("Wed, 21 Oct 2015 07:28:00 GMT", "Wed, 21 Oct 2015 07:27:00 GMT", None, 60.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", "garbage", 1445412420.0, 60.0),  # Date unreadable
        ("Wed, 21 Oct 2015 07:28:00 GMT", None, 1445412420.0, 60.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", None, None, None),  # a date with nothing to subtract
        (None, None, 0.0, None),
        ("", None, 0.0, None),
        ("soon", None, 0.0, None),
        ("nan", None, 0.0, None),
        ("inf", None, 0.0, None),
        ("1e400", None, 0.0, None),
    ],
)
def test_retry_after_is_read_as_http_defines_it(
    value: str | None, date: str | None, now: float | None, seconds: float | None
) -> None:
    """delta-seconds or an HTTP-date (less the answer's Date, else now); None if unreadable."""
    assert parse_retry_after(value, date=date, now=now) == seconds

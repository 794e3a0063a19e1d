"""The request budget the conformance suite hands a plugin: it counts, and it catches cheats.

:class:`CountingBudget` is a :class:`~routectl.provider.RequestBudget` that never makes a
request wait. It counts every :meth:`~CountingBudget.spend` and, at each one, asks the fake
cloud how many requests it has received from the plugin so far: a plugin that spends
*before* each request has never sent more requests than it spent, so any excess is recorded
in :attr:`CountingBudget.early` (a request sent unpaced, or paced only after it went out).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable


class CountingBudget:
    """A budget that lets every request through at once and checks it was spent first."""

    def __init__(self, requests_made: Callable[[], int]) -> None:
        self._requests_made = requests_made
        self._offset = requests_made()
        self.spent = 0
        """Spends so far."""
        self.operations: collections.Counter[str] = collections.Counter()
        """Spends by the ``operation`` the plugin named."""
        self.early: list[str] = []
        """One line per spend that found more requests at the cloud than spends before it."""

    def requests(self) -> int:
        """Requests the fake cloud received from the plugin since this budget was made."""
        return self._requests_made() - self._offset

    async def spend(self, operation: str = "request") -> None:
        """Count one request of ``operation``; note it if the cloud saw more than were spent."""
        seen = self.requests()
        if seen > self.spent:
            self.early.append(
                f"before spend #{self.spent + 1} ({operation}) the cloud had already received "
                f"{seen} requests"
            )
        self.spent += 1
        self.operations[operation] += 1
        await asyncio.sleep(0)


def over_budget(times: list[float], *, qps: float, burst: int, slack: float = 0.0) -> list[str]:
    """Windows in which more requests were sent than ``burst + qps * W`` allows.

    ``times`` are the loop times at which a fake cloud received requests. Every window that
    starts and ends at a request is checked (the worst windows are among them). ``slack``
    widens each window by the transport's jitter, for fakes measured on the real clock.
    """
    found: list[str] = []
    ordered = sorted(times)
    for first, start in enumerate(ordered):
        for last in range(first, len(ordered)):
            width = ordered[last] - start
            sent = last - first + 1
            if sent > burst + qps * (width + slack) + 1e-6:
                found.append(f"{sent} requests in {width:.3f}s from t={start:.3f}")
    return found

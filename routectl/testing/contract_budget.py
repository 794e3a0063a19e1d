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

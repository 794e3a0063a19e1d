"""Fencing by time: no write starts unless this replica's lease outlives it.

Another candidate may take the Lease over ``lease_duration`` after it last saw the Lease
change, and it cannot have seen our last renewal before we sent it. So a write that starts
at ``t`` with timeout ``T`` is safe when ``t + T`` is before ``renewal sent + lease
duration`` (:meth:`Fence.grant` is told that moment after each successful renewal). The
elector revokes the fence the moment it gives leadership up, lost or released.

A write cut off without an answer (cancelled at shutdown, timed out) may still be carried
out by the cloud later: :meth:`Fence.cut_off` notes it, and the elector does not release the
Lease while :meth:`Fence.in_doubt` (it lets it expire, so the next leader starts after it).

:meth:`Fence.admit` is asked before every write, cloud or Kubernetes: it returns the
timeout the write may have (its own, cut to what the lease still covers) or raises
:class:`~routectl.errors.WriteFencedError` when less than :data:`MIN_WRITE` is left. A
paused process (SIGSTOP, a long GC, a frozen VM) that resumes past its lease therefore
starts no write, whatever was queued. Without leader election the fence is always open.
Time is the running loop's clock.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

from routectl.errors import WriteFencedError

MIN_WRITE = 1.0
"""A write is not started with less than this many seconds of lease left."""
MARGIN = 0.5
"""Seconds kept in hand for scheduling delays between the check and the request."""


class Fence:
    """Until when (loop time) this replica may start writes."""

    def __init__(self, *, open_: bool, clock: Callable[[], float] | None = None) -> None:
        self._until = math.inf if open_ else -math.inf
        self._clock = clock
        self._cut_at = -math.inf

    def cut_off(self) -> None:
        """A write was cut off without an answer (cancelled, timed out): the cloud may still
        carry it out, later."""
        self._cut_at = self._now()

    def in_doubt(self, *, within: float) -> bool:
        """Whether a write was cut off less than ``within`` seconds ago."""
        return self._now() - self._cut_at < within

    def _now(self) -> float:
        return self._clock() if self._clock else asyncio.get_running_loop().time()

    def grant(self, until: float) -> None:
        """The lease, renewed, keeps other candidates out until ``until`` (loop time)."""
        self._until = until

    def revoke(self) -> None:
        """Leadership is over: no write starts from now on."""
        self._until = -math.inf

    def left(self) -> float:
        """Seconds a write starting now may take (inf without leader election)."""
        return self._until - self._now() - MARGIN

    def admit(
        self, *, timeout: float, what: str, error: type[WriteFencedError] = WriteFencedError
    ) -> float:
        """The timeout ``what`` may run with, or ``error`` if the lease is about to end."""
        left = self.left()
        if left < MIN_WRITE:
            raise error(f"{what}: not started, this replica's lease is not valid long enough")
        return min(timeout, left)

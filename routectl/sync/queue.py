"""A work queue for exactly one key: "the cluster's routes need a look".

* a request while idle makes a sync due at once (the leading edge: a lone Node event never
  waits for a window);
* requests during a sync, or within ``batch_window`` after one ended, coalesce into exactly
  one more sync, due ``batch_window`` after the first of them (or after the end): batching
  happens under load, never in front of a lone event;
* the dirty mark is cleared when a sync is *claimed*, not when it ends, so a Node change
  that lands while the worker talks to the cloud is never lost (upstream's "Forget before
  reconcile", encoded in the design rather than in a comment);
* syncs start no closer together than ``min_interval``;
* ``retry_after(delay)`` makes a sync due no sooner than ``delay`` from now (backoff, or a
  cloud's retry-after); later requests never cut that wait short.

The decisions live in the pure :class:`QueueState`, driven by explicit times; the async
:class:`CoalescingQueue` only waits, on the running loop's clock, so tests fast-forward it,
and tells a :class:`QueueObserver` what happens (client-go's workqueue metrics).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Protocol

# Times computed as ``now + due_in(now)`` may land a rounding error short of ``due``, and a
# wait shorter than a clock tick may end without a virtual (or coarse) clock moving.
_EPSILON = 1e-6


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """What a claimed sync was asked for: its triggers and when the oldest request came."""

    triggers: frozenset[str]
    requests: int
    requested_at: float
    fresh_listing: bool


@dataclasses.dataclass(slots=True, kw_only=True)
class QueueState:
    """The queue's decisions, as a function of explicit times (no clock, no waiting)."""

    batch_window: float = 0.0
    min_interval: float = 0.0
    dirty: bool = False
    running: bool = False
    due: float = 0.0
    last_start: float | None = None
    last_end: float | None = None
    triggers: set[str] = dataclasses.field(default_factory=set)
    requested_at: float = 0.0
    requests: int = 0
    fresh_listing: bool = False

    def request(self, *, now: float, trigger: str, fresh_listing: bool = False) -> None:
        """Ask for a sync; coalesces with any sync already due."""
        if not self.dirty:
            self.dirty = True
            self.requested_at = now
            self.due = max(self.due, self._first_due(now), self._earliest())
        self.triggers.add(trigger)
        self.requests += 1
        self.fresh_listing |= fresh_listing

    def retry_after(self, *, now: float, delay: float, trigger: str) -> None:
        """Make a sync due no sooner than ``delay`` seconds from now."""
        self.request(now=now, trigger=trigger)
        self.due = max(self.due, now + delay)

    def due_in(self, *, now: float) -> float | None:
        """Seconds until a sync may be claimed (0: now), or None when nothing is due."""
        if not self.dirty or self.running:
            return None
        return max(0.0, self.due - now)

    def claim(self, *, now: float) -> Batch | None:
        """Start a sync if one is due; clears the dirty mark at once."""
        wait = self.due_in(now=now)
        if wait is None or wait > _EPSILON:
            return None
        batch = Batch(
            triggers=frozenset(self.triggers),
            requests=self.requests,
            requested_at=self.requested_at,
            fresh_listing=self.fresh_listing,
        )
        self.dirty, self.running, self.last_start = False, True, now
        self.triggers = set()
        self.requests = 0
        self.fresh_listing = False
        return batch

    def done(self, *, now: float) -> None:
        """The claimed sync ended; a request that came meanwhile waits out the interval."""
        self.running, self.last_end = False, now
        if self.dirty:
            self.due = max(self.due, self._earliest())

    def _first_due(self, now: float) -> float:
        """When a first request at ``now`` makes a sync due: at once when idle."""
        if self.running:
            return now + self.batch_window
        if self.last_end is not None and now < self.last_end + self.batch_window:
            return self.last_end + self.batch_window
        return now

    def _earliest(self) -> float:
        return -1.0 if self.last_start is None else self.last_start + self.min_interval


class QueueObserver(Protocol):
    """Hears what the queue does (client-go's workqueue metrics); must not block."""

    def added(self) -> None: ...

    def claimed(self, *, waited: float) -> None: ...

    def finished(self) -> None: ...

    def retried(self) -> None: ...


class _Unobserved:
    def added(self) -> None:
        """Ignore it."""

    def claimed(self, *, waited: float) -> None:
        """Ignore it."""

    def finished(self) -> None:
        """Ignore it."""

    def retried(self) -> None:
        """Ignore it."""


class CoalescingQueue:
    """The async face of :class:`QueueState`: request/claim/done/retry_after/close."""

    def __init__(
        self,
        *,
        batch_window: float,
        min_interval: float = 0.0,
        observer: QueueObserver | None = None,
    ) -> None:
        self.state = QueueState(batch_window=batch_window, min_interval=min_interval)
        self._changed = asyncio.Event()
        self._closed = False
        self._observer: QueueObserver = observer or _Unobserved()

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def request(self, *, trigger: str = "node_change", fresh_listing: bool = False) -> None:
        """Ask for a sync (cheap, synchronous: called from informer callbacks)."""
        was_dirty = self.state.dirty
        self.state.request(now=self._now(), trigger=trigger, fresh_listing=fresh_listing)
        if not was_dirty:
            self._observer.added()
        self._changed.set()

    def retry_after(self, delay: float, *, trigger: str = "retry") -> None:
        """Ask for a sync no sooner than ``delay`` seconds from now."""
        was_dirty = self.state.dirty
        self.state.retry_after(now=self._now(), delay=delay, trigger=trigger)
        if not was_dirty:
            self._observer.added()
        self._observer.retried()
        self._changed.set()

    def done(self) -> None:
        """Mark the claimed sync finished."""
        self.state.done(now=self._now())
        self._observer.finished()
        self._changed.set()

    def close(self) -> None:
        """Make :meth:`claim` return None from now on."""
        self._closed = True
        self._changed.set()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    async def claim(self) -> Batch | None:
        """Wait until a sync is due and claim it; None once the queue is closed."""
        while not self._closed:
            self._changed.clear()
            batch = self.state.claim(now=self._now())
            if batch is not None:
                self._observer.claimed(waited=self._now() - batch.requested_at)
                return batch
            wait = self.state.due_in(now=self._now())
            try:
                async with asyncio.timeout(wait):
                    await self._changed.wait()
            except TimeoutError:
                pass
        return None

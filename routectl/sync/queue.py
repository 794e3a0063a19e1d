"""A work queue for exactly one key: "the cluster's routes need a look".

* a request while idle makes a sync due at once (the leading edge: a lone Node event never
  waits for a window), unless the queue *settles* (``settle_cap``, for clouds written a
  whole table at a time) and the request asks to (``settle=True``, a Node change): then the
  sync waits until requests pause for ``settle_quiet`` (the trailing edge), never more than
  ``settle_cap`` after the first of them, so a burst of Nodes is one write and not a
  write for its first Node and one for the rest; a lone change waits one ``settle_quiet``.
  Settling only ever makes a sync later (a backoff or the minimum interval still hold);
* requests during a sync, or within ``batch_window`` after one ended, coalesce into exactly
  one more sync, due ``batch_window`` after the first of them (or after the end): batching
  happens under load, never in front of a lone event;
* the dirty mark is cleared when a sync is *claimed*, not when it ends, so a Node change
  that lands while the worker talks to the cloud is never lost (upstream's "Forget before
  reconcile", encoded in the design rather than in a comment);
* syncs start no closer together than ``min_interval``;
* ``retry_after(delay)`` makes a sync due no sooner than ``delay`` from now (backoff, or a
  cloud's retry-after); later requests never cut that wait short;
* ``request_after(delay, key=...)`` is client-go's ``AddAfter``: a request that *arrives*
  ``delay`` from now, and until then asks for nothing (a sync in between does not take it).
  One pending request per key: a new one for the same key replaces it (``replace=True``) or
  leaves the earlier one (``replace=False``); ``cancel(key)`` drops it. Every timer of the
  service goes through here (the guard's second look, node IPAM's wake-up, the resync), so
  the queue is where time is scheduled.

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
    settle_cap: float | None = None
    """Settling requests wait for a pause of ``settle_quiet``, at most this long after the
    first of them; None: no settling (the leading edge for every request)."""
    settle_quiet: float = 0.0
    dirty: bool = False
    running: bool = False
    due: float = 0.0
    last_start: float | None = None
    last_end: float | None = None
    triggers: set[str] = dataclasses.field(default_factory=set)
    requested_at: float = 0.0
    requests: int = 0
    fresh_listing: bool = False
    delayed: dict[str, Delayed] = dataclasses.field(default_factory=dict)
    """Requests that arrive later, by key."""

    def request(
        self,
        *,
        now: float,
        trigger: str,
        fresh_listing: bool = False,
        settle: bool = False,
        count: int = 1,
    ) -> None:
        """Ask for a sync; coalesces with any sync already due. A settling request (when
        the queue settles) pushes the sync to ``settle_quiet`` after it, within the cap.
        ``count``: so many requests at once (``now`` for all), counted as such."""
        if not self.dirty:
            self.dirty = True
            self.requested_at = now
            self.due = max(self.due, self._first_due(now), self._earliest())
        if settle and self.settle_cap is not None:
            cap = self.requested_at + self.settle_cap
            self.due = max(self.due, min(now + self.settle_quiet, cap))
        self.triggers.add(trigger)
        self.requests += count
        self.fresh_listing |= fresh_listing

    def retry_after(self, *, now: float, delay: float, trigger: str) -> None:
        """Make a sync due no sooner than ``delay`` seconds from now."""
        self.request(now=now, trigger=trigger)
        self.due = max(self.due, now + delay)

    def request_after(
        self,
        *,
        now: float,
        delay: float,
        key: str,
        trigger: str,
        fresh_listing: bool = False,
        replace: bool = True,
    ) -> None:
        """A request that arrives ``delay`` seconds from now (one per ``key``)."""
        if key in self.delayed and not replace:
            return
        self.delayed[key] = Delayed(at=now + max(delay, 0.0), trigger=trigger, fresh=fresh_listing)
        self.arrive(now=now)

    def cancel(self, key: str) -> None:
        """Drop the pending request of ``key``, if any."""
        self.delayed.pop(key, None)

    def arrive(self, *, now: float) -> None:
        """Turn the delayed requests whose time has come into requests."""
        for key, later in sorted(self.delayed.items(), key=lambda item: item[1].at):
            if later.at > now + _EPSILON:
                break
            del self.delayed[key]
            self.request(now=now, trigger=later.trigger, fresh_listing=later.fresh)

    def due_in(self, *, now: float) -> float | None:
        """Seconds until a sync may be claimed (0: now), or None when nothing is due.

        While a sync runs, or nothing is dirty, the next delayed request's arrival (if any)
        is when to look again.
        """
        arrival = min((d.at for d in self.delayed.values()), default=None)
        if not self.dirty or self.running:
            return None if arrival is None or self.running else max(0.0, arrival - now)
        return max(0.0, self.due - now)

    def claim(self, *, now: float) -> Batch | None:
        """Start a sync if one is due; clears the dirty mark at once."""
        self.arrive(now=now)
        wait = self.due_in(now=now) if self.dirty else None
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


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Delayed:
    """A request that arrives at ``at``."""

    at: float
    trigger: str
    fresh: bool


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
        settle_cap: float | None = None,
        settle_quiet: float = 0.0,
        observer: QueueObserver | None = None,
    ) -> None:
        self.state = QueueState(
            batch_window=batch_window,
            min_interval=min_interval,
            settle_cap=settle_cap,
            settle_quiet=settle_quiet,
        )
        self._changed = asyncio.Event()
        self.arrived = asyncio.Event()
        """Set by every :meth:`request`: a sync that is writing may clear it and wait on it
        to take on, beside its writes, the changes that arrive (the sync's side plans)."""
        self._closed = False
        self._observer: QueueObserver = observer or _Unobserved()

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def request(
        self,
        *,
        trigger: str = "node_change",
        fresh_listing: bool = False,
        settle: bool = False,
        count: int = 1,
    ) -> None:
        """Ask for a sync (cheap, synchronous: called from informer callbacks); ``settle``:
        let a burst of such requests settle first, if the queue settles; ``count``: so many
        requests at once (a list's changes), as ``count`` calls would."""
        was_dirty = self.state.dirty
        self.state.request(
            now=self._now(),
            trigger=trigger,
            fresh_listing=fresh_listing,
            settle=settle,
            count=count,
        )
        if not was_dirty:
            self._observer.added()
        self._changed.set()
        self.arrived.set()

    def retry_after(self, delay: float, *, trigger: str = "retry") -> None:
        """Ask for a sync no sooner than ``delay`` seconds from now."""
        was_dirty = self.state.dirty
        self.state.retry_after(now=self._now(), delay=delay, trigger=trigger)
        if not was_dirty:
            self._observer.added()
        self._observer.retried()
        self._changed.set()

    def request_after(
        self,
        delay: float,
        *,
        key: str,
        trigger: str = "periodic",
        fresh_listing: bool = False,
        replace: bool = True,
    ) -> None:
        """client-go's ``AddAfter``: a request that arrives ``delay`` seconds from now."""
        self.state.request_after(
            now=self._now(),
            delay=delay,
            key=key,
            trigger=trigger,
            fresh_listing=fresh_listing,
            replace=replace,
        )
        self._changed.set()

    def cancel(self, key: str) -> None:
        """Drop the delayed request of ``key``, if any."""
        self.state.cancel(key)
        self._changed.set()

    def pending(self, key: str) -> bool:
        """True while a delayed request of ``key`` waits to arrive."""
        return key in self.state.delayed

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
            was_dirty = self.state.dirty
            batch = self.state.claim(now=self._now())
            if not was_dirty and (batch is not None or self.state.dirty):
                self._observer.added()  # a delayed request arrived
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

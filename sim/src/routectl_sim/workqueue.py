"""client-go's rate-limited work queue, as KCM's node IPAM controller uses it.

* :class:`ControllerRateLimiter` is ``workqueue.DefaultControllerRateLimiter()``: the larger
  of a per-item exponential backoff (5 ms · 2ⁿ, capped at 1000 s, n the item's failures
  since it was last forgotten) and one token bucket of 10 per second, burst 100, shared by
  all items, which a retry takes from even when it runs into debt (``rate.Limiter.Reserve``).
  Pure: the time is passed in.
* :class:`WorkQueue` keeps client-go's promises: an item is queued at most once however
  often it is added (``dirty``), never handed to two workers at once (``processing``: an
  add while it is processed queues it again when :meth:`WorkQueue.done`), and a delayed
  add keeps the earliest time asked for; a plain :meth:`WorkQueue.add` does not cancel a
  delayed one, which still fires later.
"""

from __future__ import annotations

import asyncio
import dataclasses


@dataclasses.dataclass(slots=True, kw_only=True)
class ControllerRateLimiter:
    """``DefaultControllerRateLimiter``: max(per-item exponential, overall bucket)."""

    base: float = 0.005
    cap: float = 1000.0
    qps: float = 10.0
    burst: int = 100
    failures: dict[str, int] = dataclasses.field(default_factory=dict)
    tokens: float = -1.0
    stamp: float = 0.0

    def __post_init__(self) -> None:
        if self.tokens < 0:
            self.tokens = float(self.burst)

    def when(self, item: str, *, now: float) -> float:
        """The delay before ``item``'s next retry; counts one more failure."""
        failures = self.failures.get(item, 0)
        self.failures[item] = failures + 1
        backoff = min(self.cap, self.base * float(2 ** min(failures, 62)))
        return max(backoff, self._reserve(now))

    def forget(self, item: str) -> None:
        """``item`` succeeded: its backoff starts again from the base."""
        self.failures.pop(item, None)

    def _reserve(self, now: float) -> float:
        if now > self.stamp:
            self.tokens = min(float(self.burst), self.tokens + (now - self.stamp) * self.qps)
            self.stamp = now
        self.tokens -= 1
        return max(0.0, -self.tokens / self.qps)


class WorkQueue:
    """A deduplicating FIFO of names with delayed and rate-limited adds."""

    def __init__(self, limiter: ControllerRateLimiter) -> None:
        self.limiter = limiter
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._waiting: dict[str, asyncio.TimerHandle] = {}

    def add(self, item: str) -> None:
        """Queue ``item`` now, unless it is queued already (or queue it after its run)."""
        if item in self._dirty:
            return
        self._dirty.add(item)
        if item not in self._processing:
            self._queue.put_nowait(item)

    def add_after(self, item: str, delay: float) -> None:
        """Queue ``item`` after ``delay`` seconds (the earliest of several asks wins)."""
        if delay <= 0:
            self.add(item)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        waiting = self._waiting.get(item)
        if waiting is not None:
            if waiting.when() <= when:
                return
            waiting.cancel()
        self._waiting[item] = loop.call_at(when, self._ready, item)

    def add_rate_limited(self, item: str) -> None:
        """Queue ``item`` again after the limiter's delay."""
        now = asyncio.get_running_loop().time()
        self.add_after(item, self.limiter.when(item, now=now))

    def forget(self, item: str) -> None:
        """Reset ``item``'s backoff."""
        self.limiter.forget(item)

    async def get(self) -> str:
        """The next item; it is processing until :meth:`done`."""
        item = await self._queue.get()
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: str) -> None:
        """``item`` is processed; if it was added meanwhile, it is queued again."""
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.put_nowait(item)

    def close(self) -> None:
        """Cancel every delayed add."""
        for handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()

    def _ready(self, item: str) -> None:
        self._waiting.pop(item, None)
        self.add(item)

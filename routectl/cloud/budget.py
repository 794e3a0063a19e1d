"""The request budget: one token bucket that every cloud request passes, and the pause.

* :class:`Limiter` is routectl's one token bucket, for cloud requests and API requests
  alike: the arithmetic of :class:`routectl.ratelimit.TokenBucket`, and waiters served
  first come, first served.
* :class:`Budget` holds a limiter: ``burst`` tokens refilled at ``qps`` per second. Over any
  window of W seconds, the requests it lets through number at most ``burst + qps * W``, and
  so do the requests of a leader and its successor together: the bucket starts as if
  drained at the last moment any predecessor may have spent (:meth:`Budget.start_quiet_since`,
  told by the leader election): full when there was no predecessor, or when it stopped at
  least ``burst / qps`` seconds ago; drained when nothing is known (no election, or the
  first use came first).
* Plugins receive it from their factory (the ``budget`` keyword, see
  :class:`routectl.provider.RequestBudget`) and :meth:`Budget.spend` before *every* HTTP
  request they make: pages, polls and look-ups included. The gate then takes no token of
  its own. A plugin whose factory takes no budget is paced per call by the gate instead.
* the wait for the budget is not the cloud's time: while a request of a gated call waits
  (for a token or out a pause), the call's timeout is stopped (:data:`CALL_WAITS`, set by
  the gate for each attempt, hears :meth:`CallWaits.stop` and :meth:`CallWaits.resume`),
  so creates queued behind the bucket do not time out before they are sent;
* :meth:`Budget.pause` holds every request back when a cloud asks for it (retry-after), up
  to ``max_pause``: a hint of an hour, or a date years ahead, never stalls routectl for
  longer. A pause is said at WARNING (what the cloud asked, what routectl does), a short one
  asked call after call (a second, say, or the default a plugin puts in place of a
  negative hint) once a minute, the rest at DEBUG; and shown by the observer as the Unix
  time until which calls are paused.

Time is the running loop's clock (waits fast-forward in tests); the wall clock, injected,
only turns a pause into a Unix time for the gauge.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import datetime
import logging
import math
from collections.abc import Callable
from typing import Protocol

from routectl.config.syntax import format_duration
from routectl.ratelimit import TokenBucket

logger = logging.getLogger("routectl.cloud")

_TICK = 1e-6
"""Waits shorter than this may end without the (virtual or coarse) clock moving."""
_NEWS = 1.0
"""A pause that extends the current one by less than this is not worth a log line."""
_SHORT = 10.0
"""A pause shorter than this (a throttled cloud's usual second or two, or the plugin's
default for a hint it could not use, such as a negative one) is said at WARNING at most
once per :data:`_QUIET` seconds; the repeats are DEBUG lines, not one WARNING per call."""
_QUIET = 60.0


class BudgetObserver(Protocol):
    """Receives the budget's records (for metrics); must not block."""

    def token_wait(self, *, seconds: float) -> None: ...

    def waiting(self, *, delta: int) -> None: ...

    def request(self, *, operation: str) -> None: ...

    def paused_until(self, *, unix_time: float) -> None: ...


class _Ignore:
    def token_wait(self, *, seconds: float) -> None:
        """Ignore the record."""

    def waiting(self, *, delta: int) -> None:
        """Ignore the record."""

    def request(self, *, operation: str) -> None:
        """Ignore the record."""

    def paused_until(self, *, unix_time: float) -> None:
        """Ignore the record."""


IGNORE: BudgetObserver = _Ignore()


class CallWaits(Protocol):
    """Hears when a request of the running call waits for the budget, and when it stops."""

    def stop(self) -> None:
        """A request starts waiting: the call's clock stops."""
        ...

    def resume(self, *, sending: bool) -> None:
        """The request is done waiting: it is now sent (``sending``; this may refuse it
        by raising), or it was cancelled while waiting."""
        ...


CALL_WAITS: contextvars.ContextVar[CallWaits | None] = contextvars.ContextVar(
    "routectl_call_waits", default=None
)
"""The call the current task's requests belong to (set by the gate per attempt)."""


class Budget:
    """The token bucket and the pause every cloud request passes."""

    def __init__(
        self,
        *,
        qps: float,
        burst: int,
        max_pause: float,
        wall_clock: Callable[[], datetime.datetime],
        observer: BudgetObserver = IGNORE,
    ) -> None:
        if not (qps > 0 and burst >= 1 and max_pause >= 0):
            raise ValueError("a budget needs qps > 0, burst >= 1 and max_pause >= 0")
        self.qps, self.burst, self.max_pause = qps, burst, max_pause
        self._wall_clock = wall_clock
        self._observer = observer
        self._bucket = Limiter(qps=qps, burst=burst)
        self._quiet_since: float | None = None
        self._told = False
        """Told when the last spend before ours was; if not, the bucket starts drained."""
        self._paused_until = 0.0
        self._said_at: float | None = None
        """When a short pause was last said at WARNING (loop time)."""
        self.requests: collections.Counter[str] = collections.Counter()
        """Requests let through, by operation."""
        self.token_wait_seconds = 0.0

    async def spend(self, operation: str = "request") -> None:
        """Wait out any pause, then for a token; count one request of ``operation``."""
        loop = asyncio.get_running_loop()
        if not self._bucket.started:
            now, quiet = loop.time(), self._quiet_since
            if not self._told:
                self._bucket.start_empty(at=now)
            elif quiet is not None:  # else: nobody spent before us, the bucket starts full
                self._bucket.start_empty(at=min(now, quiet))
        call = CALL_WAITS.get()
        if call is not None:
            call.stop()
        try:
            waited = await self._wait()
        except BaseException:
            if call is not None:
                call.resume(sending=False)
            raise
        if call is not None:
            call.resume(sending=True)
        self.token_wait_seconds += waited
        self._observer.token_wait(seconds=waited)
        self.requests[operation] += 1
        self._observer.request(operation=operation)

    async def _wait(self) -> float:
        """Wait out any pause, then for a token; the seconds spent waiting for the token."""
        loop = asyncio.get_running_loop()
        # A pause may be extended while we wait: check again after each sleep.
        while (pause := self._paused_until - loop.time()) > _TICK:  # noqa: ASYNC110
            await asyncio.sleep(pause)
        waited_from = loop.time()
        self._observer.waiting(delta=1)  # a request starts (+1) and stops (-1) waiting
        try:
            await self._bucket.acquire()
        finally:
            self._observer.waiting(delta=-1)
        return loop.time() - waited_from

    def start_quiet_since(self, moment: float | None) -> None:
        """Nothing was spent on the cloud's budget since loop time ``moment`` (None: ever).

        The bucket then starts as if drained at ``moment`` (full if that was ``burst / qps``
        seconds ago or more); without this call it starts drained at its first use. Only
        the first call before the first :meth:`spend` counts: a bucket in use keeps its
        level.
        """
        if not self._bucket.started and not self._told:
            self._told, self._quiet_since = True, moment

    def pause(self, asked: float | None, *, what: str) -> float:
        """Hold every request back for ``asked`` seconds, capped; return the pause granted.

        A hint that is missing, negative or not a number pauses nothing; one longer than
        ``max_pause`` is cut to it, and both are said in one WARNING. Short pauses asked
        call after call are said at WARNING once a minute, the rest at DEBUG.
        """
        if asked is None or math.isnan(asked) or asked <= 0:
            return 0.0
        granted = min(asked, self.max_pause)
        now = asyncio.get_running_loop().time()
        until = now + granted
        if until > self._paused_until + _NEWS:
            capped = " (--cloud-retry-after-cap)" if granted < asked else ""
            loud = granted >= _SHORT or self._said_at is None or now - self._said_at >= _QUIET
            if loud:
                self._said_at = now
            logger.log(
                logging.WARNING if loud else logging.DEBUG,
                "The cloud asked routectl to wait %s before its next call (%s); holding every "
                "cloud call back for %s%s",
                _duration(asked),
                what,
                format_duration(granted),
                capped,
                extra={"retry_after": asked, "paused_for": granted},
            )
        if until > self._paused_until:
            self._paused_until = until
            unix = self._wall_clock().timestamp() + granted
            self._observer.paused_until(unix_time=unix)
        return granted

    def paused_for(self) -> float:
        """Seconds until requests may go out again (0: not paused)."""
        return max(0.0, self._paused_until - asyncio.get_running_loop().time())


_AGES = 1e9
"""Beyond this (about 32 years) a wait is said as a number of seconds, not in hours."""


def _duration(seconds: float) -> str:
    """A cloud's wait in words: Go's duration spelling, ``1e+30s`` for an absurd one (not
    ``277777777777777803006914950h57m11.8s``), ``forever`` for infinity."""
    if math.isinf(seconds):
        return "forever"
    return f"{seconds:.3g}s" if seconds > _AGES else format_duration(seconds)


class Limiter:
    """A token bucket to wait on: ``burst`` tokens, refilled at ``qps`` per second.

    The arithmetic is :class:`routectl.ratelimit.TokenBucket`'s; this adds the waiting.
    Waiters take their turn in the order they came (one lock, fair in asyncio), so the
    first to ask is the first served and a burst of waiters sleeps once each, not once per
    token handed to another. It starts full, as client-go's does; :meth:`start_empty` starts
    it as if ``burst`` requests had just been made at a given moment. A wait
    shorter than the clock can tell is slept as one tick, so a clock that does not move
    between two readings (the virtual clock of tests and ``routectl simulate``) never spins.
    """

    def __init__(self, *, qps: float, burst: int) -> None:
        if not (qps > 0 and burst >= 1):
            raise ValueError("a token bucket needs qps > 0 and burst >= 1")
        self.qps, self.burst = qps, burst
        self._bucket: TokenBucket | None = None
        self._turn = asyncio.Lock()

    @property
    def started(self) -> bool:
        """True once the level is set (by the first :meth:`acquire` or :meth:`start_empty`)."""
        return self._bucket is not None

    def start_empty(self, *, at: float) -> None:
        """Start empty, as if ``burst`` requests had been made at loop time ``at``: tokens
        accrue from then. Only before the bucket has started; a bucket in use keeps its level."""
        if self._bucket is None:
            self._bucket = TokenBucket(rate=self.qps, burst=self.burst, tokens=0.0, stamp=at)

    async def acquire(self) -> None:
        """Wait for a token and take it."""
        loop = asyncio.get_running_loop()
        if self._bucket is None:  # full, from the first reading of the clock
            self._bucket = TokenBucket(rate=self.qps, burst=self.burst, stamp=loop.time())
        async with self._turn:
            while (wait := self._bucket.try_take(now=loop.time())) > 0:  # noqa: ASYNC110
                await asyncio.sleep(max(wait, _TICK))

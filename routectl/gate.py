"""The one gate every cloud call passes: pacing, concurrency, timeout and retries.

:class:`RateLimitedProvider` wraps a provider and gives every call one token bucket
(aiolimiter), one concurrency limit, a per-call timeout and one retry layer (tenacity:
exponential backoff with jitter, capped attempts, a cloud's ``retry_after`` honoured and
applied to every call, terminal errors never retried). "Already exists" on create and "not
found" on delete count as success. :func:`call_policy` maps the settings to the gate's
:class:`CallPolicy`, whose defaults are the settings' own.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import random
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Protocol, TypeVar, cast

import aiolimiter
import tenacity

from routectl.config import Settings, default_of
from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    ProviderTimeoutError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import BatchResult, RouteProvider, batch_capable
from routectl.ratelimit import backoff_delay

UNLIMITED = 1e9
"""The bucket of ``--cloud-qps=0``: so large no call ever waits."""
_TICK = 1e-6
"""Waits shorter than this may end without the (virtual or coarse) clock moving."""
T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CallPolicy:
    """How cloud calls are paced and retried; the defaults are the settings' defaults."""

    qps: float = default_of("cloud_qps")
    """Sustained cloud calls per second, every attempt counted (retries included)."""
    burst: int = default_of("cloud_burst")
    """Calls allowed at once after a quiet period."""
    concurrency: int = default_of("max_concurrent_route_operations")
    """Calls in flight at once; upstream's ``maxConcurrentRouteOperations``."""
    timeout: float = default_of("cloud_call_timeout")
    """Seconds one attempt may take before it counts as a (transient) failure."""
    max_attempts: int = default_of("cloud_max_attempts")
    """Attempts per call before the error reaches the worker, which requeues the sync."""
    backoff_base: float = default_of("cloud_call_backoff_base")
    """Seconds before the first retry; doubles with each retry, with jitter."""
    backoff_cap: float = default_of("cloud_call_backoff_cap")
    """The longest wait between two attempts (a cloud's ``retry_after`` may be longer)."""


def call_policy(settings: Settings) -> CallPolicy:
    """The policy ``settings`` ask for. ``--cloud-qps=0`` means no client-side limit: a
    bucket so large it never makes a call wait."""
    unlimited = settings.cloud_qps <= 0
    return CallPolicy(
        qps=UNLIMITED if unlimited else settings.cloud_qps,
        burst=int(UNLIMITED) if unlimited else settings.cloud_burst,
        concurrency=settings.max_concurrent_route_operations,
        timeout=settings.cloud_call_timeout,
        max_attempts=settings.cloud_max_attempts,
        backoff_base=settings.cloud_call_backoff_base,
        backoff_cap=settings.cloud_call_backoff_cap,
    )


class CallObserver(Protocol):
    """Receives one record per attempt (for metrics); must not block."""

    def attempt(self, *, operation: str, result: str, seconds: float) -> None: ...

    def token_wait(self, *, seconds: float) -> None: ...


class _NoObserver:
    def attempt(self, *, operation: str, result: str, seconds: float) -> None:
        """Ignore the record."""

    def token_wait(self, *, seconds: float) -> None:
        """Ignore the record."""


NO_OBSERVER: CallObserver = _NoObserver()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CallStatistics:
    """Counters of a :class:`RateLimitedProvider`, for tests and metrics."""

    attempts: Mapping[tuple[str, str], int]
    token_wait_seconds: float

    def count(self, operation: str, result: str | None = None) -> int:
        """Attempts of ``operation`` (with ``result``, if given)."""
        return sum(
            n for (op, res), n in self.attempts.items() if op == operation and result in (None, res)
        )


class RateLimitedProvider:
    """A :class:`RouteProvider` that paces, bounds, times out and retries another one."""

    def __init__(
        self,
        inner: RouteProvider,
        *,
        policy: CallPolicy,
        rng: random.Random,
        observer: CallObserver = NO_OBSERVER,
    ) -> None:
        if policy.qps <= 0 or policy.burst < 1 or policy.concurrency < 1:
            raise ValueError("qps must be > 0, burst and concurrency >= 1")
        self.inner = inner
        self.policy = policy
        self._observer = observer
        self._rng = rng
        self._limiter: aiolimiter.AsyncLimiter | None = None
        self._slots: asyncio.Semaphore | None = None
        self._paused_until = 0.0
        self._attempts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._token_wait = 0.0

    def statistics(self) -> CallStatistics:
        """A snapshot of the attempt counters and the total time spent waiting for tokens."""
        return CallStatistics(attempts=dict(self._attempts), token_wait_seconds=self._token_wait)

    async def list_routes(self) -> Collection[Route]:
        """List through the gate."""
        return tuple(await self._call("list", self.inner.list_routes))

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Create through the gate; a route that already exists is success."""

        async def create() -> None:
            await self.inner.create_route(route, name_hint=name_hint)

        await self._call("create", create)

    async def delete_route(self, route: Route) -> None:
        """Delete through the gate; a route that is already gone is success."""

        async def delete() -> None:
            await self.inner.delete_route(route)

        await self._call("delete", delete)

    @property
    def supports_batch(self) -> bool:
        """Whether the wrapped provider writes whole batches (see BatchRouteProvider)."""
        return batch_capable(self.inner)

    async def apply_routes(
        self, *, deletes: Sequence[Route], creates: Sequence[tuple[Route, str]]
    ) -> BatchResult:
        """One batched write through the gate: one token, retried as a whole."""
        inner = self.inner
        if not batch_capable(inner):
            raise TypeError("the wrapped provider does not write batches")

        async def batch() -> BatchResult:
            return await inner.apply_routes(deletes=deletes, creates=creates)

        return await self._call("batch", batch)

    async def aclose(self) -> None:
        """Close the wrapped provider."""
        await self.inner.aclose()

    async def _call(self, operation: str, fn: Callable[[], Awaitable[T]]) -> T:
        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(self.policy.max_attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception(_retryable),
            sleep=asyncio.sleep,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._attempt(operation, fn)
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    async def _attempt(self, operation: str, fn: Callable[[], Awaitable[T]]) -> T:
        loop = asyncio.get_running_loop()
        if self._limiter is None or self._slots is None:
            # Created on first use: aiolimiter and semaphores bind to the running loop.
            self._limiter = _Bucket(self.policy.burst, self.policy.burst / self.policy.qps)
            # No burst credit at start: a replica that just took over from a leader whose
            # calls still count against the cloud's budget must not add a burst on top.
            self._limiter.drain(now=loop.time())
            self._slots = asyncio.Semaphore(self.policy.concurrency)
        async with self._slots:
            # A cloud's retry-after holds back every call; it may be extended while we wait.
            while (pause := self._paused_until - loop.time()) > _TICK:  # noqa: ASYNC110
                await asyncio.sleep(pause)
            waited_from = loop.time()
            await self._limiter.acquire()
            waited = loop.time() - waited_from
            self._token_wait += waited
            self._observer.token_wait(seconds=waited)
            started = loop.time()
            result = "ok"
            try:
                async with asyncio.timeout(self.policy.timeout):
                    return await fn()
            except TimeoutError:
                result = "timeout"
                raise ProviderTimeoutError(
                    f"{operation} did not answer within {self.policy.timeout:g}s"
                ) from None
            except RouteAlreadyExistsError:
                result = "already_exists"
                if operation != "create":
                    raise
                return cast("T", None)
            except RouteNotFoundError:
                result = "not_found"
                if operation != "delete":
                    raise
                return cast("T", None)
            except ProviderThrottledError as exc:
                result = "throttled"
                if exc.retry_after:
                    self._paused_until = max(self._paused_until, loop.time() + exc.retry_after)
                raise
            except ProviderTerminalError:
                result = "terminal"
                raise
            except ProviderError:
                result = "error"
                raise
            finally:
                self._attempts[(operation, result)] += 1
                self._observer.attempt(
                    operation=operation, result=result, seconds=loop.time() - started
                )

    def _wait(self, state: tenacity.RetryCallState) -> float:
        """Exponential backoff with jitter, never shorter than a cloud's ``retry_after``."""
        delay = backoff_delay(
            failures=state.attempt_number,
            base=self.policy.backoff_base,
            cap=self.policy.backoff_cap,
        ) * self._rng.uniform(0.5, 1.0)
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ProviderThrottledError) and exc.retry_after:
            delay = max(delay, exc.retry_after)
        return delay


class _Bucket(aiolimiter.AsyncLimiter):
    """aiolimiter's bucket, with its level rounded to a nanotoken after each leak.

    Without this, a float residue (a level of 9.000000000000002 in a bucket of 10) makes the
    next waiter need a few femto-seconds: on a clock that does not move between two checks
    (a coarse clock, or the virtual clock of tests and ``routectl simulate``) aiolimiter
    then re-arms its timer for "now" forever.
    """

    def _leak(self) -> None:
        super()._leak()
        self._level = round(self._level, 9)

    def drain(self, *, now: float) -> None:
        """Start full, as if ``burst`` calls had just been made: tokens accrue from ``now``."""
        self._level = float(self.max_rate)
        self._last_check = now


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and not isinstance(
        exc, ProviderTerminalError | RouteAlreadyExistsError | RouteNotFoundError
    )

"""The one gate every cloud call passes: budget, fence, concurrency, timeout, retries, and
the boundary where a plugin's surprises become errors of routectl's tree.

:class:`CloudGate` wraps a provider. Every call takes one concurrency slot and a
per-attempt timeout, and is retried by one layer (tenacity: exponential backoff with
jitter, capped attempts, terminal errors never retried). Requests are paced by the
:class:`~routectl.cloud.budget.Budget`: per request inside the plugin when its factory took the
budget, else one token per attempt here. Promises:

* no write (create, delete, batch) starts unless the :class:`~routectl.cloud.fence.Fence` admits
  it, and its timeout never outlives the lease; a write cut off without an answer (timed out,
  cancelled) is reported to the fence, which then keeps the Lease from being released;
* the per-attempt timeout bounds the cloud's time, not the wait for the budget: while a
  plugin's request waits for a token (or out a pause), the attempt's clock is stopped, so
  calls queued behind the bucket are not timed out before they are sent; when a write's
  request is done waiting, the fence is asked again (a lease lost meanwhile refuses it
  with :class:`~routectl.errors.CloudWriteFencedError`, nothing sent) and the rest of the
  timeout is cut to what the lease still covers;
* a cloud's retry-after pauses every request, capped (``--cloud-retry-after-cap``); a pause
  longer than the per-call backoff cap fails the call at once, so the sync fails visibly and
  the worker retries it when the pause is over, instead of the call hanging silently;
* anything a plugin raises that is not a :class:`~routectl.errors.ProviderError` (a
  ``KeyError`` on a malformed answer, a reset connection) becomes a transient
  ``ProviderError``: one ERROR line the first time (per operation and type), its traceback
  and the repeats only at ``-v=1``: never a crash, never a traceback per retry;
* "not found" on delete counts as success; "already exists" on create counts as success
  only when the route holding the destination is the one asked for (same destination, same
  target Node, listed as this cluster's): the plugin names it (``holder``), or, where it
  did not, one listing (shared by concurrent creates) shows it. Any other holder fails the
  create with :class:`~routectl.errors.RouteHeldError` naming it, so the Node is never
  marked routed while its traffic goes elsewhere;
* a listed entry that is not a well-typed Route (a destination that is null or a number, a
  target that is not a string) is left out of the listing, so it is never changed, with a
  WARNING once per entry and ``routectl_input_problems_total{reason="MalformedRoute"}``.

How it paces and retries is a :class:`~routectl.cloud.policy.CallPolicy`
(:func:`~routectl.cloud.policy.call_policy` derives it from the settings).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import random
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from typing import TypeVar, cast

import tenacity

from routectl.cidr import canonical
from routectl.cloud.budget import CALL_WAITS, Budget
from routectl.cloud.fence import Fence
from routectl.cloud.policy import NO_OBSERVER, CallObserver, CallPolicy, CallStatistics
from routectl.config.syntax import format_duration
from routectl.errors import (
    CloudPausedError,
    CloudWriteFencedError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    ProviderTimeoutError,
    RouteAlreadyExistsError,
    RouteHeldError,
    RouteNotFoundError,
)
from routectl.model import Route, malformed
from routectl.observe.logctx import v
from routectl.plan.problems import MALFORMED_ROUTE
from routectl.provider import BatchResult, RouteProvider, batch_capable, replace_capable
from routectl.ratelimit import backoff_delay

T = TypeVar("T")
WRITES = frozenset({"create", "delete", "batch", "replace"})
SURPRISE_VERBOSITY = 1
"""``-v`` at which a plugin's unexpected failures show their traceback and every repeat."""
MAX_TOLD = 1000
"""Distinct malformed routes logged (each once); past it they are only counted."""
_SUCCESSES = frozenset({("delete", "not_found")})
logger = logging.getLogger("routectl.cloud")


class CloudGate:
    """A :class:`RouteProvider` that paces, fences, bounds, times out and retries another."""

    def __init__(
        self,
        inner: RouteProvider,
        *,
        policy: CallPolicy,
        rng: random.Random,
        budget: Budget,
        fence: Fence,
        plugin_paces: bool = False,
        observer: CallObserver = NO_OBSERVER,
    ) -> None:
        if policy.concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.inner = inner
        self.policy = policy
        self.budget = budget
        self.fence = fence
        self.plugin_paces = plugin_paces
        """True when the plugin spends the budget on each of its requests itself."""
        self._observer = observer
        self._rng = rng
        self._slots: asyncio.Semaphore | None = None
        self._attempts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._surprises: set[tuple[str, str]] = set()
        self._malformed: set[str] = set()
        self._verifying: asyncio.Task[tuple[Route, ...]] | None = None

    def statistics(self) -> CallStatistics:
        """A snapshot of the attempt counters and the total time spent waiting for tokens."""
        return CallStatistics(
            attempts=dict(self._attempts), token_wait_seconds=self.budget.token_wait_seconds
        )

    async def list_routes(self) -> Collection[Route]:
        """List through the gate; a listed entry of the wrong shape is left out (so never
        changed), told once; an answer that is not a collection is a transient error."""

        async def listing() -> tuple[Route, ...]:
            return self._well_formed(await self.inner.list_routes())

        return await self._call("list", listing)

    def _well_formed(self, listed: Iterable[object]) -> tuple[Route, ...]:
        kept: list[Route] = []
        for entry in listed:
            why = malformed(entry)
            if why is None:
                kept.append(cast(Route, entry))
                continue
            self._observer.malformed_route()
            told = f"{entry!r:.300}"
            if told not in self._malformed and len(self._malformed) < MAX_TOLD:
                self._malformed.add(told)
                logger.warning(
                    "%s: the provider listed a route routectl cannot use (%s); it is left "
                    "out and never changed: %s",
                    MALFORMED_ROUTE,
                    why,
                    told,
                )
        return tuple(kept)

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Create through the gate; "already exists" is success only if the route holding
        the destination is ``route`` (else :class:`RouteHeldError` naming the holder)."""

        async def create() -> None:
            await self.inner.create_route(route, name_hint=name_hint)

        try:
            await self._call("create", create)
        except RouteAlreadyExistsError as exc:
            await self._settle_conflict(route, exc)

    async def _settle_conflict(self, route: Route, exc: RouteAlreadyExistsError) -> None:
        """Return if the destination's holder is ``route``; raise RouteHeldError if not."""
        holder: object = getattr(exc, "holder", None)
        if holder is None or malformed(holder) is not None:
            holder = await self._listed_holder(route)
        held = cast("Route | None", holder)
        if held is not None and _is_route(held, route):
            return
        raise RouteHeldError(
            f"route to {route.destination_cidr} for node {route.target_node} not created: the "
            f"destination is held by {_describe(held)} ({exc})",
            holder=held,
        ) from exc

    async def _listed_holder(self, route: Route) -> Route | None:
        """The listed route to ``route``'s destination (our listings show ours only); one
        listing serves every create that asks while it runs."""
        if self._verifying is None or self._verifying.done():
            self._verifying = asyncio.ensure_future(self._call("list", self._verify_listing))
            self._verifying.add_done_callback(_retrieved)
        listed = await asyncio.shield(self._verifying)
        wanted = canonical(route.destination_cidr)
        candidates = [r for r in listed if _canonical(r.destination_cidr) == wanted]
        return next((r for r in candidates if _is_route(r, route)), next(iter(candidates), None))

    async def _verify_listing(self) -> tuple[Route, ...]:
        return self._well_formed(await self.inner.list_routes())

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
        """One batched write through the gate, retried as a whole."""
        inner = self.inner
        if not batch_capable(inner):
            raise TypeError("the wrapped provider does not write batches")

        async def batch() -> BatchResult:
            return await inner.apply_routes(deletes=deletes, creates=creates)

        return await self._call("batch", batch)

    @property
    def supports_replace(self) -> bool:
        """Whether the wrapped provider replaces routes in one call (ReplaceRouteProvider)."""
        return replace_capable(self.inner)

    async def replace_route(self, old: Route, new: Route, *, name_hint: str) -> None:
        """One replace through the gate (a write: fenced, paced, retried)."""
        inner = self.inner
        if not replace_capable(inner):
            raise TypeError("the wrapped provider does not replace routes")

        async def replace() -> None:
            await inner.replace_route(old, new, name_hint=name_hint)

        await self._call("replace", replace)

    async def aclose(self) -> None:
        """Close the wrapped provider."""
        await self.inner.aclose()

    async def _call(self, operation: str, fn: Callable[[], Awaitable[T]]) -> T:
        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(self.policy.max_attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception(self._retryable),
            sleep=asyncio.sleep,
            reraise=True,
        )
        clock = asyncio.get_running_loop().time
        started = clock()
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._attempt(operation, fn)
        except ProviderTimeoutError as exc:
            tries = int(retrying.statistics.get("attempt_number", 1))
            if tries > 1:  # say what the caller waited, not only the last attempt's timeout
                spent = format_duration(clock() - started)
                raise ProviderTimeoutError(f"{exc} ({tries} attempts over {spent})") from exc
            raise
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    async def _attempt(self, operation: str, fn: Callable[[], Awaitable[T]]) -> T:
        if self._slots is None:  # created on first use: a semaphore binds to the loop
            self._slots = asyncio.Semaphore(self.policy.concurrency)
        async with self._slots:
            if not self.plugin_paces:
                await self.budget.spend(operation)
            clock = asyncio.get_running_loop().time
            started, outcome = clock(), "ok"
            try:
                return await self._run(operation, fn)
            except ProviderError as exc:
                outcome = _outcome(exc)
                if (operation, outcome) in _SUCCESSES:
                    return cast("T", None)
                raise
            finally:
                self._attempts[(operation, outcome)] += 1
                self._observer.attempt(
                    operation=operation, result=outcome, seconds=clock() - started
                )

    async def _run(self, operation: str, fn: Callable[[], Awaitable[T]]) -> T:
        """One attempt: fenced and timed out; every failure leaves as a ProviderError."""
        timeout = self.policy.timeout
        if operation in WRITES:
            timeout = self.fence.admit(timeout=timeout, what=operation, error=CloudWriteFencedError)
        try:
            async with asyncio.timeout(timeout) as scope:
                fence = self.fence if operation in WRITES else None
                deadline = _Deadline(scope, fence=fence, what=operation)
                waits = CALL_WAITS.set(deadline)
                try:
                    return await fn()
                finally:
                    CALL_WAITS.reset(waits)
                    deadline.close()
        except TimeoutError:
            if operation in WRITES:
                self.fence.cut_off()
            raise ProviderTimeoutError(f"{operation} did not answer within {timeout:g}s") from None
        except asyncio.CancelledError:
            if operation in WRITES:
                self.fence.cut_off()  # the cloud may still carry it out
            raise
        except ProviderThrottledError as exc:
            asked = exc.retry_after
            granted = self.budget.pause(asked, what=f"{operation}: {exc}")
            if asked is not None and asked > self.policy.backoff_cap:
                raise CloudPausedError(
                    f"{exc} (the cloud asked to wait {_wait(asked)}; calls wait "
                    f"{format_duration(granted)})",
                    retry_after=granted,
                ) from exc
            raise
        except ProviderError:
            raise
        except Exception as exc:
            raise self._surprise(operation, exc) from exc

    def _surprise(self, operation: str, exc: Exception) -> ProviderError:
        """A plugin raised outside the tree: say so once (the traceback only at ``-v``),
        make it transient."""
        what = f"{type(exc).__name__}: {exc}"
        key = (operation, type(exc).__name__)
        if key not in self._surprises:
            self._surprises.add(key)
            logger.error(
                "The provider failed unexpectedly in %s (%s); treating it as a transient "
                "error and retrying (a bug of the plugin: its traceback is logged at -v=%d)",
                operation,
                what,
                SURPRISE_VERBOSITY,
            )
            logger.log(
                v(SURPRISE_VERBOSITY),
                "The provider's unexpected failure in %s",
                operation,
                exc_info=exc,
            )
        else:
            logger.log(
                v(SURPRISE_VERBOSITY),
                "The provider failed unexpectedly in %s again: %s",
                operation,
                what,
            )
        return ProviderError(f"{operation}: unexpected failure in the provider: {what}")

    def _retryable(self, exc: BaseException) -> bool:
        """Transient errors are retried in the call; a long pause fails it at once."""
        return isinstance(exc, ProviderError) and not isinstance(
            exc,
            ProviderTerminalError
            | RouteAlreadyExistsError
            | RouteNotFoundError
            | CloudWriteFencedError
            | CloudPausedError,
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


class _Deadline:
    """One attempt's timeout, stopped while its requests wait for the budget; a write's
    fence asked again when they are done waiting (see the module's promises)."""

    def __init__(self, scope: asyncio.Timeout, *, fence: Fence | None, what: str) -> None:
        self._scope = scope
        self._fence = fence
        self._what = what
        self._waiting = 0
        self._left = 0.0
        self._closed = False

    def close(self) -> None:
        """The attempt is over: a task it started that still spends changes nothing."""
        self._closed = True

    def stop(self) -> None:
        """A request starts waiting: keep the time left, stop the clock."""
        self._waiting += 1
        if self._waiting > 1 or self._closed or self._scope.expired():
            return
        when = self._scope.when()
        now = asyncio.get_running_loop().time()
        self._left = math.inf if when is None else max(0.0, when - now)
        self._scope.reschedule(None)

    def resume(self, *, sending: bool) -> None:
        """The last waiting request is done waiting: the clock runs again with the time
        left, cut to the lease for a write about to be sent (refused if it is over)."""
        self._waiting -= 1
        if self._waiting > 0 or self._closed or self._scope.expired():
            return
        loop = asyncio.get_running_loop()
        left = self._left
        if sending and self._fence is not None:
            try:
                left = self._fence.admit(timeout=left, what=self._what, error=CloudWriteFencedError)
            except CloudWriteFencedError:
                self._scope.reschedule(loop.time())  # whatever the plugin does with it
                raise
        self._scope.reschedule(None if math.isinf(left) else loop.time() + left)


def _wait(seconds: float) -> str:
    """A cloud's wait hint in words: Go's duration spelling, or "forever"."""
    return "forever" if math.isinf(seconds) else format_duration(seconds)


def _retrieved(task: asyncio.Task[tuple[Route, ...]]) -> None:
    """Its waiters re-raise a shared listing's error; nobody left waiting is no warning."""
    if not task.cancelled():
        task.exception()


def _canonical(cidr: str) -> str:
    try:
        return canonical(cidr)
    except ValueError:
        return cidr


def _is_route(holder: Route, route: Route) -> bool:
    """Whether the route holding a destination is ``route``: same destination and Node."""
    return (
        bool(holder.target_node)
        and holder.target_node == route.target_node
        and not holder.blackhole
        and _canonical(holder.destination_cidr) == _canonical(route.destination_cidr)
    )


def _describe(holder: Route | None) -> str:
    """Who holds a destination, in words for a log line and an Event."""
    if holder is None:
        return (
            "a route this cluster does not list as its own (another cluster's, an "
            "operator's, or one that is not there yet)"
        )
    name = f" {holder.name}" if holder.name else ""
    if holder.blackhole:
        return f"the blackhole route{name} (its target is gone)"
    if holder.target_node:
        return f"the route{name} to node {holder.target_node}"
    return f"the route{name}, which leads to no Node of this cluster"


def _outcome(exc: ProviderError) -> str:
    """The ``result`` label of an attempt that raised ``exc``."""
    match exc:
        case ProviderTimeoutError():
            return "timeout"
        case RouteAlreadyExistsError():
            return "already_exists"
        case RouteNotFoundError():
            return "not_found"
        case ProviderThrottledError():
            return "throttled"
        case ProviderTerminalError():
            return "terminal"
        case CloudWriteFencedError():
            return "fenced"
    return "error"

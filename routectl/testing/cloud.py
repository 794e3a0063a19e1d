"""A simulated cloud with a route API that behaves like the real ones, and its provider.

:class:`FakeCloud` keeps routes per cluster in memory, keyed by destination CIDR like an AWS
route table (one route per destination). It models what makes route controllers hard in
production: latency per operation, a server-side request budget that answers "throttled"
with a retry-after (Hetzner's 3600/h, AWS's throttling), a route quota (AWS's 50 per
table), injected faults (errors, hangs, calls that succeed but never answer, a seeded
failure rate), blackholes and routes made by others. Every request is logged with its loop
time, so tests and benchmarks can count calls and prove a budget was never exceeded.

:class:`~routectl.testing.fake_provider.FakeProvider` is the ``fake`` provider plugin over
such a cloud. Time is the running loop's clock, so everything here fast-forwards under
looptime.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from routectl.cidr import canonical
from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import BatchResult
from routectl.ratelimit import TokenBucket

if TYPE_CHECKING:
    from routectl.testing.fake_provider import FakeProvider

HANG_SECONDS = 24 * 3600.0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CloudSettings:
    """How the simulated cloud behaves."""

    list_latency: float = 0.0
    write_latency: float = 0.0
    qps: float | None = None
    """Server-side budget in requests per second; None means unlimited."""
    burst: int = 10
    route_quota: int | None = None
    """Routes one cluster may hold; a create beyond it fails terminally."""
    failure_rate: float = 0.0
    """Share of calls answered with a transient error, drawn from ``seed``."""
    seed: int = 0
    enable_node_addresses: bool = False
    """Report node addresses on listed routes, so address changes replace routes."""
    list_lag: float = 0.0
    """Eventual consistency: a listing shows the table as it was this many seconds ago."""
    whole_table: bool = False
    """The table is one object (like Azure route tables, OpenStack router routes): the
    provider also accepts a whole batch of changes in one write."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CloudCall:
    """One request the cloud received."""

    time: float
    cluster: str
    operation: str
    outcome: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RouteChange:
    """A route the cloud created or deleted (successfully), and when."""

    time: float
    cluster: str
    operation: str
    route: Route


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """What the cloud does instead of answering normally, for one call."""

    error: ProviderError | None = None
    hang: bool = False
    """Never answer (the client's timeout fires); nothing is changed."""
    hang_after_success: bool = False
    """Apply the change, then never answer."""


_NO_FAULT = Fault()


class FakeCloud:
    """In-memory routes of any number of clusters, behind a realistic API."""

    def __init__(self, settings: CloudSettings | None = None) -> None:
        self.settings = settings or CloudSettings()
        self.calls: list[CloudCall] = []
        self.listeners: list[Callable[[RouteChange], None]] = []
        """Called on every successful create and delete (the simulator measures with them)."""
        self.in_flight = 0
        self.max_in_flight = 0
        self.batches = 0
        """Whole-table writes received (each also counted as a create or delete call)."""
        self._routes: dict[str, dict[str, Route]] = collections.defaultdict(dict)
        self._recent: dict[str, collections.deque[RouteChange]] = collections.defaultdict(
            collections.deque
        )
        self._faults: dict[str, collections.deque[Fault]] = collections.defaultdict(
            collections.deque
        )
        self._rng = random.Random(self.settings.seed)  # noqa: S311 -- simulation, not crypto
        self._budget = (
            TokenBucket(rate=self.settings.qps, burst=self.settings.burst, stamp=-1.0)
            if self.settings.qps
            else None
        )

    def provider(self, cluster_name: str) -> FakeProvider:
        """A provider of ``cluster_name``'s routes in this cloud."""
        from routectl.testing.fake_provider import FakeProvider  # noqa: PLC0415 -- a cycle

        return FakeProvider(cluster_name=cluster_name, options={}, cloud=self)

    def routes(self, cluster: str) -> list[Route]:
        """The routes of ``cluster`` as they are now (no call is logged)."""
        return [self._listed(route) for route in self._routes[cluster].values()]

    def listing(self, cluster: str) -> list[Route]:
        """What a ListRoutes answers: the table ``list_lag`` seconds ago."""
        lag = self.settings.list_lag
        recent = self._recent[cluster]
        if not lag or not recent:
            return self.routes(cluster)
        since = asyncio.get_running_loop().time() - lag
        while recent and recent[0].time < since:
            recent.popleft()
        table = dict(self._routes[cluster])
        for change in reversed(recent):
            key = canonical(change.route.destination_cidr)
            if change.operation == "create":
                table.pop(key, None)
            else:
                table[key] = change.route
        return [self._listed(route) for route in table.values()]

    def add_route(self, cluster: str, route: Route) -> None:
        """Put a route in place behind the controller's back (another actor, or drift)."""
        self._routes[cluster][canonical(route.destination_cidr)] = route

    def remove_route(self, cluster: str, destination_cidr: str) -> None:
        """Remove a route behind the controller's back (drift)."""
        self._routes[cluster].pop(canonical(destination_cidr), None)

    def blackhole_node(self, cluster: str, node: str) -> None:
        """Mark the routes to ``node`` as blackholes, as a cloud does when an instance is gone."""
        table = self._routes[cluster]
        for key, route in table.items():
            if route.target_node == node:
                table[key] = dataclasses.replace(route, target_node="", blackhole=True)

    def fail_next(self, operation: str, fault: Fault, *, times: int = 1) -> None:
        """Answer the next ``times`` calls of ``operation`` (list, create, delete) so."""
        self._faults[operation].extend([fault] * times)

    def count(self, operation: str | None = None, outcome: str | None = None) -> int:
        """Calls received, filtered by operation and outcome."""
        return sum(
            1
            for call in self.calls
            if operation in (None, call.operation) and outcome in (None, call.outcome)
        )

    async def serve(self, cluster: str, operation: str, action: Callable[[], object]) -> object:
        """Receive one request: budget, faults, latency, then the change itself."""
        now = asyncio.get_running_loop().time()
        outcome = "ok"
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self._admit(now)
            fault = self._next_fault(operation)
            if fault.error is not None or fault.hang:
                outcome = "hang" if fault.hang else "error"
                await asyncio.sleep(HANG_SECONDS if fault.hang else 0)
                raise fault.error or ProviderError("injected hang ended")
            await asyncio.sleep(self._latency(operation))
            result = action()
            if fault.hang_after_success:
                outcome = "hang"
                await asyncio.sleep(HANG_SECONDS)
        except ProviderThrottledError:
            # "throttled" means the server-side budget refused the call; an injected
            # throttling fault stays "error", so budget overruns can be told apart.
            outcome = "throttled" if outcome == "ok" else outcome
            raise
        except (RouteAlreadyExistsError, RouteNotFoundError):
            outcome = "conflict"
            raise
        except ProviderTerminalError:
            outcome = "terminal"
            raise
        else:
            return result
        finally:
            self.in_flight -= 1
            self.calls.append(
                CloudCall(time=now, cluster=cluster, operation=operation, outcome=outcome)
            )

    def _admit(self, now: float) -> None:
        """Spend one request of the server-side budget, or answer "throttled"."""
        if self._budget is not None and (wait := self._budget.try_take(now=now)) > 0:
            raise ProviderThrottledError(
                f"rate limit exceeded ({self.settings.qps:g} req/s)", retry_after=round(wait, 3)
            )

    def _next_fault(self, operation: str) -> Fault:
        queued = self._faults[operation]
        if queued:
            return queued.popleft()
        rate = self.settings.failure_rate
        if rate and self._rng.random() < rate:
            return Fault(error=ProviderError("injected: 503 service unavailable"))
        return _NO_FAULT

    def _latency(self, operation: str) -> float:
        if operation == "list":
            return self.settings.list_latency
        return self.settings.write_latency

    def _listed(self, route: Route) -> Route:
        if self.settings.enable_node_addresses:
            return dataclasses.replace(route, enable_node_addresses=True)
        return dataclasses.replace(route, target_node_addresses=(), enable_node_addresses=False)

    def _create(self, cluster: str, route: Route, name_hint: str) -> None:
        table = self._routes[cluster]
        key = canonical(route.destination_cidr)
        if key in table:
            raise RouteAlreadyExistsError(f"route to {route.destination_cidr} already exists")
        quota = self.settings.route_quota
        if quota is not None and len(table) >= quota:
            raise ProviderTerminalError(f"route quota of {quota} routes per table reached")
        digest = hashlib.sha256(key.encode()).hexdigest()[:8]
        table[key] = dataclasses.replace(
            route,
            name=f"{cluster}-{name_hint}-{digest}",
            blackhole=False,
            enable_node_addresses=False,
        )
        self._notify(cluster, "create", table[key])

    def _delete(self, cluster: str, route: Route) -> None:
        table = self._routes[cluster]
        key = canonical(route.destination_cidr)
        existing = table.get(key)
        if existing is None or existing.target_node != route.target_node:
            raise RouteNotFoundError(
                f"no route to {route.destination_cidr} via {route.target_node or 'nothing'}"
            )
        del table[key]
        self._notify(cluster, "delete", existing)

    def apply(
        self, cluster: str, deletes: Sequence[Route], creates: Sequence[tuple[Route, str]]
    ) -> BatchResult:
        """Apply a batch to one table (the body of a whole-table write); per-route results."""
        self.batches += 1
        failed_deletes: dict[int, ProviderError] = {}
        failed_creates: dict[int, ProviderError] = {}
        for index, route in enumerate(deletes):
            try:
                self._delete(cluster, route)
            except RouteNotFoundError:
                pass
            except ProviderError as exc:
                failed_deletes[index] = exc
        for index, (route, hint) in enumerate(creates):
            try:
                self._create(cluster, route, hint)
            except RouteAlreadyExistsError:
                pass
            except ProviderError as exc:
                failed_creates[index] = exc
        return BatchResult(failed_deletes=failed_deletes, failed_creates=failed_creates)

    def _notify(self, cluster: str, operation: str, route: Route) -> None:
        change = RouteChange(
            time=asyncio.get_running_loop().time(),
            cluster=cluster,
            operation=operation,
            route=route,
        )
        if self.settings.list_lag:
            self._recent[cluster].append(change)
        for listener in self.listeners:
            listener(change)

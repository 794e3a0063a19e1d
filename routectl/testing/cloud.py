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
import random
from collections.abc import Callable, Sequence

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
from routectl.testing.table import RouteChange, RouteTable

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
    replace: bool = False
    """The cloud can repoint a route in one call (like AWS's ReplaceRoute)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CloudCall:
    """One request the cloud received."""

    time: float
    cluster: str
    operation: str
    outcome: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """What the cloud does instead of answering normally, for one call."""

    error: ProviderError | None = None
    hang: bool = False
    """Never answer (the client's timeout fires); nothing is changed."""
    hang_after_success: bool = False
    """Apply the change, then never answer."""
    dropped: bool = False
    """Answer a create as done and keep nothing (a cloud that acknowledges a write and does
    not carry it out)."""


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
        self._tables: dict[str, RouteTable] = {}
        self._faults: dict[str, collections.deque[Fault]] = collections.defaultdict(
            collections.deque
        )
        self._rng = random.Random(self.settings.seed)  # noqa: S311 -- simulation, not crypto
        self._budget = (
            TokenBucket(rate=self.settings.qps, burst=self.settings.burst, stamp=-1.0)
            if self.settings.qps
            else None
        )

    def table(self, cluster: str) -> RouteTable:
        """The route table of ``cluster`` (made empty on first use)."""
        if cluster not in self._tables:
            self._tables[cluster] = RouteTable(
                cluster=cluster,
                quota=self.settings.route_quota,
                list_lag=self.settings.list_lag,
                enable_node_addresses=self.settings.enable_node_addresses,
                notify=self._notify,
            )
        return self._tables[cluster]

    def clusters(self) -> list[str]:
        """The clusters that have a route table here."""
        return sorted(self._tables)

    def routes(self, cluster: str) -> list[Route]:
        """The routes of ``cluster`` as they are now (no call is logged)."""
        return self.table(cluster).routes()

    def listing(self, cluster: str) -> list[Route]:
        """What a ListRoutes answers: the table ``list_lag`` seconds ago."""
        return self.table(cluster).listing()

    def add_route(self, cluster: str, route: Route) -> None:
        """Put a route in place behind the controller's back (another actor, or drift)."""
        self.table(cluster).put(route)

    def remove_route(self, cluster: str, destination_cidr: str) -> None:
        """Remove a route behind the controller's back (drift)."""
        self.table(cluster).remove(destination_cidr)

    def blackhole_node(self, cluster: str, node: str) -> None:
        """Mark the routes to ``node`` as blackholes, as a cloud does when an instance is gone."""
        self.table(cluster).blackhole(node)

    def create(self, cluster: str, route: Route, name_hint: str) -> Route:
        """Create a route in ``cluster``'s table (the body of a create request)."""
        return self.table(cluster).create(route, name_hint)

    def delete(self, cluster: str, route: Route) -> None:
        """Delete a route from ``cluster``'s table (the body of a delete request)."""
        self.table(cluster).delete(route)

    def replace(self, cluster: str, old: Route, new: Route) -> Route:
        """Repoint a route of ``cluster``'s table (the body of a replace request)."""
        return self.table(cluster).replace(old, new)

    def apply(
        self, cluster: str, deletes: Sequence[Route], creates: Sequence[tuple[Route, str]]
    ) -> BatchResult:
        """Apply a batch to one table (the body of a whole-table write); per-route results."""
        self.batches += 1
        return self.table(cluster).apply(deletes, creates)

    def fail_next(self, operation: str, fault: Fault, *, times: int = 1, after: int = 0) -> None:
        """Answer the next ``times`` calls of ``operation`` (list, create, delete; ``write``:
        any but list; ``*``: any) so, after letting ``after`` of them through."""
        self._faults[operation].extend([_NO_FAULT] * after + [fault] * times)

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
            if fault.dropped and isinstance(result, Route):
                self.table(cluster).remove(result.destination_cidr)
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
        writes = self._faults["write"] if operation != "list" else collections.deque()
        for queued in (self._faults[operation], writes, self._faults["*"]):
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

    def _notify(self, change: RouteChange) -> None:
        for listener in self.listeners:
            listener(change)

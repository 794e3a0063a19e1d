"""One cluster's route table in the simulated cloud, keyed by destination like AWS's.

A table holds at most one route per destination CIDR (canonical). Creating a route to a
destination that is taken fails with "already exists", naming the route that holds it (as
a listing shows it); deleting checks destination *and*
target, like a cloud that deletes by destination would not (so a late delete of a CIDR
another Node now holds fails as "not found" instead of removing that Node's route). A
route quota makes creates beyond it fail terminally. ``list_lag`` makes a listing show the
table as it was that many seconds ago (eventual consistency). Every change is reported to
``notify`` with its loop time. Synchronous: the cloud around it models latency and faults.
A route unchanged since the last listing is listed as the same (immutable) record, as a
plugin's cache of unchanged rows would give it: listing an idle table every 10 s for hours
in a simulation then costs a look-up per row, not a new record.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib
from collections.abc import Callable, Sequence

from routectl.cidr import canonical
from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import BatchResult


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RouteChange:
    """A route the cloud created or deleted (successfully), and when."""

    time: float
    cluster: str
    operation: str
    route: Route


class RouteTable:
    """The routes of one cluster."""

    def __init__(
        self,
        *,
        cluster: str,
        quota: int | None,
        list_lag: float,
        enable_node_addresses: bool,
        notify: Callable[[RouteChange], None],
    ) -> None:
        self.cluster = cluster
        self._quota = quota
        self._lag = list_lag
        self._addresses = enable_node_addresses
        self._notify = notify
        self._routes: dict[str, Route] = {}
        self._recent: collections.deque[RouteChange] = collections.deque()
        self._shown: dict[int, tuple[Route, Route]] = {}
        """By id of a stored route: the route and how a listing shows it."""

    def routes(self) -> list[Route]:
        """The routes as they are now."""
        return [self._listed(route) for route in self._routes.values()]

    def listing(self) -> list[Route]:
        """What a ListRoutes answers: the table ``list_lag`` seconds ago."""
        if not self._lag or not self._recent:
            return self.routes()
        since = asyncio.get_running_loop().time() - self._lag
        while self._recent and self._recent[0].time < since:
            self._recent.popleft()
        table = dict(self._routes)
        for change in reversed(self._recent):
            key = canonical(change.route.destination_cidr)
            if change.operation == "create":
                table.pop(key, None)
            else:
                table[key] = change.route
        return [self._listed(route) for route in table.values()]

    def put(self, route: Route) -> None:
        """Put a route in place behind the controller's back (another actor, or drift)."""
        self._routes[canonical(route.destination_cidr)] = route

    def remove(self, destination_cidr: str) -> None:
        """Remove a route behind the controller's back (drift)."""
        self._routes.pop(canonical(destination_cidr), None)

    def blackhole(self, node: str) -> None:
        """Mark the routes to ``node`` as blackholes, as a cloud does when it is gone."""
        for key, route in self._routes.items():
            if route.target_node == node:
                self._routes[key] = dataclasses.replace(route, target_node="", blackhole=True)

    def create(self, route: Route, name_hint: str) -> Route:
        """Create ``route``, named from the cluster, the hint and the destination."""
        key = canonical(route.destination_cidr)
        if key in self._routes:
            holder = self._listed(self._routes[key])
            raise RouteAlreadyExistsError(
                f"route to {route.destination_cidr} already exists", holder=holder
            )
        if self._quota is not None and len(self._routes) >= self._quota:
            raise ProviderTerminalError(f"route quota of {self._quota} routes per table reached")
        digest = hashlib.sha256(key.encode()).hexdigest()[:8]
        made = dataclasses.replace(
            route,
            name=f"{self.cluster}-{name_hint}-{digest}",
            blackhole=False,
            enable_node_addresses=False,
        )
        self._routes[key] = made
        self._changed("create", made)
        return made

    def delete(self, route: Route) -> None:
        """Delete the route to ``route``'s destination, if it targets the same node."""
        key = canonical(route.destination_cidr)
        existing = self._routes.get(key)
        if existing is None or existing.target_node != route.target_node:
            raise RouteNotFoundError(
                f"no route to {route.destination_cidr} via {route.target_node or 'nothing'}"
            )
        del self._routes[key]
        self._changed("delete", existing)

    def replace(self, old: Route, new: Route) -> Route:
        """Repoint the route to ``old``'s destination at ``new``'s target (one change)."""
        key = canonical(old.destination_cidr)
        existing = self._routes.get(key)
        if existing is None or existing.target_node != old.target_node:
            raise RouteNotFoundError(
                f"no route to {old.destination_cidr} via {old.target_node or 'nothing'}"
            )
        made = dataclasses.replace(
            existing,
            target_node=new.target_node,
            target_node_addresses=new.target_node_addresses,
            blackhole=False,
        )
        self._routes[key] = made
        self._changed("delete", existing)
        self._changed("create", made)
        return made

    def apply(self, deletes: Sequence[Route], creates: Sequence[tuple[Route, str]]) -> BatchResult:
        """Apply a batch (the body of a whole-table write); per-route results.

        A delete of a route that is gone, and a create of a route already there with the
        same target, succeed; a create over another target's route is reported failed.
        """
        failed_deletes: dict[int, ProviderError] = {}
        failed_creates: dict[int, ProviderError] = {}
        for index, route in enumerate(deletes):
            try:
                self.delete(route)
            except RouteNotFoundError:
                pass
            except ProviderError as exc:
                failed_deletes[index] = exc
        for index, (route, hint) in enumerate(creates):
            try:
                self.create(route, hint)
            except RouteAlreadyExistsError as exc:
                held = self._routes[canonical(route.destination_cidr)]
                if held.target_node != route.target_node or held.blackhole:
                    failed_creates[index] = exc  # another target holds it: not made
            except ProviderError as exc:
                failed_creates[index] = exc
        return BatchResult(failed_deletes=failed_deletes, failed_creates=failed_creates)

    def _listed(self, route: Route) -> Route:
        hit = self._shown.get(id(route))
        if hit is not None and hit[0] is route:
            return hit[1]
        if self._addresses:
            shown = dataclasses.replace(route, enable_node_addresses=True)
        else:
            shown = dataclasses.replace(
                route, target_node_addresses=(), enable_node_addresses=False
            )
        if len(self._shown) > 2 * len(self._routes) + 64:
            self._shown.clear()  # routes gone long ago: let them go
        self._shown[id(route)] = (route, shown)
        return shown

    def _changed(self, operation: str, route: Route) -> None:
        change = RouteChange(
            time=asyncio.get_running_loop().time(),
            cluster=self.cluster,
            operation=operation,
            route=route,
        )
        if self._lag:
            self._recent.append(change)
        self._notify(change)

"""The scope of a change: which Nodes and routes a change to some Nodes can affect.

Planning only the scope gives the same creates and deletes as planning the whole cluster
(property-tested against :func:`routectl.plan.reconcile.plan`), so a sync's cost follows the
change, not the cluster. :class:`RouteIndex` finds a scope's routes without scanning every
route. Pure: no I/O, no clock, no logging.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from routectl.cidr import canonical
from routectl.model import NodeView, Route
from routectl.plan.cidr_index import ClaimIndex

_Held = Route | list[Route]
"""One route, or the routes of a key held by more than one (most keys hold one: a list
each would be 130,000 more objects in a large cluster, for the collector to walk)."""


def _put(table: dict[str, _Held], key: str, route: Route) -> None:
    held = table.get(key)
    if held is None:
        table[key] = route
    elif isinstance(held, list):
        held.append(route)
    else:
        table[key] = [held, route]


def _take(table: dict[str, _Held], key: str, route: Route) -> None:
    held = table.get(key)
    if held is route:
        del table[key]
    elif isinstance(held, list):
        for position, candidate in enumerate(held):
            if candidate is route:
                del held[position]
                break


def _routes(table: dict[str, _Held], key: str) -> list[Route] | tuple[Route, ...]:
    held = table.get(key)
    if held is None:
        return ()
    return held if isinstance(held, list) else (held,)


class RouteIndex:
    """Listed routes by target Node and by canonical destination, kept up to date by adds
    and removes, so the scope of a change is found without scanning every route."""

    def __init__(self, routes: Iterable[Route] = ()) -> None:
        self._by_target: dict[str, _Held] = {}
        self._by_cidr: dict[str, _Held] = {}
        for route in routes:  # a fresh listing of a large cluster comes here
            _put(self._by_target, route.target_node, route)
            _put(self._by_cidr, canonical(route.destination_cidr), route)

    def add(self, route: Route) -> None:
        """Index ``route``."""
        _put(self._by_target, route.target_node, route)
        _put(self._by_cidr, canonical(route.destination_cidr), route)

    def remove(self, route: Route) -> None:
        """Forget this very route object (an equal duplicate stays)."""
        _take(self._by_target, route.target_node, route)
        _take(self._by_cidr, canonical(route.destination_cidr), route)

    def related(self, names: Collection[str], cidrs: Iterable[str]) -> list[Route]:
        """Routes targeting one of ``names`` or going to one of ``cidrs``, as often as listed."""
        found = [route for name in names for route in _routes(self._by_target, name)]
        found.extend(
            route
            for cidr in cidrs
            for route in _routes(self._by_cidr, cidr)
            if route.target_node not in names  # those came in through their target
        )
        return found


def scope(
    *,
    changed: Collection[str],
    nodes: Mapping[str, NodeView],
    claims: Mapping[str, Collection[str]] | ClaimIndex,
    routes: Iterable[Route] | RouteIndex,
    changed_cidrs: Collection[str] = (),
) -> tuple[list[NodeView], list[Route]]:
    """The Nodes and routes a change to the Nodes ``changed`` can affect.

    Planning only these gives the same creates and deletes as planning the whole cluster,
    provided ``routes`` already reflect every other Node (the last plan was applied): the
    scope holds the changed Nodes, every Node claiming a pod CIDR they claim (or claimed:
    ``changed_cidrs``), and every route targeting one of them or going to one of those CIDRs,
    closed under "a route's target is a Node". ``claims`` maps canonical CIDR -> Node names;
    a :class:`~routectl.plan.cidr_index.ClaimIndex` also brings in the Nodes whose CIDRs overlap the
    changed ones, so overlaps are reported as they appear. Given a :class:`RouteIndex`, its
    cost follows the change, not the cluster.
    """
    names = set(changed)
    cidrs = {canonical(c) for c in changed_cidrs}
    index = routes if isinstance(routes, RouteIndex) else RouteIndex(routes)
    if isinstance(claims, ClaimIndex):
        mine = cidrs | {canonical(c) for n in names if (v := nodes.get(n)) for c in v.pod_cidrs}
        names.update(h for c in mine for other in claims.overlapping(c) for h in claims.get(other))
    while True:
        for name in list(names):
            node = nodes.get(name)
            if node is not None:
                cidrs.update(canonical(c) for c in node.pod_cidrs)
        for cidr in cidrs:
            names.update(claims.get(cidr, ()))
        picked = index.related(names, cidrs)
        grown = {r.target_node for r in picked if r.target_node in nodes} - names
        if not grown:
            return [nodes[n] for n in sorted(names) if n in nodes], picked
        names |= grown

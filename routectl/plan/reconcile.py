"""The pure route planner: which routes to create and delete, and which conditions to write.

This is upstream's ``reconcile`` (k8s.io/cloud-provider route controller) split from its
side effects. The rules are upstream's, with the improvements DESIGN.md allows:

* A route is *kept* when a listed route targets the node with the same CIDR; it is *added*
  when none does; it is *updated* (deleted, then re-created) when the provider reports node
  addresses (``enable_node_addresses``) and they differ from the Node's as sets, or when the
  listed route is a blackhole.
* A listed route is deleted only if it is inside a cluster CIDR (:func:`is_responsible`) and
  it is a blackhole, or no Node wants it, or it is being updated. Routes whose CIDR does not
  parse are never deleted.
* CIDRs are compared in canonical form; a pod CIDR listed twice yields one route; a pod CIDR
  claimed by two Nodes goes to the Node whose name sorts first, deterministically; a pod
  CIDR outside every cluster CIDR gets no route (it could never be deleted again).
* A create that replaces a route with the same destination names it in ``replaces``: the
  delete must finish first. Everything else may run concurrently.
* A Node that exists but was never seen readable (``unknown``: ``spec: null``, ``podCIDRs``
  not a list) is neither routed nor unrouted: routes targeting it are never deleted nor
  replaced (a create that would replace one is withheld, reported on the Node that wants
  the CIDR), and each such Node is reported once as ``UnknownNode``.
* Malformed input never raises: it is left out of the plan and reported in ``problems``
  (:mod:`routectl.plan.problems` words them); overlapping pod CIDRs of two Nodes are both routed
  and reported on both.

No I/O, no clock, no logging: the caller logs, records Events and talks to the cloud.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
from collections.abc import Iterable, Mapping, Sequence

from routectl.cidr import Clusters, Network, canonical, network_or_none, span
from routectl.model import NodeView, Route
from routectl.plan.cidr_index import overlaps
from routectl.plan.conditions import (
    CONDITION_NO_ROUTE_CREATED,
    CONDITION_ROUTE_CREATED,
    desired_condition,
    routes_created,
)

__all__ = [
    "CONDITION_NO_ROUTE_CREATED",
    "CONDITION_ROUTE_CREATED",
    "Action",
    "Plan",
    "Problem",
    "RouteCreate",
    "desired_condition",
    "is_responsible",
    "needs_sync",
    "plan",
    "routes_created",
    "touches_cluster",
]

from routectl.plan.problems import (
    Problem,
    claimed_twice,
    duplicate_pod_cidr,
    foreign_route,
    held_by_unknown,
    invalid_pod_cidr,
    outside_cluster,
    overlapping_pod_cidrs,
    unknown_node,
    unparsable_route,
)


class Action(enum.Enum):
    """What a Node's pod CIDR needs, as upstream names it."""

    KEEP = "keep"
    ADD = "add"
    UPDATE = "update"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RouteCreate:
    """A route to create, with the hint the provider may use to name it (the node's UID).

    ``replaces`` lists planned deletes with the same destination: they must succeed before
    this create is attempted (upstream's delete-before-create for updates, per route).
    """

    route: Route
    name_hint: str
    replaces: tuple[Route, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """The changes that bring the cloud's routes in line with the Nodes.

    ``routed_nodes`` are the Nodes some listed route targets; ``unroutable_nodes`` the Nodes
    with a pod CIDR that cannot get a route (malformed, or claimed by another Node);
    ``owned_routes`` counts the listed routes inside the cluster CIDRs.
    """

    creates: tuple[RouteCreate, ...] = ()
    deletes: tuple[Route, ...] = ()
    problems: tuple[Problem, ...] = ()
    routed_nodes: frozenset[str] = frozenset()
    unroutable_nodes: frozenset[str] = frozenset()
    owned_routes: int = 0

    @property
    def empty(self) -> bool:
        """True when the cloud already matches: nothing to create or delete."""
        return not self.creates and not self.deletes


def is_responsible(destination_cidr: str, cluster_cidrs: Sequence[Network]) -> bool:
    """True if the route's whole destination lies inside a cluster CIDR: only such a route
    may be deleted.

    Deliberately narrower than upstream, which counts a route as its own when its first
    *or* last address lies inside (so a VPN's ``10.244.0.0/15`` around a ``/16`` pod range
    was deleted); an unparsable destination is never ours.
    """
    return Clusters(cluster_cidrs).hold_text(destination_cidr)


def touches_cluster(destination_cidr: str, cluster_cidrs: Sequence[Network]) -> bool:
    """Upstream's responsibility rule: the first or last address lies in a cluster CIDR."""
    network = network_or_none(destination_cidr)
    if network is None:
        return False
    first, last = network.network_address, network.broadcast_address
    return any(
        cluster.version == network.version and (first in cluster or last in cluster)
        for cluster in cluster_cidrs
    )


def plan(
    *,
    nodes: Iterable[NodeView],
    routes: Iterable[Route],
    cluster_cidrs: Sequence[Network],
    unknown: Mapping[str, str] | None = None,
) -> Plan:
    """Plan the creates and deletes that make ``routes`` match ``nodes`` (upstream's rules).

    ``unknown`` maps the names of Nodes that exist but were never seen readable to why:
    routes targeting them stay as they are.
    """
    nodes = tuple(nodes)
    listed = tuple(routes)
    unknown = unknown or {}
    problems: list[Problem] = [unknown_node(name, why) for name, why in sorted(unknown.items())]
    clusters = Clusters(cluster_cidrs)  # as numbers, once: every Node and route is checked
    wanted, unroutable, tolerated = _wanted_cidrs(nodes, cluster_cidrs, clusters, problems)
    claimed = [(name, cidr) for name, mine in wanted.items() for cidr in mine.values()]
    problems.extend(p for pair in overlaps(claimed) for p in overlapping_pod_cidrs(*pair))
    by_target: dict[str, list[Route]] = {}
    for route in listed:
        if route.target_node:
            by_target.setdefault(route.target_node, []).append(route)
    actions = {
        (node.name, key): _action(node, key, by_target.get(node.name, ()))
        for node in nodes
        for key in wanted.get(node.name, {})
    }
    # A misconfigured pod CIDR gets no new route, but a route that serves it now stays, and
    # counts for the Node's condition as upstream counts it (it routes the pod CIDR).
    actions.update(dict.fromkeys(tolerated, Action.KEEP))
    unroutable |= _unserved(tolerated, by_target)
    # An unknown Node's routes stay: a create that would replace one is withheld.
    held = {
        canonical(route.destination_cidr): route.target_node
        for route in (listed if unknown else ())
        if route.target_node in unknown
    }
    for (name, key), action in list(actions.items()):
        if action is not Action.KEEP and key in held and held[key] != name:
            actions[(name, key)] = Action.KEEP  # withheld: it would replace the unknown's
            unroutable.add(name)
            problems.append(held_by_unknown(name, wanted[name][key], held[key]))
    deletes, owned = _deletes(listed, actions, (cluster_cidrs, clusters), problems, unknown)
    creates = _creates(nodes, wanted, actions, deletes)
    return Plan(
        creates=creates,
        deletes=deletes,
        problems=tuple(problems),
        routed_nodes=frozenset(by_target),
        unroutable_nodes=frozenset(unroutable),
        owned_routes=owned,
    )


def _wanted_cidrs(
    nodes: Sequence[NodeView],
    cluster_cidrs: Sequence[Network],
    clusters: Clusters,
    problems: list[Problem],
) -> tuple[dict[str, dict[str, str]], set[str], set[tuple[str, str]]]:
    """Map node name -> canonical CIDR -> the CIDR as the node spells it; collect bad ones.

    Also returns the nodes that cannot be fully routed, and the (node, CIDR) pairs outside
    the cluster CIDRs, whose existing routes are tolerated (such a Node is unroutable only
    when no route serves that CIDR: see :func:`_unserved`).
    """
    wanted: dict[str, dict[str, str]] = {}
    unroutable: set[str] = set()
    tolerated: set[tuple[str, str]] = set()
    claimed: dict[str, str] = {}
    for node in sorted(nodes, key=operator.attrgetter("name")):
        mine = wanted.setdefault(node.name, {})
        for cidr in node.pod_cidrs:
            key = canonical(cidr)
            if key in mine:
                problems.append(duplicate_pod_cidr(node.name, cidr))
                continue
            problem = _claim(node.name, cidr, key, claimed, (cluster_cidrs, clusters))
            if problem is None:
                mine[key] = cidr
                continue
            problems.append(problem)
            if problem.reason == "ClusterCIDRMisconfigured":
                tolerated.add((node.name, key))  # unroutable unless served
            else:
                unroutable.add(node.name)
    return wanted, unroutable, tolerated


def _unserved(
    tolerated: Iterable[tuple[str, str]], by_target: Mapping[str, Sequence[Route]]
) -> set[str]:
    """The Nodes of ``tolerated`` (node, CIDR) pairs whose CIDR no healthy listed route of
    theirs serves: a pod CIDR outside --cluster-cidr that is routed already (a migration with
    narrower CIDR flags, a dual-stack Node under an IPv4-only --cluster-cidr) leaves its Node
    routed, as upstream, which never checks --cluster-cidr before routing."""
    return {
        name
        for name, key in tolerated
        if not any(
            canonical(r.destination_cidr) == key and not r.blackhole
            for r in by_target.get(name, ())
        )
    }


def _claim(
    name: str,
    cidr: str,
    key: str,
    claimed: dict[str, str],
    cluster: tuple[Sequence[Network], Clusters],
) -> Problem | None:
    """Claim ``cidr`` (canonically ``key``) for node ``name``, or say why it cannot have it."""
    found = span(cidr)
    if found is None:
        return invalid_pod_cidr(name, cidr)
    if not cluster[1].hold(found):
        # A route outside the cluster CIDRs could never be cleaned up (we only delete inside).
        return outside_cluster(name, cidr, cluster[0])
    owner = claimed.setdefault(key, name)
    return None if owner == name else claimed_twice(name, cidr, owner)


def _action(node: NodeView, key: str, candidates: Iterable[Route]) -> Action:
    """Upstream's per-CIDR action, robust to duplicates: any healthy listed route keeps.

    A matching route is healthy unless it is a blackhole or (with ``enable_node_addresses``)
    carries other addresses than the Node has; only unhealthy matches make an update.
    """
    matched = False
    for route in candidates:  # a loop, not lists and any(): once per pod CIDR of every Node
        if canonical(route.destination_cidr) == key:
            if _healthy(route, node):
                return Action.KEEP
            matched = True
    return Action.UPDATE if matched else Action.ADD


def _healthy(route: Route, node: NodeView) -> bool:
    if route.blackhole:
        return False
    return not route.enable_node_addresses or set(route.target_node_addresses) == set(
        node.addresses
    )


def _deletes(
    listed: Sequence[Route],
    actions: dict[tuple[str, str], Action],
    cluster: tuple[Sequence[Network], Clusters],
    problems: list[Problem],
    unknown: Mapping[str, str],
) -> tuple[tuple[Route, ...], int]:
    cluster_cidrs, clusters = cluster
    deletes: list[Route] = []
    owned = 0
    for route in listed:
        found = span(route.destination_cidr)
        if found is None:
            problems.append(unparsable_route(route))
            continue
        if not clusters.hold(found):
            if touches_cluster(route.destination_cidr, cluster_cidrs):
                problems.append(foreign_route(route, cluster_cidrs))
            continue
        owned += 1
        if route.target_node in unknown:
            continue  # what its Node says is unknown: the route stays as it is
        action = actions.get((route.target_node, canonical(route.destination_cidr)))
        if route.blackhole or action in (None, Action.UPDATE):
            deletes.append(route)
    return tuple(deletes), owned


def _creates(
    nodes: Sequence[NodeView],
    wanted: dict[str, dict[str, str]],
    actions: dict[tuple[str, str], Action],
    deletes: Sequence[Route],
) -> tuple[RouteCreate, ...]:
    deleted_by_key: dict[str, list[Route]] = {}
    for route in deletes:
        deleted_by_key.setdefault(canonical(route.destination_cidr), []).append(route)
    return tuple(
        RouteCreate(
            route=Route(
                target_node=node.name, destination_cidr=cidr, target_node_addresses=node.addresses
            ),
            name_hint=node.uid,
            replaces=tuple(deleted_by_key.get(key, ())),
        )
        for node in nodes
        for key, cidr in wanted.get(node.name, {}).items()
        if actions[(node.name, key)] is not Action.KEEP
    )


def needs_sync(old: NodeView | None, new: NodeView | None) -> bool:
    """The watch-mode event filter: True for add, delete, and pod CIDR or address changes.

    Pod CIDRs and addresses are compared as sets, so a reordering costs nothing; conditions,
    heartbeats, labels and every other field never cost a sync.
    """
    if old is None or new is None:
        return old is not new
    return (
        old.uid != new.uid
        or set(old.pod_cidrs) != set(new.pod_cidrs)
        or set(old.addresses) != set(new.addresses)
    )

"""What the planner reports about bad or surprising input: reasons and messages.

Each builder returns one :class:`Problem`: the Node it concerns (empty when none), the
reason (an Event reason: ``InvalidPodCIDR``, ``ClusterCIDRMisconfigured``,
``PodCIDRConflict``, ``DuplicatePodCIDR``, ``PodCIDROverlap``, ``UnparsableRouteCIDR``,
``ForeignRouteOverlapsClusterCIDR``, ``UnknownNode``, ``PodCIDRHeldByUnknownNode``) and a
message that says what routectl does about it. The service logs each problem, counts it
and records it as a Warning Event, once. Pure.

:data:`MALFORMED_ROUTE` is the reason the gate counts a listed route under when it leaves
it out for its shape (a field of the wrong type: the plugin's bug or a garbled answer).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from routectl.cidr import Network
from routectl.model import Route

MALFORMED_ROUTE = "MalformedRoute"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """Bad input found while planning; the service logs it and records an Event."""

    node: str
    reason: str
    message: str


def invalid_pod_cidr(node: str, cidr: str) -> Problem:
    """A pod CIDR that does not parse."""
    message = f"pod CIDR {cidr!r} of node {node} does not parse; no route is created for it"
    return Problem(node=node, reason="InvalidPodCIDR", message=message)


def outside_cluster(node: str, cidr: str, cluster_cidrs: Sequence[Network]) -> Problem:
    """A pod CIDR outside every cluster CIDR."""
    message = (
        f"pod CIDR {cidr} of node {node} is outside --cluster-cidr "
        f"{','.join(map(str, cluster_cidrs))}; no route is created for it"
    )
    return Problem(node=node, reason="ClusterCIDRMisconfigured", message=message)


def claimed_twice(node: str, cidr: str, owner: str) -> Problem:
    """A pod CIDR another Node (which gets it) claims too."""
    message = f"pod CIDR {cidr} of node {node} is also assigned to node {owner}, which gets it"
    return Problem(node=node, reason="PodCIDRConflict", message=message)


def duplicate_pod_cidr(node: str, cidr: str) -> Problem:
    """A pod CIDR a Node lists twice."""
    message = f"pod CIDR {cidr} is listed twice on node {node}; one route"
    return Problem(node=node, reason="DuplicatePodCIDR", message=message)


def overlapping_pod_cidrs(outer: tuple[str, str], inner: tuple[str, str]) -> list[Problem]:
    """Two Nodes' pod CIDRs overlap: one Warning on each Node."""
    (outer_node, outer_cidr), (inner_node, inner_cidr) = outer, inner
    message = (
        f"pod CIDR {inner_cidr} of node {inner_node} overlaps pod CIDR {outer_cidr} of node "
        f"{outer_node}; both are routed, and traffic for {inner_cidr} goes to {inner_node}"
    )
    return [
        Problem(node=name, reason="PodCIDROverlap", message=message)
        for name in (outer_node, inner_node)
    ]


def unparsable_route(route: Route) -> Problem:
    """A listed route whose destination does not parse (upstream's log line, extended)."""
    message = (
        f"Ignoring route {route.name or '<unnamed>'}, unparsable CIDR: "
        f"{route.destination_cidr!r}; it is never deleted"
    )
    return Problem(node=route.target_node, reason="UnparsableRouteCIDR", message=message)


def foreign_route(route: Route, cluster_cidrs: Sequence[Network]) -> Problem:
    """A route that overlaps the cluster CIDRs without lying inside one: not ours."""
    message = (
        f"Route {route.name or '<unnamed>'} to {route.destination_cidr} overlaps --cluster-cidr "
        f"{','.join(map(str, cluster_cidrs))} without lying inside it: it is not routectl's "
        "and is left alone (upstream's route controller would delete it)"
    )
    return Problem(
        node=route.target_node, reason="ForeignRouteOverlapsClusterCIDR", message=message
    )


def unknown_node(node: str, why: str) -> Problem:
    """A Node that exists but that routectl has never seen readable (``spec: null``...)."""
    message = (
        f"{why}; routectl has never seen node {node} readable, so it is unknown: routes to it "
        "are neither deleted nor replaced until it can be read"
    )
    return Problem(node=node, reason="UnknownNode", message=message)


def held_by_unknown(node: str, cidr: str, holder: str) -> Problem:
    """A pod CIDR routed to a Node that is unknown: that route is not replaced meanwhile."""
    message = (
        f"pod CIDR {cidr} of node {node} is routed to node {holder}, which routectl cannot "
        f"read; that route is not replaced until {holder} can be read"
    )
    return Problem(node=node, reason="PodCIDRHeldByUnknownNode", message=message)

"""The NetworkUnavailable condition: which Nodes get a write after a sync, and which one.

Upstream's step E of ``reconcile``, exactly: a Node with pod CIDRs is "created" when none of
its creates failed and all its CIDRs could be routed; a Node without pod CIDRs that some
listed route targets is "not created"; any other Node is left alone. The condition is
written only when its status or reason differ (the message is never compared). Pure.
:mod:`routectl.plan.reconcile` re-exports these names (the stable core API).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Protocol

from routectl.model import Condition, NodeView, Route


class Plan(Protocol):
    """What the conditions need of a :class:`routectl.plan.reconcile.Plan`."""

    @property
    def routed_nodes(self) -> frozenset[str]: ...

    @property
    def unroutable_nodes(self) -> frozenset[str]: ...


class RouteCreate(Protocol):
    """What the conditions need of a :class:`routectl.plan.reconcile.RouteCreate`."""

    @property
    def route(self) -> Route: ...


CONDITION_ROUTE_CREATED = Condition(
    status="False", reason="RouteCreated", message="RouteController created a route"
)
CONDITION_NO_ROUTE_CREATED = Condition(
    status="True", reason="NoRouteCreated", message="RouteController failed to create a route"
)


def routes_created(
    *, nodes: Iterable[NodeView], plan: Plan, failed: Collection[RouteCreate] = ()
) -> dict[str, bool]:
    """Which Nodes get a NetworkUnavailable write, and whether all their routes exist.

    Upstream's step E: a Node with no pod CIDRs that no listed route targets is left alone;
    one with no pod CIDRs but stale routes gets "not created"; any other Node is "created"
    when none of its creates failed and all its pod CIDRs could be routed.
    """
    failed_nodes = {create.route.target_node for create in failed}
    result: dict[str, bool] = {}
    for node in nodes:
        if node.pod_cidrs:
            result[node.name] = (
                node.name not in failed_nodes and node.name not in plan.unroutable_nodes
            )
        elif node.name in plan.routed_nodes:
            result[node.name] = False
    return result


def desired_condition(current: Condition | None, *, routes_created: bool) -> Condition | None:
    """The NetworkUnavailable condition to write, or None if status and reason already match.

    The message is never compared (upstream, since PR #136561, compares status and reason, so
    a CNI's ``False/CalicoIsUp`` is replaced by ``False/RouteCreated``).
    """
    wanted = CONDITION_ROUTE_CREATED if routes_created else CONDITION_NO_ROUTE_CREATED
    if current is not None and (current.status, current.reason) == (wanted.status, wanted.reason):
        return None
    return wanted

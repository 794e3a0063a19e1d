"""The mass-delete guard: a sync never deletes a large share of the routes it owns.

A plan that would delete more than ``threshold`` of the owned routes (and more than
:data:`MASS_DELETE_MIN`) keeps its creates but loses every delete, and every create that
waits for one of those deletes (its Node then counts as unroutable: not marked routed while
its CIDR's route leads elsewhere). A wrong ``--cluster-cidr``, an empty Node list from a
broken API proxy or a provider that mislabels routes then costs nothing, and says so.
Small clusters are covered too: while the Node list is empty, no route is deleted at all,
however few (an empty list is far likelier a broken answer than a cluster with no Nodes).
``--allow-mass-delete`` lifts both rules. Pure: no I/O, no clock, no logging.
"""

from __future__ import annotations

import dataclasses

from routectl.plan.reconcile import Plan

MASS_DELETE_MIN = 5
"""The guard never trips for this many deletes or fewer (a small cluster losing a node)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The plan to carry out, and why deletes were withheld (``message`` empty: none were)."""

    plan: Plan
    message: str = ""

    @property
    def tripped(self) -> bool:
        """True when the guard withheld the deletes."""
        return bool(self.message)


def guard(plan: Plan, *, owned: int, nodes: int, threshold: float, allow: bool) -> Verdict:
    """Withhold every delete of ``plan`` if it deletes too many of ``owned`` routes, or any
    while there are no ``nodes``."""
    owned = max(owned, plan.owned_routes)  # a scoped plan sees only some routes
    limit = max(MASS_DELETE_MIN, threshold * owned)
    if allow or not plan.deletes:
        return Verdict(plan=plan)
    if nodes == 0:
        message = (
            f"Refusing to delete {len(plan.deletes)} of {owned} routes this cluster owns: the "
            "Node list is empty; creating only. Check the API server (and any proxy before "
            "it), then pass --allow-mass-delete if the cluster really has no Nodes."
        )
    elif len(plan.deletes) > limit:
        message = (
            f"Refusing to delete {len(plan.deletes)} of {owned} routes this "
            f"cluster owns (more than {100 * threshold:.0f}%); "
            "creating only. Check the Nodes and --cluster-cidr, then pass "
            "--allow-mass-delete if the deletes are intended."
        )
    else:
        return Verdict(plan=plan)
    creates = tuple(c for c in plan.creates if not c.replaces)
    # A Node whose create waits for a withheld delete is not routed (its CIDR's route leads
    # elsewhere): it must not be marked RouteCreated for having no create left to wait for.
    held = frozenset(c.route.target_node for c in plan.creates if c.replaces)
    withheld = dataclasses.replace(
        plan, deletes=(), creates=creates, unroutable_nodes=plan.unroutable_nodes | held
    )
    return Verdict(plan=withheld, message=message)

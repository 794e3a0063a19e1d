"""Work a running sync may take on beside its own, and the promise that makes it safe.

A sync writing its plan may accept a Node change that arrives meanwhile, plan it over the
change's scope and write it at once, rather than leave it to the next sync (which would
start only when this one has written everything). :class:`Claims` holds what the running
sync and the side plans it accepted so far are writing; :meth:`Claims.admit` accepts a side
plan only when it cannot race any of them:

* it only creates (no delete, no create that replaces a route): deletes are the mass-delete
  guard's to weigh, over a whole plan;
* none of its Nodes is a Node the sync (or an accepted side plan) planned for, so each
  Node's condition has one writer;
* none of its destinations is one the sync (or an accepted side plan) writes, so no two
  calls for one destination are ever in flight together.

A side plan refused is left to the next sync, which the change has queued already. Pure:
no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable

from routectl.cidr import canonical
from routectl.model import NodeView
from routectl.plan.reconcile import Plan

__all__ = ["Claims"]


class Claims:
    """The Nodes and destinations (canonical) a sync and its side plans write."""

    def __init__(self, *, plan: Plan, nodes: Iterable[NodeView]) -> None:
        self.names: set[str] = {node.name for node in nodes}
        self.destinations: set[str] = set()
        self._add(plan)

    def _add(self, plan: Plan) -> None:
        for create in plan.creates:
            self.names.add(create.route.target_node)
            self.destinations.add(canonical(create.route.destination_cidr))
            for old in create.replaces:
                self.destinations.add(canonical(old.destination_cidr))
        for route in plan.deletes:
            self.names.add(route.target_node)
            self.destinations.add(canonical(route.destination_cidr))

    def admit(self, plan: Plan, nodes: Iterable[NodeView]) -> bool:
        """Claim ``plan`` (over ``nodes``) if it races nothing claimed; True if claimed."""
        if plan.deletes or any(create.replaces for create in plan.creates):
            return False
        names = {node.name for node in nodes}
        names.update(create.route.target_node for create in plan.creates)
        if not names.isdisjoint(self.names):
            return False
        wanted = {canonical(create.route.destination_cidr) for create in plan.creates}
        if not wanted.isdisjoint(self.destinations):
            return False
        self.names |= names
        self.destinations |= wanted
        return True

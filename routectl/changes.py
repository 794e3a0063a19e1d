"""Which Nodes changed since the last sync, and which Node claims which pod CIDR.

The controller plans only the scope of these changes (:func:`routectl.reconcile.scope`)
when it can: a sync *takes* the changes when it starts, and gives them back if it fails,
so nothing a failed sync should have done is forgotten. Synchronous, no I/O.
"""

from __future__ import annotations

import dataclasses

from routectl.cidr import canonical
from routectl.model import NodeView

INCREMENTAL_MIN = 64
INCREMENTAL_SHARE = 0.1
"""A sync on a cached listing plans only the changed Nodes' scope when at most this many
(or this share) of the Nodes changed: its cost follows the change, not the cluster."""


@dataclasses.dataclass(frozen=True, slots=True)
class Dirty:
    names: frozenset[str]
    cidrs: frozenset[str]


class Changes:
    """The Nodes changed since the last sync took them, and who claims which pod CIDR."""

    def __init__(self) -> None:
        self.claims: dict[str, set[str]] = {}
        self.needs_full = True
        self._names: set[str] = set()
        self._cidrs: set[str] = set()

    def note(self, old: NodeView | None, new: NodeView | None) -> None:
        """Record a Node change (from the informer)."""
        for view, add in ((old, False), (new, True)):
            if view is None:
                continue
            self._names.add(view.name)
            for cidr in map(canonical, view.pod_cidrs):
                self._cidrs.add(cidr)
                holders = self.claims.setdefault(cidr, set())
                if add:
                    holders.add(view.name)
                else:
                    holders.discard(view.name)

    def take(self) -> Dirty:
        """Hand over the changes so far; new ones accumulate for the next sync."""
        dirty = Dirty(frozenset(self._names), frozenset(self._cidrs))
        self._names, self._cidrs = set(), set()
        return dirty

    def restore(self, dirty: Dirty) -> None:
        """Give back changes a failed sync did not finish."""
        self._names |= dirty.names
        self._cidrs |= dirty.cidrs

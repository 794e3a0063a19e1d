"""Which Nodes changed since the last sync, who claims which pod CIDR, and who waits.

The controller plans only the scope of these changes (:func:`routectl.plan.scope.scope`) when
it can: a sync *takes* the changes when it starts, and gives them back if it fails, so
nothing a failed sync should have done is forgotten. ``needs_full`` asks the next sync to
plan the whole cluster (at start, and after a full sync failed).

It also remembers since when each Node with a new pod CIDR waits for its routes, so the
route-programming latency can be measured from the Node event that needed them. A Node
whose routes a sync finds listed already, before any sync planned a create for it, waited
for nothing routectl did (at start: every Node of a cluster at rest) and is no sample; one
whose create was planned (and failed, or was not shown) counts when a listing shows it.
Synchronous, no I/O; times are passed in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from routectl.cidr import canonical
from routectl.model import NodeView
from routectl.plan.cidr_index import ClaimIndex

INCREMENTAL_MIN = 64
INCREMENTAL_SHARE = 0.1
"""A sync on a cached listing plans only the changed Nodes' scope when at most this many
(or this share) of the Nodes changed: its cost follows the change, not the cluster."""


@dataclasses.dataclass(frozen=True, slots=True)
class Dirty:
    """The Nodes (by name) and canonical pod CIDRs touched by changes."""

    names: frozenset[str]
    cidrs: frozenset[str]

    def worth_scoping(self, cluster_size: int) -> bool:
        """True when so few Nodes changed that planning only their scope pays."""
        return len(self.names) <= max(INCREMENTAL_MIN, INCREMENTAL_SHARE * cluster_size)


class Changes:
    """The Nodes changed since the last sync took them, and who claims which pod CIDR."""

    def __init__(self) -> None:
        self.claims = ClaimIndex()
        self.needs_full = True
        self._names: set[str] = set()
        self._cidrs: set[str] = set()
        self._waiting: dict[str, float] = {}
        self._tried: set[str] = set()
        """Waiting Nodes a sync planned a create for."""

    def note(self, old: NodeView | None, new: NodeView | None, *, now: float) -> None:
        """Record a Node change (from the informer) that happened at ``now``."""
        if old is not None:
            self._names.add(old.name)
            for cidr in old.pod_cidrs:
                key = canonical(cidr)
                self._cidrs.add(key)
                self.claims.discard(key, old.name)
        if new is not None:
            self._names.add(new.name)
            for cidr in new.pod_cidrs:
                key = canonical(cidr)
                self._cidrs.add(key)
                self.claims.add(key, new.name)
        if new is None and old is not None:
            self._waiting.pop(old.name, None)
            self._tried.discard(old.name)
        elif new is not None and new.pod_cidrs and (old is None or old.pod_cidrs != new.pod_cidrs):
            self._waiting.setdefault(new.name, now)

    def take(self) -> Dirty:
        """Hand over the changes so far; new ones accumulate for the next sync."""
        dirty = Dirty(frozenset(self._names), frozenset(self._cidrs))
        self._names, self._cidrs = set(), set()
        return dirty

    def restore(self, dirty: Dirty) -> None:
        """Give back changes a failed sync did not finish."""
        self._names |= dirty.names
        self._cidrs |= dirty.cidrs

    def waiting(self) -> list[str]:
        """The Nodes that wait for their routes, oldest first."""
        return sorted(self._waiting, key=self._waiting.__getitem__)

    def routed(self, names: Iterable[str], *, now: float) -> list[float]:
        """The Nodes ``names`` have all their routes: how long each waited (if it did)."""
        waits = (self._pop(name) for name in names)
        return [now - since for since in waits if since is not None]

    def tried(self, names: Iterable[str]) -> None:
        """A sync planned creates for the Nodes ``names``."""
        self._tried.update(name for name in names if name in self._waiting)

    def found_routed(self, names: Iterable[str], *, now: float) -> list[float]:
        """A sync found every route of the Nodes ``names`` listed already: how long those
        it had tried to route waited; the others' wait ends without a sample."""
        found = []
        for name in names:
            since = self._waiting.pop(name, None)
            if since is not None and name in self._tried:
                self._tried.discard(name)
                found.append(now - since)
        return found

    def _pop(self, name: str) -> float | None:
        since = self._waiting.pop(name, None)
        if since is not None and self._tried:
            self._tried.discard(name)
        return since

"""Quarantine before reuse: a released block waits until its route is surely gone.

A Node's block is released when the Node is deleted (never on a deletionTimestamp), after
the route planner deleted its route. Handing it to a new Node at once is how a stale route
(or a CNI still routing the old Node's pods) ends up pointing at the wrong machine, so
:class:`Quarantine` keeps it until both hold:

1. a cloud listing taken after the route went no longer shows a route to the block, and
2. ``delay`` (``--pod-cidr-reuse-delay``) has passed since the route was known gone.

The route is known gone when routectl's own delete of it succeeded or when a listing taken
after the release no longer shows it. Times are the caller's clock, passed in. Pure: no
I/O, no clock, no logging.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable

from routectl.cidr import Network, network_or_none


@dataclasses.dataclass(slots=True)
class Release:
    """A released block: since when, and since when its route is known to be gone."""

    since: float
    route_gone_at: float | None = None


class Quarantine:
    """Released blocks, by network, and the last cloud listing they are judged by."""

    def __init__(self, *, delay: float) -> None:
        self.delay = delay
        self.released: dict[Network, Release] = {}
        self._listing: tuple[float, frozenset[str]] | None = None

    def __contains__(self, network: object) -> bool:
        return network in self.released

    def __len__(self) -> int:
        return len(self.released)

    def add(self, network: Network, *, since: float) -> None:
        """``network`` was released at ``since``."""
        self.released[network] = Release(since=since)
        self._check(network)

    def remove(self, network: Network) -> bool:
        """Forget ``network`` (its quarantine is over); False if it was not quarantined."""
        return self.released.pop(network, None) is not None

    def listed(self, destinations: Collection[str], *, at: float) -> None:
        """A fresh cloud listing at ``at`` showed these canonical route destinations."""
        self._listing = (at, frozenset(destinations))
        for network in self.released:
            self._check(network)

    def deleted(self, destinations: Iterable[str], *, at: float) -> None:
        """routectl's own deletes of routes to these destinations succeeded at ``at``."""
        for text in destinations:
            network = network_or_none(text)
            release = self.released.get(network) if network is not None else None
            if release is not None and release.route_gone_at is None:
                release.route_gone_at = at

    def _check(self, network: Network) -> None:
        release = self.released[network]
        if release.route_gone_at is not None or self._listing is None:
            return
        at, destinations = self._listing
        if at >= release.since and str(network) not in destinations:
            release.route_gone_at = at

    def reusable(self, now: float) -> list[Network]:
        """Blocks a listing no longer routes, past the delay since their route went."""
        if self._listing is None:
            return []
        at, destinations = self._listing
        return sorted(
            (
                network
                for network, r in self.released.items()
                if r.route_gone_at is not None
                and now >= r.route_gone_at + self.delay
                and at >= r.route_gone_at
                and str(network) not in destinations
            ),
            key=lambda n: (n.version, int(n.network_address)),
        )

    def due(self, network: Network, now: float) -> bool:
        """``network``'s route is known gone and the delay has passed: reusable as soon as
        a listing taken since shows no route to it (free in all but name)."""
        release = self.released.get(network)
        return (
            release is not None
            and release.route_gone_at is not None
            and now >= release.route_gone_at + self.delay
        )

    def awaits_listing(self, now: float) -> bool:
        """Some block is past its delay and only waits for a listing taken after its route
        went: a fresh listing now may free it."""
        listed_at = self._listing[0] if self._listing is not None else None
        return any(
            (gone := r.route_gone_at) is not None
            and now >= gone + self.delay
            and (listed_at is None or listed_at < gone)
            for r in self.released.values()
        )

    def next_reuse(self) -> tuple[float, bool] | None:
        """When a block may next become reusable, and whether a fresh listing is needed for
        it (its route went after the last listing); None while no route is known gone."""
        listed_at = self._listing[0] if self._listing is not None else None
        times = [
            (r.route_gone_at + self.delay, listed_at is None or listed_at < r.route_gone_at)
            for r in self.released.values()
            if r.route_gone_at is not None
        ]
        return min(times) if times else None

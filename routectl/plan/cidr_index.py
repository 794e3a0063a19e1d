"""Who claims which pod CIDR, and which claimed CIDRs overlap a given one.

:class:`ClaimIndex` maps each canonical pod CIDR to the Nodes that claim it. It also answers
:meth:`ClaimIndex.overlapping`: the claimed CIDRs that overlap a CIDR without being equal to
it (its supernets and subnets), at a cost that follows the CIDR (at most one look-up per
shorter prefix, and a binary search for the subnets), not the cluster. Aligned CIDRs either
nest or are disjoint, which is what makes both searches exact. CIDRs newly claimed are put
in order at the next look-up (a first list of 65,000 Nodes: one sort, not 65,000 sorted
inserts). Pure: no I/O, no clock.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection

from routectl.cidr import Network, canonical, network_or_none, span, span_end

SETTLE_ONE_BY_ONE = 64
"""Newly claimed CIDRs up to this many are put in order one by one; more (the first list of
a large cluster) by one sort."""


def _bounds(network: Network) -> tuple[int, int]:
    start = int(network.network_address)
    return start, start | ((1 << (network.max_prefixlen - network.prefixlen)) - 1)


class ClaimIndex:
    """Canonical pod CIDR -> the names of the Nodes that claim it (a read-only Mapping face)."""

    def __init__(self) -> None:
        self._holders: dict[str, str | set[str]] = {}
        """One name, or a set of them for a CIDR claimed more than once (a set per CIDR
        would be 65,000 more objects in a large cluster, for the collector to walk)."""
        self._starts: dict[int, list[tuple[int, int, str]]] = {4: [], 6: []}
        self._unsorted: list[tuple[int, tuple[int, int, str]]] = []
        """Claimed since the last look-up, not yet in ``_starts`` (version, entry)."""

    def get(self, cidr: str, default: Collection[str] = ()) -> Collection[str]:
        """The Nodes claiming ``cidr`` (canonical spelling)."""
        held = self._holders.get(cidr)
        if held is None:
            return default
        return (held,) if isinstance(held, str) else held

    def __getitem__(self, cidr: str) -> set[str]:
        held = self._holders[cidr]
        return {held} if isinstance(held, str) else held

    def __contains__(self, cidr: object) -> bool:
        return cidr in self._holders

    def add(self, cidr: str, name: str) -> None:
        """``name`` claims ``cidr`` (any spelling)."""
        key = canonical(cidr)
        held = self._holders.get(key)
        if held is None:
            self._holders[key] = name
            if (found := span(key)) is not None:
                self._unsorted.append((found[0], (found[1], span_end(found), key)))
        elif isinstance(held, str):
            if held != name:
                self._holders[key] = {held, name}
        else:
            held.add(name)

    def discard(self, cidr: str, name: str) -> None:
        """``name`` no longer claims ``cidr``."""
        key = canonical(cidr)
        held = self._holders.get(key)
        if held is None:
            return
        self._settle()
        if isinstance(held, str):
            if held != name:
                return
        else:
            held.discard(name)
            if held:
                return
        del self._holders[key]
        found = span(key)
        if found is not None:
            entries = self._starts[found[0]]
            at = bisect.bisect_left(entries, (found[1], span_end(found), key))
            if at < len(entries) and entries[at][2] == key:
                del entries[at]

    def _settle(self) -> None:
        """Put the CIDRs claimed since the last look-up in order among the others."""
        unsorted, self._unsorted = self._unsorted, []
        if len(unsorted) <= SETTLE_ONE_BY_ONE:
            for version, entry in unsorted:
                bisect.insort(self._starts[version], entry)
            return
        for version, entry in unsorted:
            self._starts[version].append(entry)
        for entries in self._starts.values():
            entries.sort()

    def overlapping(self, cidr: str) -> list[str]:
        """The claimed CIDRs that overlap ``cidr`` but are not it: supernets, then subnets."""
        network = network_or_none(cidr)
        if network is None:
            return []
        self._settle()
        found = [
            key
            for prefix in range(network.prefixlen)
            if (key := str(network.supernet(new_prefix=prefix))) in self._holders
        ]
        start, end = _bounds(network)
        entries = self._starts[network.version]
        at = bisect.bisect_left(entries, (start, start, ""))
        me = str(network)
        while at < len(entries) and entries[at][0] <= end:
            inner = entries[at]
            if inner[1] <= end and inner[2] != me:
                found.append(inner[2])
            at += 1
        return found


def overlaps(claimed: Collection[tuple[str, str]]) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """The pairs of (node, CIDR) claims of different Nodes whose CIDRs overlap unequally.

    Each pair is (outer, inner): the inner CIDR lies inside the outer one. One sort and one
    sweep: aligned CIDRs nest or are disjoint, so the CIDRs that contain the current one are
    exactly those still open on a stack. Unparsable CIDRs are skipped.
    """
    entries = sorted(
        (found[0], found[1], -span_end(found), name, cidr)
        for name, cidr in set(claimed)
        if (found := span(cidr)) is not None
    )
    pairs: list[tuple[tuple[str, str], tuple[str, str]]] = []
    open_: list[tuple[int, int, int, str, str]] = []
    for entry in entries:
        version, start, _, name, cidr = entry
        while open_ and (open_[-1][0] != version or -open_[-1][2] < start):
            open_.pop()
        if open_:  # most CIDRs nest in none other
            pairs.extend(
                ((outer[3], outer[4]), (name, cidr))
                for outer in open_
                if outer[3] != name and canonical(outer[4]) != canonical(cidr)
            )
        open_.append(entry)
    return pairs

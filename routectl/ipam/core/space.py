"""The sparse free structure: which addresses are taken, and the lowest free aligned block.

:class:`AddressSpace` holds *entries*: CIDRs, each with the set of tags that hold it (a
Node's name, an exclusion, a quarantine, a foreign claim). Holders are counted per CIDR, so
a block two Nodes hold stays taken until both let go, and releasing an allocation never
clears an exclusion (they are different tags). The union of all entries is kept as sorted,
coalesced runs of integer addresses per family, which is what the search walks.

Promises:

* memory follows the entries and the runs, never the size of a pool: a /8 of /30 blocks
  or a /32 of IPv6 /64 blocks costs nothing until blocks are taken;
* :meth:`AddressSpace.lowest_free` returns the lowest block of the given prefix length,
  aligned to its size, inside ``within`` and overlapping no entry; its cost follows the
  runs it has to skip (one when allocation is lowest-first), not the pool;
* entries are CIDRs, so any two nest or are disjoint: removing one only has to re-add the
  entries it contains, unless one that contains it is still held.

Pure: no I/O, no clock, no logging.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from routectl.cidr import Network

Span = tuple[int, int]
"""First and last address of a CIDR, as integers."""


def span(network: Network) -> Span:
    """The first and last address of ``network``."""
    return int(network.network_address), int(network.broadcast_address)


class _Runs:
    """Disjoint, non-adjacent ranges of integers, sorted: the union of the entries."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, first: int, last: int) -> None:
        # Runs touching or overlapping [first, last] are merged into one.
        lo = bisect.bisect_left(self.ends, first - 1)
        hi = bisect.bisect_right(self.starts, last + 1)
        if lo < hi:
            first = min(first, self.starts[lo])
            last = max(last, self.ends[hi - 1])
        self.starts[lo:hi] = [first]
        self.ends[lo:hi] = [last]

    def remove(self, first: int, last: int) -> None:
        lo = bisect.bisect_left(self.ends, first)
        hi = bisect.bisect_right(self.starts, last)
        if lo >= hi:
            return
        starts: list[int] = []
        ends: list[int] = []
        if self.starts[lo] < first:
            starts.append(self.starts[lo])
            ends.append(first - 1)
        if self.ends[hi - 1] > last:
            starts.append(last + 1)
            ends.append(self.ends[hi - 1])
        self.starts[lo:hi] = starts
        self.ends[lo:hi] = ends

    def taken(self, first: int, last: int) -> int:
        """How many integers of [first, last] lie in a run."""
        total = 0
        at = bisect.bisect_left(self.ends, first)
        while at < len(self.starts) and self.starts[at] <= last:
            total += min(last, self.ends[at]) - max(first, self.starts[at]) + 1
            at += 1
        return total

    def gaps(self, first: int, last: int) -> Iterator[Span]:
        """The free ranges inside [first, last], lowest first."""
        cursor = first
        at = bisect.bisect_left(self.ends, first)
        while cursor <= last:
            if at >= len(self.starts) or self.starts[at] > last:
                yield cursor, last
                return
            if self.starts[at] > cursor:
                yield cursor, self.starts[at] - 1
            cursor = max(cursor, self.ends[at] + 1)
            at += 1


class AddressSpace:
    """Tagged CIDR entries of both families and their union, searchable for free blocks."""

    def __init__(self) -> None:
        self._tags: dict[Network, set[str]] = {}
        self._sorted: dict[int, list[tuple[int, int, Network]]] = {4: [], 6: []}
        self._runs: dict[int, _Runs] = {4: _Runs(), 6: _Runs()}
        self._prefixes: dict[int, dict[int, int]] = {4: {}, 6: {}}
        """How many entries of each prefix length there are: supernets are looked up only
        at the lengths some entry has."""

    def __len__(self) -> int:
        return len(self._tags)

    def tags(self, network: Network) -> frozenset[str]:
        """The tags holding exactly ``network``."""
        return frozenset(self._tags.get(network, ()))

    def add(self, network: Network, tag: str) -> None:
        """``tag`` holds ``network`` (adding the same pair twice changes nothing)."""
        held = self._tags.setdefault(network, set())
        if not held:
            first, last = span(network)
            bisect.insort(self._sorted[network.version], (first, last, network))
            self._runs[network.version].add(first, last)
            counts = self._prefixes[network.version]
            counts[network.prefixlen] = counts.get(network.prefixlen, 0) + 1
        held.add(tag)

    def discard(self, network: Network, tag: str) -> None:
        """``tag`` no longer holds ``network``; the addresses free up when nothing else does."""
        held = self._tags.get(network)
        if held is None or tag not in held:
            return
        held.discard(tag)
        if held:
            return
        del self._tags[network]
        first, last = span(network)
        entries = self._sorted[network.version]
        del entries[bisect.bisect_left(entries, (first, last, network))]
        counts = self._prefixes[network.version]
        counts[network.prefixlen] -= 1
        if not counts[network.prefixlen]:
            del counts[network.prefixlen]
        if self._around(network):
            return  # a held CIDR around it keeps every address taken
        runs = self._runs[network.version]
        runs.remove(first, last)
        for inner_first, inner_last, _ in self.inside(network):
            runs.add(inner_first, inner_last)

    def inside(self, network: Network) -> list[tuple[int, int, Network]]:
        """The entries inside ``network`` (itself included, if held)."""
        first, last = span(network)
        entries = self._sorted[network.version]
        at = bisect.bisect_left(entries, (first, -1, network))
        found = []
        while at < len(entries) and entries[at][0] <= last:
            if entries[at][1] <= last:
                found.append(entries[at])
            at += 1
        return found

    def overlapping(self, network: Network) -> list[Network]:
        """The entries that overlap ``network``: those around it, then those inside it."""
        return self._around(network) + [entry[2] for entry in self.inside(network)]

    def _around(self, network: Network) -> list[Network]:
        """The entries that strictly contain ``network``."""
        lengths = sorted(p for p in self._prefixes[network.version] if p < network.prefixlen)
        return [outer for p in lengths if (outer := network.supernet(new_prefix=p)) in self._tags]

    def is_free(self, network: Network) -> bool:
        """No entry overlaps ``network``."""
        return self._runs[network.version].taken(*span(network)) == 0

    def taken(self, network: Network) -> int:
        """How many addresses of ``network`` some entry holds."""
        return self._runs[network.version].taken(*span(network))

    def lowest_free(self, within: Network, prefix: int) -> Network | None:
        """The lowest free block ``/prefix`` aligned to its size inside ``within``, or None."""
        if prefix < within.prefixlen or prefix > within.max_prefixlen:
            return None
        size = 1 << (within.max_prefixlen - prefix)
        for first, last in self._runs[within.version].gaps(*span(within)):
            aligned = -(-first // size) * size
            if aligned + size - 1 <= last:
                return _network(within, aligned, prefix)
        return None

    def free_blocks(self, within: Network, prefix: int) -> int:
        """How many aligned ``/prefix`` blocks inside ``within`` are wholly free."""
        if prefix < within.prefixlen or prefix > within.max_prefixlen:
            return 0
        size = 1 << (within.max_prefixlen - prefix)
        total = 0
        for first, last in self._runs[within.version].gaps(*span(within)):
            start = -(-first // size) * size
            end = (last + 1) // size * size
            total += max(0, (end - start) // size)
        return total


def _network(like: Network, first: int, prefix: int) -> Network:
    return type(like)((first, prefix))

"""How full each pool is, by state, and when to warn that one is filling up.

:func:`usage` counts a pool's blocks (of its current mask size) by state: used by Nodes,
free, quarantined, excluded (a Service range, a ``ServiceCIDR``), claimed by another
writer. :class:`Levels` says when a pool's share of taken blocks first reaches 80 % or
95 %: one warning per pool per crossing upward, re-armed only when it falls back below the
level by :data:`REARM` (a pool that hovers at a level under churn warns once). A
quarantined block past its reuse delay (one listing away from free) is not counted as
taken: churn alone never raises the alarm "add a pool".
Pure: no I/O, no clock, no logging.
"""

from __future__ import annotations

import dataclasses

from routectl.ipam.core.pools import Pool
from routectl.ipam.core.space import span
from routectl.ipam.core.state import EXCLUDED, FOREIGN, NODE, QUARANTINE, Allocator

LEVELS = (0.95, 0.80)
REARM = 0.05
"""How far below a level a pool's share must fall before that level may warn again."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PoolUsage:
    """One pool's blocks by state."""

    pool: Pool
    capacity: int
    free: int
    used: int
    quarantined: int
    due: int = 0
    """Of the quarantined, those past the reuse delay: free once a listing confirms it."""
    excluded: int
    foreign: int

    @property
    def share(self) -> float:
        """The share of blocks taken: neither free nor due for reuse (0 to 1)."""
        return 1.0 - (self.free + self.due) / self.capacity if self.capacity else 1.0

    def message(self, level: float) -> str:
        """The warning for reaching ``level``."""
        return (
            f"pod CIDR pool {self.pool.network} is {self.share:.0%} taken "
            f"(level {level:.0%}: {self.capacity - self.free - self.due}/{self.capacity} "
            f"/{self.pool.mask} "
            f"blocks; {self.used} used by Nodes, {self.quarantined} quarantined, "
            f"{self.excluded} excluded); add a pool to --additional-cluster-cidrs before it is full"
        )


def usage(allocator: Allocator, *, now: float) -> list[PoolUsage]:
    """Every pool's usage at ``now``, active pools first, in configured order."""
    found = []
    for pool in allocator.pools.all:
        counts = {NODE: 0, QUARANTINE: 0, FOREIGN: 0}
        excluded = due = 0
        block = 1 << (pool.network.max_prefixlen - pool.mask)
        first, last = span(pool.network)
        for network in allocator.space.overlapping(pool.network):
            tags = allocator.space.tags(network)
            for prefix in counts:
                counts[prefix] += any(t.startswith(prefix) for t in tags)
            due += allocator.quarantined.due(network, now)
            if any(t.startswith(EXCLUDED) for t in tags):
                start, end = span(network)
                excluded += -(-(min(end, last) - max(start, first) + 1) // block)
        found.append(
            PoolUsage(
                pool=pool,
                capacity=pool.capacity,
                free=allocator.space.free_blocks(pool.network, pool.mask),
                used=counts[NODE],
                quarantined=counts[QUARANTINE],
                due=due,
                excluded=excluded,
                foreign=counts[FOREIGN],
            )
        )
    return found


class Levels:
    """The last warned level per pool: a warning per upward crossing, not per sync."""

    def __init__(self) -> None:
        self._last: dict[str, float] = {}

    def crossed(self, usages: list[PoolUsage]) -> list[tuple[PoolUsage, float]]:
        """The pools that reached a higher level since the last call, and that level."""
        warnings = []
        for each in usages:
            if each.pool.draining:
                continue
            key = str(each.pool.network)
            level = next((lv for lv in LEVELS if each.share >= lv), 0.0)
            last = self._last.get(key, 0.0)
            if level > last:
                warnings.append((each, level))
                self._last[key] = level
            elif level < last and each.share < last - REARM:
                self._last[key] = level
        return warnings

"""KCM's ``cidrset.CidrSet`` (Kubernetes 1.36), as ``shared/docs/node-ipam.md`` §1.3 describes it.

One pool (a cluster CIDR) cut into node-sized blocks, with:

* an uncompressed bitmap of used blocks (here a set of indices), not reference counts:
  :meth:`CidrSet.occupy` and :meth:`CidrSet.release` set and clear every block a CIDR
  covers, and the counter changes only when a bit flips;
* a rotating **next-fit cursor**: :meth:`CidrSet.allocate_next` scans from the block after
  the last one it handed out, wrapping round, to the first free one; so a released block
  comes back once the cursor reaches it, which may be at once (it is the next free block
  ahead) or a whole turn later. The cursor is process memory: a new set starts at block 0;
* **no quarantine**: a released block is free the moment :meth:`CidrSet.release` returns.

Errors carry KCM's texts. Pure: no I/O, no clock.
"""

from __future__ import annotations

import dataclasses

from routectl.cidr import Network

NO_CIDRS_REMAINING = (
    "CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range"
)


class CidrSetFullError(Exception):
    """``ErrCIDRRangeNoCIDRsRemaining``: every block is used."""

    def __init__(self) -> None:
        super().__init__(NO_CIDRS_REMAINING)


class CidrOutOfRangeError(ValueError):
    """A CIDR that neither contains nor lies inside the cluster CIDR."""


@dataclasses.dataclass(slots=True)
class CidrSet:
    """The blocks of size ``/node_mask`` in ``cluster``: which are used, and the cursor."""

    cluster: Network
    node_mask: int
    used: set[int] = dataclasses.field(default_factory=set)
    next_candidate: int = 0

    def __post_init__(self) -> None:
        if self.node_mask < self.cluster.prefixlen or self.node_mask > self.cluster.max_prefixlen:
            raise ValueError(f"a /{self.node_mask} block does not fit in {self.cluster}")

    @property
    def max_cidrs(self) -> int:
        """How many blocks the pool has."""
        return 1 << (self.node_mask - self.cluster.prefixlen)

    @property
    def allocated(self) -> int:
        """How many blocks are used."""
        return len(self.used)

    def block(self, index: int) -> Network:
        """Block number ``index`` of the pool."""
        shift = self.cluster.max_prefixlen - self.node_mask
        base = int(self.cluster.network_address) | (index << shift)
        return type(self.cluster)((base, self.node_mask))

    def allocate_next(self) -> Network:
        """The first free block from the cursor on (wrapping); the cursor moves past it."""
        if self.allocated == self.max_cidrs:
            raise CidrSetFullError
        for step in range(self.max_cidrs):
            candidate = (self.next_candidate + step) % self.max_cidrs
            if candidate not in self.used:
                self.used.add(candidate)
                self.next_candidate = (candidate + 1) % self.max_cidrs
                return self.block(candidate)
        raise CidrSetFullError  # unreachable while ``allocated`` is exact

    def occupy(self, cidr: Network) -> None:
        """Mark every block ``cidr`` covers as used (no error if some already are)."""
        self.used.update(self._indices(cidr))

    def release(self, cidr: Network) -> None:
        """Mark every block ``cidr`` covers as free, whoever else may still use it."""
        self.used.difference_update(self._indices(cidr))

    def _indices(self, cidr: Network) -> range:
        """KCM's ``getBeginningAndEndIndices``: the blocks ``cidr`` overlaps."""
        if not cidr.overlaps(self.cluster):
            raise CidrOutOfRangeError(
                f"cidr {cidr} is out the range of cluster cidr {self.cluster}"
            )
        if cidr.prefixlen <= self.cluster.prefixlen:
            return range(self.max_cidrs)
        shift = self.cluster.max_prefixlen - self.node_mask
        offset = int(cidr.network_address) - int(self.cluster.network_address)
        first = offset >> shift
        last = (offset + cidr.num_addresses - 1) >> shift
        return range(first, last + 1)

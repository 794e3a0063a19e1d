"""The pools pod CIDRs are cut from, their node mask sizes, and what is excluded from them.

The flags that configure them are read and checked, with KCM's texts, by
:mod:`routectl.config.kcm`. :class:`Pools` is what the allocator is configured with: the
families in ``--cluster-cidr`` order (the order a Node's ``podCIDRs`` are written in), the
active pools in configured order with the mask size of their family, the draining pools (no
new allocations) and the exclusions. Pure: no I/O, no clock, no logging.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from routectl.cidr import Network


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Pool:
    """One range pod CIDRs are cut from, and the size of the blocks cut from it now."""

    network: Network
    mask: int
    draining: bool = False

    @property
    def capacity(self) -> int:
        """How many blocks of the current mask size the pool holds."""
        return 1 << (self.mask - self.network.prefixlen)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Pools:
    """The allocator's configuration."""

    families: tuple[int, ...]
    """IP versions in ``--cluster-cidr`` order: a Node gets one block of each, in this order."""
    active: tuple[Pool, ...]
    draining: tuple[Pool, ...] = ()
    exclusions: tuple[Network, ...] = ()

    @classmethod
    def build(
        cls,
        *,
        cluster_cidrs: Sequence[Network],
        additional: Sequence[Network] = (),
        masks: dict[int, int],
        exclusions: Iterable[Network] = (),
    ) -> Pools:
        """Active pools: ``cluster_cidrs`` then ``additional``, in that order."""
        pools = (*cluster_cidrs, *additional)
        return cls(
            families=tuple(dict.fromkeys(n.version for n in cluster_cidrs)),
            active=tuple(Pool(network=n, mask=masks[n.version]) for n in pools),
            exclusions=tuple(dict.fromkeys(exclusions)),
        )

    def of_family(self, version: int) -> tuple[Pool, ...]:
        """The active pools of one family, in configured order."""
        return tuple(p for p in self.active if p.network.version == version)

    def containing(self, network: Network) -> Pool | None:
        """The active or draining pool ``network`` lies in, if any."""
        for pool in (*self.active, *self.draining):
            if pool.network.version == network.version and network.subnet_of(pool.network):  # type: ignore[arg-type]
                return pool
        return None

    @property
    def all(self) -> tuple[Pool, ...]:
        """Active pools, then draining ones."""
        return (*self.active, *self.draining)

    def with_draining(self, networks: Iterable[Network]) -> Pools:
        """These pools, with ``networks`` that are not active added as draining."""
        extra = [n for n in networks if n not in {p.network for p in self.all}]
        if not extra:
            return self
        masks = {p.network.version: p.mask for p in self.active}
        drains = tuple(
            Pool(network=n, mask=max(masks.get(n.version, n.prefixlen), n.prefixlen), draining=True)
            for n in dict.fromkeys(extra)
            if not any(n.version == p.network.version and n.overlaps(p.network) for p in self.all)
        )
        return dataclasses.replace(self, draining=(*self.draining, *drains))

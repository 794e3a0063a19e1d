"""kube-controller-manager's node CIDR flags, read and checked as KCM does, with its texts.

:func:`node_mask_sizes` is KCM's ``setNodeCIDRMaskSizes`` and :func:`check_pools` its range
allocator's constructor checks, so a bad combination of flags fails at start-up exactly as
KCM's does. :func:`parse_service_ranges` reads ``--service-cluster-ip-range`` as KCM does,
except that a value that does not parse is an error (KCM only logs it and silently excludes
nothing). Node IPAM (:mod:`routectl.ipam`) is configured with what these return. Pure: no
I/O, no clock, no logging.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from routectl.cidr import Network, parse_cidr
from routectl.errors import ConfigError

DEFAULT_MASK = {4: 24, 6: 64}
"""KCM's ``defaultNodeMaskCIDRIPv4`` and ``defaultNodeMaskCIDRIPv6``."""
MAX_SERVICE_RANGES = 2


def node_mask_sizes(
    cluster_cidrs: Sequence[Network], *, mask: int, ipv4: int, ipv6: int
) -> dict[int, int]:
    """The node mask size per family, as KCM's ``setNodeCIDRMaskSizes`` decides (0 = unset)."""
    v4, v6 = ipv4 or DEFAULT_MASK[4], ipv6 or DEFAULT_MASK[6]
    if len(cluster_cidrs) > 1:
        if mask:
            raise ConfigError(
                "usage of --node-cidr-mask-size is not allowed with dual-stack clusters"
            )
        return {4: v4, 6: v6}
    if mask:
        if ipv4 or ipv6:
            raise ConfigError(
                "usage of --node-cidr-mask-size-ipv4 and --node-cidr-mask-size-ipv6 is not allowed "
                "if --node-cidr-mask-size is set. For dual-stack clusters please unset it and use "
                "IPFamily specific flags"
            )
        return {4: mask, 6: mask}
    single_v6 = bool(cluster_cidrs) and cluster_cidrs[0].version == 6  # noqa: PLR2004
    if ipv4 and single_v6:
        raise ConfigError(
            "usage of --node-cidr-mask-size-ipv4 is not allowed for a single-stack IPv6 cluster"
        )
    if ipv6 and not single_v6:
        raise ConfigError(
            "usage of --node-cidr-mask-size-ipv6 is not allowed for a single-stack IPv4 cluster"
        )
    return {4: v4, 6: v6}


def check_pools(pools: Iterable[Network], masks: dict[int, int]) -> None:
    """KCM's constructor check (a pool shorter than its family's mask), and no overlaps."""
    seen: list[Network] = []
    for pool in pools:
        mask = masks[pool.version]
        if pool.prefixlen > mask or mask > pool.max_prefixlen:
            raise ConfigError(
                "Controller: Invalid --cluster-cidr, mask size of cluster CIDR must be less than "
                "or equal to --node-cidr-mask-size configured for CIDR family"
            )
        for other in seen:
            if other.version == pool.version and other.overlaps(pool):
                raise ConfigError(f"pod CIDR pools {other} and {pool} overlap; give each once")
        seen.append(pool)


def parse_service_ranges(text: str) -> tuple[Network, ...]:
    """``--service-cluster-ip-range``: up to two CIDRs, of different families."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if len(parts) > MAX_SERVICE_RANGES:
        raise ConfigError("--service-cluster-ip-range can not contain more than two entries")
    ranges = []
    for part in parts:
        try:
            ranges.append(parse_cidr(part))
        except ValueError:
            raise ConfigError(
                f"--service-cluster-ip-range: unsuccessful parsing of service CIDR {part!r}"
            ) from None
    if len(ranges) == MAX_SERVICE_RANGES and ranges[0].version == ranges[1].version:
        raise ConfigError(
            "serviceCIDR and secondaryServiceCIDR are not dualstack (from different IPfamiles)"
        )
    return tuple(ranges)

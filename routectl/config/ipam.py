"""The options of node IPAM (pod CIDR allocation, off by default), as KCM names them.

Promises: KCM's flags, defaults and help texts, except the switch: routectl allocates only
with ``--routectl-allocate-node-cidrs``, a flag of its own (KCM's and the CCM's
``--allocate-node-cidrs`` is accepted and ignored, :mod:`.ignored`); the checks of mask
sizes against the pools are :func:`routectl.config.node_ipam`'s, across options. Pure: no I/O.
"""

from __future__ import annotations

from routectl.cidr import Network, parse_cidr
from routectl.config.groups import BOTH, IPAM
from routectl.config.kcm import parse_service_ranges
from routectl.config.option import (
    DURATION,
    Syntax,
    at_least,
    one_of,
    option,
    settings_dataclass,
    within,
)
from routectl.config.syntax import format_cidrs

__all__ = ["CIDR_LIST", "SERVICE_RANGES", "IpamOptions"]


def _cidr_list(text: str) -> tuple[Network, ...]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return tuple(parse_cidr(p) for p in parts)


CIDR_LIST: Syntax[tuple[Network, ...]] = Syntax(
    metavar="CIDR,...", parse=_cidr_list, show=format_cidrs
)
"""Any number of CIDRs of either family, comma-separated (sloppy, masked, like KCM)."""
SERVICE_RANGES: Syntax[tuple[Network, ...]] = Syntax(
    metavar="CIDR[,CIDR]", parse=parse_service_ranges, show=format_cidrs, late=True
)
"""``--service-cluster-ip-range``, read late: its errors are KCM's texts, shown as they are."""


@settings_dataclass
class IpamOptions:
    """Which pod CIDRs routectl hands to Nodes, of which size, and how it guards them."""

    # One option is a few lines of a table: one argument per line would hide the table.
    # fmt: off
    routectl_allocate_node_cidrs: bool = option(
        default=False, group=IPAM, commands=BOTH,
        help="routectl hands out pod CIDRs itself, in its route sync (turn KCM's allocator "
        "off first); the CCM's --allocate-node-cidrs never turns this on",
    )
    """routectl's own flag, on no CCM or KCM line: a pasted ``--allocate-node-cidrs=true``
    never starts a second allocator. While on, a pod CIDR in its pools written by another
    allocator stops routectl's allocation (:mod:`routectl.ipam.edge.step`)."""
    node_cidr_mask_size: int = option(
        default=0, check=within(0, 128), group=IPAM, commands=BOTH,
        help="Mask size for node cidr in cluster. Default is 24 for IPv4 and 64 for IPv6",
    )
    node_cidr_mask_size_ipv4: int = option(
        default=0, check=within(0, 32), group=IPAM, commands=BOTH,
        help="Mask size for IPv4 node cidr in dual-stack cluster. Default is 24",
    )
    node_cidr_mask_size_ipv6: int = option(
        default=0, check=within(0, 128), group=IPAM, commands=BOTH,
        help="Mask size for IPv6 node cidr in dual-stack cluster. Default is 64",
    )
    service_cluster_ip_range: tuple[Network, ...] = option(
        default=(), syntax=SERVICE_RANGES, group=IPAM, commands=BOTH,
        help="CIDR Range for Services in cluster. Only used with "
        "--routectl-allocate-node-cidrs; otherwise ignored",
    )
    """Excluded from the pools. Unlike KCM, a value that does not parse is an error."""
    additional_cluster_cidrs: tuple[Network, ...] = option(
        default=(), syntax=CIDR_LIST, group=IPAM, commands=BOTH,
        help="more pod CIDR pools, used in order once --cluster-cidr's pool of the family is "
        "full; routes inside them are routectl's too",
    )
    pod_cidr_exclude: tuple[Network, ...] = option(
        default=(), syntax=CIDR_LIST, group=IPAM, commands=BOTH,
        help="ranges never handed to a Node (the node subnet, say)",
    )
    pod_cidr_reuse_delay: float = option(
        default=300.0, syntax=DURATION, check=at_least(0.0), group=IPAM, commands=BOTH,
        help="a released pod CIDR is reused only this long after its route is gone",
    )
    pod_cidr_claims: str = option(
        default="lease", check=one_of("lease", "none"), group=IPAM, commands=BOTH,
        help="claim each allocated CIDR with a Lease before writing it to the Node "
        "(two writers can never hand one CIDR out twice)",
    )
    ipam_event_type: str = option(
        default="Warning", check=one_of("Warning", "Normal"), group=IPAM,
        help="type of CIDRNotAvailable and CIDRAssignmentFailed Events (KCM: Normal)",
    )
    # fmt: on

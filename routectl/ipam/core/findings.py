"""What is wrong with the pod CIDRs a Node already has: findings, never fatal.

KCM's allocator stops at start-up on one bad Node (an unparsable, out-of-range or
reordered podCIDR crash-loops the whole controller-manager). Here each problem is a
:class:`Finding`: reported once (an Event, a metric, ``routectl plan``) while healthy Nodes
keep getting CIDRs. Pod CIDRs are matched to pools by family and containment, never by
their index, so a flag written in another order is fine.

:func:`inspect` classifies one Node's pod CIDRs against the pools; conflicts between Nodes
are found by the allocator, which knows who holds what (:func:`conflict`). ``routed``
marks the findings the route planner already reports as problems (with their own Event),
so they are not recorded twice. Pure: no I/O, no clock, no logging.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from routectl.cidr import Network, canonical, network_or_none
from routectl.ipam.core.pools import Pools

UNPARSABLE = "PodCIDRUnparsable"
NOT_CANONICAL = "PodCIDRNotCanonical"
OUT_OF_RANGE = "PodCIDROutOfRange"
WRONG_FAMILY = "PodCIDRWrongFamily"
EXCLUDED = "PodCIDRExcluded"
MISSING_FAMILY = "PodCIDRMissingFamily"
CONFLICT = "PodCIDRConflict"
DRAINING = "PodCIDRInDrainingPool"
ROUTED = frozenset({UNPARSABLE, OUT_OF_RANGE, WRONG_FAMILY, CONFLICT})
"""Reasons the route planner reports too (InvalidPodCIDR, ClusterCIDRMisconfigured,
PodCIDRConflict, PodCIDROverlap): counted and shown here, recorded as Events there."""
NOTICES = frozenset({DRAINING})
"""Reasons that are facts, not problems: shown and counted, never a Warning."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, order=True)
class Finding:
    """One thing wrong (or worth knowing) about one Node's pod CIDRs."""

    node: str
    reason: str
    message: str

    @property
    def routed(self) -> bool:
        """The route planner reports this too (and records its Event)."""
        return self.reason in ROUTED

    @property
    def warning(self) -> bool:
        """Recorded as a Warning Event by the allocator."""
        return self.reason not in ROUTED and self.reason not in NOTICES


def inspect(name: str, pod_cidrs: Sequence[str], pools: Pools) -> list[Finding]:
    """The findings about Node ``name``'s pod CIDRs (conflicts with others aside)."""
    found: list[Finding] = []
    families: set[int] = set()
    for text in pod_cidrs:
        network = network_or_none(text)
        if network is None:
            message = f"pod CIDR {text!r} of node {name} does not parse; it is left alone"
            found.append(Finding(node=name, reason=UNPARSABLE, message=message))
            continue
        families.add(network.version)
        if canonical(text) != text:
            message = (
                f"pod CIDR {text} of node {name} is not canonical (it means {network}); "
                f"{network} is kept taken, and new Nodes get canonical CIDRs"
            )
            found.append(Finding(node=name, reason=NOT_CANONICAL, message=message))
        found.extend(_placement(name, network, pools))
    missing = [f"IPv{v}" for v in pools.families if v not in families]
    if pod_cidrs and families and missing:
        message = (
            f"node {name} has no {' or '.join(missing)} pod CIDR, and the API never adds one "
            "to a Node that has pod CIDRs: replace the Node to give it one"
        )
        found.append(Finding(node=name, reason=MISSING_FAMILY, message=message))
    return found


def _placement(name: str, network: Network, pools: Pools) -> list[Finding]:
    if network.version not in pools.families and not any(
        p.network.version == network.version for p in pools.all
    ):
        message = (
            f"pod CIDR {network} of node {name} is IPv{network.version}, a family no pool "
            "has; it is left alone"
        )
        return [Finding(node=name, reason=WRONG_FAMILY, message=message)]
    pool = pools.containing(network)
    if pool is None:
        listed = ",".join(str(p.network) for p in pools.all)
        message = (
            f"pod CIDR {network} of node {name} is outside every pool ({listed}); "
            "the addresses it shares with a pool stay taken"
        )
        return [Finding(node=name, reason=OUT_OF_RANGE, message=message)]
    found = []
    if pool.draining:
        message = (
            f"pod CIDR {network} of node {name} lies in {pool.network}, a pool no longer "
            "configured: it drains (no new allocations; this Node keeps its CIDR)"
        )
        found.append(Finding(node=name, reason=DRAINING, message=message))
    for excluded in pools.exclusions:
        if excluded.version == network.version and excluded.overlaps(network):
            message = (
                f"pod CIDR {network} of node {name} overlaps the excluded range {excluded} "
                "(a Service range?); it stays taken, and no new Node gets those addresses"
            )
            found.append(Finding(node=name, reason=EXCLUDED, message=message))
    return found


def conflict(name: str, mine: Network, other: str, theirs: Network) -> Finding:
    """Node ``name``'s ``mine`` overlaps ``theirs`` of Node ``other``."""
    how = "is also held by" if mine == theirs else f"overlaps {theirs} of"
    message = (
        f"pod CIDR {mine} of node {name} {how} node {other}; both stay taken until both "
        "Nodes are gone, and no new Node gets those addresses"
    )
    return Finding(node=name, reason=CONFLICT, message=message)

"""Node IPAM's pure core: pod CIDRs for Nodes that have none, decided without any I/O.

* :mod:`~routectl.ipam.space`: the sparse free structure (memory follows allocations);
* :mod:`~routectl.ipam.pools`: pools, mask sizes and exclusions, with KCM's checks;
* :mod:`~routectl.ipam.findings`: what is wrong with a Node's pod CIDRs, never fatal;
* :mod:`~routectl.ipam.quarantine`: when a released block may be handed out again;
* :mod:`~routectl.ipam.state`: the allocator: holders, reservations, the choice;
* :mod:`~routectl.ipam.rebuild`: the allocator as a function of Nodes, claims and routes;
* :mod:`~routectl.ipam.objects`: claim Leases, the Node patch, Event texts;
* :mod:`~routectl.ipam.usage`: blocks by state per pool, and the 80 %/95 % warnings.

The I/O edge that runs it inside a sync is :mod:`routectl.allocation`.
"""

from __future__ import annotations

from routectl.ipam.findings import Finding
from routectl.ipam.objects import Claim, claim_body, claim_name, node_patch, parse_claim
from routectl.ipam.pools import Pool, Pools, check_pools, node_mask_sizes, parse_service_ranges
from routectl.ipam.rebuild import Rebuilt, rebuild
from routectl.ipam.state import Allocation, Allocator, Decision, Waiting
from routectl.ipam.usage import Levels, PoolUsage, usage

__all__ = [
    "Allocation",
    "Allocator",
    "Claim",
    "Decision",
    "Finding",
    "Levels",
    "Pool",
    "PoolUsage",
    "Pools",
    "Rebuilt",
    "Waiting",
    "check_pools",
    "claim_body",
    "claim_name",
    "node_mask_sizes",
    "node_patch",
    "parse_claim",
    "parse_service_ranges",
    "rebuild",
    "usage",
]

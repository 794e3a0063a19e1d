"""Node IPAM's pure core: pod CIDRs for Nodes that have none, decided without any I/O.

* :mod:`~routectl.ipam.core.space`: the sparse free structure (memory follows allocations);
* :mod:`~routectl.ipam.core.pools`: pools, mask sizes and exclusions (the flags' checks, with
  KCM's texts, are :mod:`routectl.config.kcm`'s);
* :mod:`~routectl.ipam.core.findings`: what is wrong with a Node's pod CIDRs, never fatal;
* :mod:`~routectl.ipam.core.quarantine`: when a released block may be handed out again;
* :mod:`~routectl.ipam.core.state`: the allocator: holders, reservations, the choice;
* :mod:`~routectl.ipam.core.rebuild`: the allocator as a function of Nodes, claims and routes;
* :mod:`~routectl.ipam.core.objects`: claim Leases, the Node patch, Event texts;
* :mod:`~routectl.ipam.core.usage`: blocks by state per pool, and the 80 %/95 % warnings.

The I/O edge that runs it inside a sync is :mod:`routectl.ipam.edge.step`.
"""

from __future__ import annotations

from routectl.ipam.core.findings import Finding
from routectl.ipam.core.objects import Claim, claim_body, claim_name, node_patch, parse_claim
from routectl.ipam.core.pools import Pool, Pools
from routectl.ipam.core.rebuild import Rebuilt, rebuild
from routectl.ipam.core.state import Allocation, Allocator, Decision, Waiting
from routectl.ipam.core.usage import Levels, PoolUsage, usage

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
    "claim_body",
    "claim_name",
    "node_patch",
    "parse_claim",
    "rebuild",
    "usage",
]

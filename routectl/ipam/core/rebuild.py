"""State is a function of the API: the allocator rebuilt from Nodes, claims and routes.

:func:`rebuild` is what runs on start and on every leadership: nothing the allocator knows
survives a process, and nothing needs to.

* every Node's pod CIDRs are taken (bad ones become findings, never errors);
* a claim whose Node (same name and UID) still has no pod CIDRs is *resumed*: the crash
  came between the claim and the Node patch, and the Node gets the claimed CIDRs (all its
  families, or the claims are released);
* a claim no live Node stands behind is an orphan: its block is quarantined;
* a claim's pool that is no longer configured is a draining pool: no new allocations,
  its Nodes keep their CIDRs, and it is reported until empty;
* a listed route inside a pool to a block no Node holds is stale: the block is quarantined
  until the route planner has deleted the route and the delay has passed.

Pure: no I/O, no clock, no logging; ``now`` is passed in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping

from routectl.cidr import Network, network_or_none
from routectl.ipam.core.objects import Claim
from routectl.ipam.core.pools import Pools
from routectl.ipam.core.state import Allocator
from routectl.model import NodeView


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Rebuilt:
    """The allocator, and which claims stand behind a live Node (or a resumed one)."""

    allocator: Allocator
    confirmed: frozenset[str]
    orphans: tuple[Claim, ...]


def rebuild(
    *,
    pools: Pools,
    nodes: Iterable[NodeView],
    claims: Iterable[Claim],
    routes: Collection[str],
    now: float,
    reuse_delay: float,
    exclusions: Mapping[str, Iterable[Network]] | None = None,
) -> Rebuilt:
    """The allocator for this API state (``routes``: canonical listed destinations)."""
    claims = tuple(claims)
    nodes = tuple(nodes)
    pools = pools.with_draining(c.pool for c in claims if c.pool is not None)
    allocator = Allocator(pools, reuse_delay=reuse_delay)
    for source, networks in (exclusions or {}).items():
        allocator.exclude(source, networks)
    allocator.load(nodes, now=now)
    confirmed, orphans = _sort_claims(allocator, claims, nodes)
    for claim in orphans:
        if claim.network not in allocator.quarantined:
            allocator.quarantine(claim.network, since=now)
    for text in routes:
        network = network_or_none(text)
        if (
            network is not None
            and pools.containing(network) is not None
            and allocator.space.is_free(network)
        ):
            allocator.quarantine(network, since=now)
    allocator.quarantined.listed(routes, at=now)
    return Rebuilt(allocator=allocator, confirmed=frozenset(confirmed), orphans=tuple(orphans))


def _sort_claims(
    allocator: Allocator, claims: Iterable[Claim], nodes: Iterable[NodeView]
) -> tuple[set[str], list[Claim]]:
    """Which claims stand behind a live Node (resuming pending ones), and the orphans."""
    pools = allocator.pools
    by_name = {node.name: node for node in nodes}
    confirmed: set[str] = set()
    orphans: list[Claim] = []
    resumes: dict[str, list[Claim]] = {}
    for claim in claims:
        node = by_name.get(claim.node)
        if node is None or node.uid != claim.uid:
            orphans.append(claim)
        elif not node.pod_cidrs:
            resumes.setdefault(node.name, []).append(claim)
        elif claim.network in allocator.held(node.name):
            confirmed.add(claim.name)
        else:
            orphans.append(claim)
    for name, held in resumes.items():
        order = {family: index for index, family in enumerate(pools.families)}
        held.sort(key=lambda c: order.get(c.network.version, len(order)))
        families = [c.network.version for c in held]
        complete = families == list(pools.families)
        if complete and allocator.resume(name, tuple(c.network for c in held)):
            confirmed.update(c.name for c in held)
        else:
            orphans.extend(held)
    return confirmed, orphans

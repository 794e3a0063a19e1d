"""Node IPAM over any interleaving: Nodes come and go, syncs patch or fail or time out,
the process restarts or leadership changes (a rebuild from the API), pools change.

A small model of the API (Nodes, claim Leases, routes) drives the pure allocator the way
:mod:`routectl.ipam.edge.step` does. After every step: no two live Nodes hold overlapping
pod CIDRs, every pod CIDR lies in an active or draining pool and outside the exclusions,
and no block is handed out while a route to it exists or sooner than the reuse delay after
its route went.
After quiescence (every Node gone, the quarantine over): nothing is held, no claim is
left, and every block is free again."""

from __future__ import annotations

import dataclasses
from ipaddress import ip_network

from hypothesis import given, settings, strategies as st

from routectl.cidr import network_or_none
from routectl.ipam.core import Allocator, Claim, Pools, claim_name, rebuild
from routectl.ipam.core.state import NODE
from routectl.model import NodeView

POOL = ip_network("10.0.0.0/27")
EXTRA = ip_network("10.0.1.0/27")
EXCLUDED = ip_network("10.0.0.0/28")
DELAY = 5.0


def pools(*, extra: bool, mask: int) -> Pools:
    return Pools.build(
        cluster_cidrs=[POOL],
        additional=[EXTRA] if extra else [],
        masks={4: mask, 6: 64},
        exclusions=[EXCLUDED],
    )


@dataclasses.dataclass
class World:
    extra: bool = True
    mask: int = 28
    nodes: dict[str, NodeView] = dataclasses.field(default_factory=dict)
    claims: dict[str, Claim] = dataclasses.field(default_factory=dict)
    routes: set[str] = dataclasses.field(default_factory=set)
    unseen: list[tuple[NodeView, NodeView]] = dataclasses.field(default_factory=list)
    route_gone: dict[str, float] = dataclasses.field(default_factory=dict)
    now: float = 0.0
    made: int = 0
    alloc: Allocator | None = None

    def restart(self) -> None:
        self.unseen.clear()  # a new process lists: it sees everything
        self.alloc = rebuild(
            pools=pools(extra=self.extra, mask=self.mask),
            nodes=self.nodes.values(),
            claims=self.claims.values(),
            routes=frozenset(self.routes),
            now=self.now,
            reuse_delay=DELAY,
        ).allocator

    @property
    def a(self) -> Allocator:
        assert self.alloc is not None
        return self.alloc

    def add(self) -> None:
        self.made += 1
        view = NodeView(
            name=f"n{self.made}",
            uid=f"u{self.made}",
            pod_cidrs=(),
            addresses=(),
            created=f"{self.made:06d}",
        )
        self.nodes[view.name] = view
        self.a.observe(None, view, now=self.now)

    def delete(self, pick: int) -> None:
        if not self.nodes:
            return
        name = sorted(self.nodes)[pick % len(self.nodes)]
        old = self.nodes.pop(name)
        self.deliver()
        self.a.observe(old, None, now=self.now)
        gone = [c for c in old.pod_cidrs if c in self.routes]  # the route planner deletes
        self.routes.difference_update(gone)
        self.route_gone.update(dict.fromkeys(gone, self.now))
        self.a.quarantined.deleted(gone, at=self.now)

    def deliver(self) -> None:
        for old, new in self.unseen:
            self.a.observe(old, new, now=self.now)
        self.unseen.clear()

    def sync(self, outcome: str) -> None:
        self.deliver()
        self.a.quarantined.listed(frozenset(self.routes), at=self.now)
        for network in self.a.quarantined.reusable(self.now):
            self.claims.pop(claim_name(network), None)
            self.a.free(network)
        for allocation in self.a.plan().allocations:
            node = self.nodes.get(allocation.node)
            if node is None or node.pod_cidrs:
                continue
            mine = True
            for network in allocation.cidrs:
                held = self.claims.get(claim_name(network))
                if held is not None and held.uid != allocation.uid:
                    self.a.claimed_elsewhere(network, held.node)
                    self.a.unreserve(allocation.node)
                    mine = False
                    break
                pool = self.a.pool_of(network)
                self.claims[claim_name(network)] = Claim(
                    network=network,
                    node=node.name,
                    uid=node.uid,
                    pool=pool.network if pool else None,
                )
            if not mine or outcome == "fail":
                continue
            for network in allocation.cidrs:  # quarantine: no route, and the delay passed
                assert str(network) not in self.routes, f"{network} reused while routed"
                since = self.route_gone.get(str(network), -DELAY)
                assert self.now - since >= DELAY, f"{network} reused {self.now - since}s after"
            new = dataclasses.replace(node, pod_cidrs=tuple(str(c) for c in allocation.cidrs))
            self.nodes[node.name] = new
            self.routes.update(new.pod_cidrs)  # the same sync routes it
            if outcome == "timeout":
                self.unseen.append((node, new))  # written; the echo comes later
            else:
                self.a.observe(node, new, now=self.now)

    def check(self) -> None:
        held = [
            (name, network)
            for name, view in self.nodes.items()
            for text in view.pod_cidrs
            if (network := network_or_none(text)) is not None
        ]
        for i, (name, mine) in enumerate(held):
            for other, theirs in held[i + 1 :]:
                assert not mine.overlaps(theirs), f"{name} {mine} overlaps {other} {theirs}"
        allowed = [p.network for p in self.a.pools.all]
        for name, network in held:
            inside = any(p.version == network.version and network.subnet_of(p) for p in allowed)  # type: ignore[arg-type]
            assert inside, f"{name} {network} outside pools"
            assert not network.overlaps(EXCLUDED), f"{name} {network} in the exclusions"


STEPS = st.lists(
    st.one_of(
        st.just(("add",)),
        st.just(("add",)),
        st.tuples(st.just("sync"), st.just("ok")),
        st.tuples(st.just("delete"), st.integers(0, 20)),
        st.tuples(st.just("sync"), st.sampled_from(["ok", "ok", "fail", "timeout"])),
        st.just(("restart",)),
        st.just(("pools",)),
        st.just(("mask",)),
        st.tuples(st.just("wait"), st.sampled_from([1.0, 6.0])),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(STEPS)
def test_no_overlap_no_stray_and_no_leak_over_any_interleaving(
    steps: list[tuple[object, ...]],
) -> None:
    world = World()
    world.restart()
    for step in steps:
        match step:
            case ("add",):
                world.add()
            case ("delete", int(pick)):
                world.delete(pick)
            case ("sync", str(outcome)):
                world.sync(outcome)
            case ("restart",):
                world.restart()  # a crash, or another replica taking the lead
            case ("pools",):
                world.extra = not world.extra  # appended, or removed (then it drains)
                world.restart()
            case ("mask",):
                world.mask = 29 if world.mask == 28 else 28  # new Nodes only; sizes mix
                world.restart()
            case ("wait", float(seconds)):
                world.now += seconds
        world.check()
    while world.nodes:
        world.delete(0)
    world.sync("ok")  # the listing shows the routes gone: the delay starts
    world.now += DELAY
    world.sync("ok")
    assert not world.claims
    assert not any(
        t.startswith(NODE)
        for n in list(world.a.space.overlapping(ip_network("10.0.0.0/16")))
        for t in world.a.space.tags(n)
    )
    assert len(world.a.quarantined) == 0
    for pool in world.a.pools.active:
        taken_by_exclusion = world.a.space.taken(pool.network) // (1 << (32 - pool.mask))
        assert (
            world.a.space.free_blocks(pool.network, pool.mask) == pool.capacity - taken_by_exclusion
        )

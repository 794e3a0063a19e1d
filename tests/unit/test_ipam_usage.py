"""Pool usage and its warnings: quarantined blocks past their reuse delay are not "taken",
so churn alone never raises "add a pool"; blocks inside the delay are."""

from __future__ import annotations

from routectl.cidr import parse_cidr as net
from routectl.ipam.core import Allocator, Levels, Pools, usage
from routectl.ipam.core.usage import PoolUsage
from routectl.model import NodeView

DELAY = 60.0


def node(name: str, cidr: str) -> NodeView:
    return NodeView(
        name=name,
        uid=f"uid-{name}",
        pod_cidrs=(cidr,),
        addresses=(),
        created="2026-01-01T00:00:00Z",
    )


def churned() -> Allocator:
    """A /24 pool in /26 blocks (4): two held by Nodes, two released; routectl deleted
    their routes at 10 s; no listing since."""
    pools = Pools.build(cluster_cidrs=[net("10.0.0.0/24")], masks={4: 26, 6: 64}, exclusions=[])
    a = Allocator(pools, reuse_delay=DELAY)
    held = [node(f"n{i}", f"10.0.0.{64 * i}/26") for i in range(4)]
    for each in held:
        a.observe(None, each, now=0.0)
    for each in held[:2]:
        a.observe(each, None, now=5.0)
    a.quarantined.deleted(["10.0.0.0/26", "10.0.0.64/26"], at=10.0)
    return a


def test_blocks_inside_the_delay_are_taken_and_past_it_are_not() -> None:
    a = churned()
    (inside,) = usage(a, now=10.0 + DELAY - 1)
    assert (inside.free, inside.used, inside.quarantined, inside.due) == (0, 2, 2, 0)
    assert inside.share == 1.0
    (past,) = usage(a, now=10.0 + DELAY)
    assert (past.free, past.used, past.quarantined, past.due) == (0, 2, 2, 2)
    assert past.share == 0.5
    assert "2/4 /26 blocks; 2 used by Nodes, 2 quarantined" in past.message(0.8)


def test_churn_past_the_delay_raises_no_pool_warning() -> None:
    a, levels = churned(), Levels()
    assert levels.crossed(usage(a, now=10.0 + DELAY)) == []
    fresh = Levels()
    ((warned, level),) = fresh.crossed(usage(a, now=10.0))
    assert (warned.share, level) == (1.0, 0.95)


def test_a_block_past_its_delay_awaits_a_listing_taken_after_its_route_went() -> None:
    a = churned()
    assert not a.quarantined.awaits_listing(10.0 + DELAY - 1)
    assert a.quarantined.awaits_listing(10.0 + DELAY)
    assert a.quarantined.reusable(10.0 + DELAY) == []
    a.quarantined.listed(frozenset(), at=10.0 + DELAY)
    assert not a.quarantined.awaits_listing(10.0 + DELAY)
    assert [str(n) for n in a.quarantined.reusable(10.0 + DELAY)] == [
        "10.0.0.0/26",
        "10.0.0.64/26",
    ]


def test_a_pool_hovering_at_a_level_warns_once() -> None:
    """Churn moves a pool between 78 % and 86 %: one warning at 80 %, not one per wave; it
    warns again only after falling clearly below (by REARM) and rising again."""
    pools = Pools.build(cluster_cidrs=[net("10.0.0.0/17")], masks={4: 24, 6: 64}, exclusions=[])
    (pool,) = pools.all
    levels = Levels()

    def at(used: int) -> list[tuple[PoolUsage, float]]:
        each = PoolUsage(
            pool=pool,
            capacity=128,
            free=128 - used,
            used=used,
            quarantined=0,
            excluded=0,
            foreign=0,
        )
        return levels.crossed([each])

    shares = [100, 110, 100, 110, 100, 110]  # 78 % and 86 %
    assert [len(at(used)) for used in shares] == [0, 1, 0, 0, 0, 0]
    assert at(90) == []  # 70 %: re-armed
    ((_, level),) = at(110)
    assert level == 0.80

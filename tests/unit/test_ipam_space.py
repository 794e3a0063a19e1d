"""The sparse free structure: any width, memory by allocations, counted holders."""

from __future__ import annotations

from ipaddress import ip_network as net

from routectl.ipam.core import Allocator, Pools
from routectl.ipam.core.space import AddressSpace
from routectl.model import NodeView


def test_ipv6_slash_32_into_slash_64_and_ipv4_slash_8_into_slash_30() -> None:
    """2**32 and 2**22 blocks: no bitmap, no 16-bit limit; lowest first, aligned."""
    pools = Pools.build(
        cluster_cidrs=[net("10.0.0.0/8"), net("2001:db8::/32")], masks={4: 30, 6: 64}
    )
    a = Allocator(pools, reuse_delay=0.0)
    for i in range(1000):
        a.observe(
            None,
            NodeView(name=f"n{i:04d}", uid=f"u{i}", pod_cidrs=(), addresses=(), created=f"{i:06d}"),
            now=0.0,
        )
    allocations = a.plan().allocations
    assert len(allocations) == 1000
    assert [str(c) for c in allocations[999].cidrs] == ["10.0.15.156/30", "2001:db8:0:3e7::/64"]
    assert pools.active[1].capacity == 2**32
    assert a.space.free_blocks(net("2001:db8::/32"), 64) == 2**32 - 1000
    assert len(a.space._runs[4].starts) == 1  # the 1000 blocks are one run: memory follows runs
    assert len(a.space._runs[6].starts) == 1


def test_a_block_two_holders_hold_stays_taken_until_both_let_go() -> None:
    space = AddressSpace()
    block = net("10.0.1.0/24")
    space.add(block, "node:a")
    space.add(block, "node:b")
    space.discard(block, "node:a")
    assert not space.is_free(block)
    space.discard(block, "node:b")
    assert space.is_free(block)


def test_releasing_inside_an_exclusion_never_clears_it() -> None:
    space = AddressSpace()
    space.add(net("10.0.0.0/16"), "excluded:flags")
    space.add(net("10.0.1.0/24"), "node:a")
    space.discard(net("10.0.1.0/24"), "node:a")
    assert not space.is_free(net("10.0.1.0/24"))
    space.discard(net("10.0.0.0/16"), "excluded:flags")
    assert space.is_free(net("10.0.0.0/8"))


def test_mixed_sizes_align_without_overlap() -> None:
    """A new mask size applies to new Nodes; blocks of both sizes never overlap."""
    space = AddressSpace()
    pool = net("10.0.0.0/16")
    space.add(net("10.0.0.0/26"), "node:old")
    assert str(space.lowest_free(pool, 24)) == "10.0.1.0/24"
    assert str(space.lowest_free(pool, 26)) == "10.0.0.64/26"
    space.add(net("10.0.1.0/24"), "node:new")
    assert str(space.lowest_free(pool, 25)) == "10.0.0.128/25"

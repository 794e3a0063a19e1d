"""The pieces of KCM's node IPAM that the simulator rebuilds: its CIDR set and work queue.

Checked against ``shared/docs/node-ipam.md`` §1.3 and §1.5: the next-fit cursor, bits that
are not reference counts, KCM's error text, the default controller rate limiter, and the
queue's promises (one copy per item, never two workers on it). Time is looptime's.
"""

from __future__ import annotations

import asyncio
from ipaddress import ip_network

import pytest

from routectl_sim.cidrset import NO_CIDRS_REMAINING, CidrOutOfRangeError, CidrSet, CidrSetFullError
from routectl_sim.workqueue import ControllerRateLimiter, WorkQueue


def test_first_node_gets_the_first_block_and_occupied_blocks_are_skipped() -> None:
    """Upstream's cases: a /24 cut into /30s hands out .0/30 first; with .0/26 occupied
    (a service range) .64/30; with .64 .68 .72 .80 occupied too, .76/30."""
    assert str(CidrSet(ip_network("127.123.234.0/24"), 30).allocate_next()) == "127.123.234.0/30"
    pool = CidrSet(ip_network("127.123.234.0/24"), 30)
    pool.occupy(ip_network("127.123.234.0/26"))
    assert str(pool.allocate_next()) == "127.123.234.64/30"
    pool = CidrSet(ip_network("127.123.234.0/24"), 30)
    pool.occupy(ip_network("127.123.234.0/26"))
    for taken in ("64", "68", "72", "80"):
        pool.occupy(ip_network(f"127.123.234.{taken}/30"))
    assert str(pool.allocate_next()) == "127.123.234.76/30"


def test_a_full_set_fails_with_kcms_text() -> None:
    """Every /30 of a /28 occupied: allocation fails with ErrCIDRRangeNoCIDRsRemaining."""
    pool = CidrSet(ip_network("127.123.234.0/28"), 30)
    pool.occupy(ip_network("127.123.234.0/28"))
    with pytest.raises(CidrSetFullError, match="no remaining CIDRs left"):
        pool.allocate_next()
    assert str(CidrSetFullError()) == NO_CIDRS_REMAINING


def test_the_cursor_rotates_so_a_released_block_waits_for_the_wrap() -> None:
    """Next-fit: block 0 released after blocks 0-2 went out is not the next answer, block 3
    is; it comes back only once the cursor wraps round."""
    pool = CidrSet(ip_network("10.0.0.0/22"), 24)
    first = [pool.allocate_next() for _ in range(3)]
    pool.release(first[0])
    assert str(pool.allocate_next()) == "10.0.3.0/24"
    assert pool.allocate_next() == first[0]


def test_releasing_everything_then_allocating_gives_the_same_order() -> None:
    """``TestCIDRSet_RandomishAllocation``: all 256 out, all back, the same 256 again."""
    pool = CidrSet(ip_network("10.0.0.0/16"), 24)
    once = [pool.allocate_next() for _ in range(256)]
    for block in once:
        pool.release(block)
    assert [pool.allocate_next() for _ in range(256)] == once


def test_bits_are_not_reference_counts() -> None:
    """Occupying twice counts once; one release frees a block two Nodes hold."""
    pool = CidrSet(ip_network("10.10.0.0/22"), 24)
    shared = ip_network("10.10.0.0/24")
    pool.occupy(shared)
    pool.occupy(shared)
    assert pool.allocated == 1
    pool.release(shared)
    assert pool.allocated == 0
    assert pool.allocate_next() == shared


def test_a_cidr_outside_the_pool_is_refused() -> None:
    """``cidr %v is out the range of cluster cidr %v``."""
    with pytest.raises(CidrOutOfRangeError, match="is out the range of cluster cidr"):
        CidrSet(ip_network("10.10.0.0/22"), 24).occupy(ip_network("10.20.0.0/24"))


def test_the_rate_limiter_backs_off_per_item_and_shares_one_bucket() -> None:
    """5 ms · 2ⁿ per item, capped at 1000 s; a success starts the item over; past the
    burst of 100, retries wait for the 10/s bucket whatever their own backoff."""
    limiter = ControllerRateLimiter()
    assert [limiter.when("a", now=0.0) for _ in range(3)] == [0.005, 0.01, 0.02]
    limiter.forget("a")
    assert limiter.when("a", now=0.0) == 0.005
    for _ in range(30):
        limiter.when("b", now=0.0)
    assert limiter.when("b", now=0.0) == 1000.0
    for n in range(100 - 35):
        limiter.when(f"c{n}", now=0.0)
    assert limiter.when("d", now=0.0) == pytest.approx(0.1)


@pytest.mark.looptime
async def test_the_queue_holds_one_copy_and_requeues_an_item_added_while_processed() -> None:
    """Two adds queue one copy; an add during processing queues it again after done; a
    rate-limited add waits its backoff on the loop clock."""
    queue = WorkQueue(ControllerRateLimiter())
    queue.add("n")
    queue.add("n")
    assert await queue.get() == "n"
    queue.add("n")
    with pytest.raises(TimeoutError):  # never handed out while processed
        await asyncio.wait_for(queue.get(), timeout=1.0)
    queue.done("n")
    assert await queue.get() == "n"
    queue.done("n")
    start = asyncio.get_running_loop().time()
    for _ in range(4):
        queue.add_rate_limited("n")
        assert await queue.get() == "n"
        queue.done("n")
    assert asyncio.get_running_loop().time() - start == pytest.approx(0.005 + 0.01 + 0.02 + 0.04)
    queue.close()

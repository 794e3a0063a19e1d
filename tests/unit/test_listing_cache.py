"""ListingCache: one ListRoutes per max_age, kept current with our own writes."""

from __future__ import annotations

import asyncio
from ipaddress import ip_network

import pytest

from routectl.cloud.listing import ListingCache
from routectl.errors import ProviderError
from routectl.model import Route
from routectl.plan.reconcile import Plan
from routectl.testing import CloudSettings, FakeCloud, FakeProvider, Fault

pytestmark = pytest.mark.looptime
CLUSTER_CIDRS = (ip_network("10.244.0.0/16"),)


def route(node: str, cidr: str) -> Route:
    return Route(target_node=node, destination_cidr=cidr)


def cache(cloud: FakeCloud, max_age: float = 60.0) -> ListingCache:
    return ListingCache(
        provider=FakeProvider.over(cloud, "c"),
        cluster_cidrs=CLUSTER_CIDRS,
        max_age=max_age,
        clock=asyncio.get_running_loop().time,
    )


async def test_lists_once_and_hands_out_an_old_listing_marked_stale() -> None:
    """The first get lists; later ones reuse it, past max_age too (marked stale, never
    listed in front of the caller), until fresh is asked for or it was invalidated."""
    cloud = FakeCloud()
    listing = cache(cloud)
    assert (await listing.get(fresh=False)).fresh
    young = await listing.get(fresh=False)
    assert (young.fresh, young.stale) == (False, False)
    assert (await listing.get(fresh=True)).fresh
    await asyncio.sleep(61)
    old = await listing.get(fresh=False)
    assert (old.fresh, old.stale) == (False, True)
    assert cloud.count("list") == 2
    listing.invalidate()
    assert (await listing.get(fresh=False)).fresh
    assert cloud.count("list") == 3


async def test_max_age_zero_lists_every_time() -> None:
    """--route-listing-max-age=0 behaves like upstream: a ListRoutes per sync."""
    cloud = FakeCloud()
    listing = cache(cloud, max_age=0)
    for _ in range(3):
        assert (await listing.get(fresh=False)).fresh
    assert cloud.count("list") == 3


async def test_own_writes_update_routes_index_and_owned_count() -> None:
    """Deleted routes leave the cache and index, created ones join; owned follows both."""
    cloud = FakeCloud()
    cloud.add_route("c", route("a", "10.244.1.0/24"))
    cloud.add_route("c", route("vpn", "192.168.0.0/24"))  # not ours: never owned
    listing = cache(cloud)
    first = await listing.get(fresh=True)
    assert listing.owned == 1
    (mine,) = [r for r in first.routes if r.target_node == "a"]
    listing.remember(deleted=[mine], created=[route("b", "10.244.2.0/24")])
    again = await listing.get(fresh=False)
    assert {(r.target_node, r.destination_cidr) for r in again.routes} == {
        ("vpn", "192.168.0.0/24"),
        ("b", "10.244.2.0/24"),
    }
    assert [r.target_node for r in again.index.related({"a", "b"}, ())] == ["b"]
    assert listing.owned == 1


async def test_a_route_we_made_must_be_listed_before_it_is_deleted() -> None:
    """A plan deleting a route known only from our own create asks for a fresh listing."""
    listing = cache(FakeCloud())
    await listing.get(fresh=True)
    listing.remember(deleted=[], created=[route("b", "10.244.2.0/24")])
    (made,) = (await listing.get(fresh=False)).routes
    assert listing.must_relist(Plan(deletes=(made,)))
    await listing.get(fresh=True)
    assert not listing.must_relist(Plan(deletes=(made,)))


async def test_a_prefetch_lists_once_and_the_next_get_takes_it() -> None:
    """A listing started early (beside the first Node list) answers the first get, fresh
    or not, without a second ListRoutes; later gets behave as before."""
    cloud = FakeCloud(CloudSettings(list_latency=0.2))
    cloud.add_route("c", route("a", "10.244.1.0/24"))
    listing = cache(cloud)
    loop = asyncio.get_running_loop()
    start = loop.time()
    listing.prefetch()
    listing.prefetch()  # one under way is enough
    await asyncio.sleep(0.15)
    first = await listing.get(fresh=True)
    assert loop.time() - start == pytest.approx(0.2)  # waited only for the rest of it
    assert first.fresh
    assert [r.destination_cidr for r in first.routes] == ["10.244.1.0/24"]
    assert cloud.count("list") == 1
    assert not (await listing.get(fresh=False)).fresh
    assert cloud.count("list") == 1


async def test_a_failed_prefetch_fails_the_get_that_takes_it_and_no_other() -> None:
    cloud = FakeCloud()
    cloud.fail_next("list", Fault(error=ProviderError("503")), times=1)
    listing = cache(cloud)
    listing.prefetch()
    with pytest.raises(ProviderError):
        await listing.get(fresh=True)
    assert (await listing.get(fresh=True)).fresh


async def test_a_prefetch_nobody_takes_can_be_dropped() -> None:
    cloud = FakeCloud(CloudSettings(list_latency=5.0))
    listing = cache(cloud)
    listing.prefetch()
    await asyncio.sleep(1)
    listing.cancel()
    await asyncio.sleep(10)
    assert (await listing.get(fresh=False)).fresh
    assert cloud.count("list") == 2


async def test_a_prefetch_older_than_max_age_is_not_planned_on() -> None:
    """A prefetch that waited long for its taker (the API server was down) is dropped and
    the taker lists anew; with max_age 0 nothing is prefetched at all."""
    cloud = FakeCloud()
    listing = cache(cloud, max_age=60.0)
    listing.prefetch()
    await asyncio.sleep(61)
    cloud.add_route("c", route("late", "10.244.9.0/24"))
    taken = await listing.get(fresh=True)
    assert [r.target_node for r in taken.routes] == ["late"]
    assert cloud.count("list") == 2
    upstream = cache(cloud, max_age=0)
    upstream.prefetch()
    await asyncio.sleep(1)
    assert cloud.count("list") == 2


async def test_an_unchanged_listing_keeps_its_index_a_changed_one_gets_a_new_one() -> None:
    """Relisting a table at rest costs a comparison: the same routes, index and count; a
    changed table, or one with routectl's own routes not listed yet, is indexed anew."""
    cloud = FakeCloud()
    cloud.add_route("c", route("a", "10.244.1.0/24"))
    cloud.add_route("c", route("x", "192.168.0.0/24"))  # not the cluster's
    listing = cache(cloud)
    first = await listing.get(fresh=True)
    version = listing.version
    again = await listing.get(fresh=True)
    assert again.fresh
    assert again.index is first.index
    assert listing.version == version, "the same routes: the same version"
    assert [r.destination_cidr for r in again.routes] == ["10.244.1.0/24", "192.168.0.0/24"]
    assert listing.owned == 1
    cloud.add_route("c", route("b", "10.244.2.0/24"))
    changed = await listing.get(fresh=True)
    assert changed.index is not first.index
    assert listing.version > version
    version = listing.version
    assert listing.owned == 2
    listing.remember(deleted=(), created=[route("d", "10.244.4.0/24")])  # not listed yet
    assert listing.version > version, "our own write changes the cached routes"
    cloud.add_route("c", route("d", "10.244.4.0/24"))
    relisted = await listing.get(fresh=True)
    assert relisted.index is not changed.index, "our own route is taken as the cloud lists it"
    assert listing.owned == 3
    assert not listing.must_relist(Plan(deletes=(relisted.routes[-1],)))


async def test_owned_is_taken_from_the_full_plan_or_counted_when_asked() -> None:
    """After a fresh listing the owned count is the full plan's when it says so first (not
    counted again), else counted when asked; a later word changes nothing; writes move it."""
    cloud = FakeCloud()
    cloud.add_route("c", route("a", "10.244.1.0/24"))
    cloud.add_route("c", route("vpn", "192.168.0.0/24"))
    listing = cache(cloud)
    await listing.get(fresh=True)
    listing.counted(7)  # a plan's word is taken as is: nothing is counted
    assert listing.owned == 7
    listing.remember(deleted=(), created=[route("b", "10.244.2.0/24")])
    assert listing.owned == 8
    await listing.get(fresh=True)
    listing.remember(deleted=(), created=[route("c", "10.244.3.0/24")])
    assert listing.owned == 2  # counted when asked: the listed route and the one we made
    listing.counted(7)
    assert listing.owned == 2

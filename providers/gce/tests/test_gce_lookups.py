"""Instance look-ups against the fake Compute API: their cost (one request per unknown
instance at most, none after a listing), zones, and instances that are missing or gone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gce_scene import UID_A, UID_B, route
from routectl_gce.names import route_name
from routectl_gce.testing import FakeCompute

from routectl.errors import (
    ProviderError,
)

# -- instance look-ups -----------------------------------------------------------------------


async def test_an_instance_is_looked_up_once(fake: FakeCompute, make: Any) -> None:
    """One aggregatedList per unknown instance, whatever its zone; cached after."""
    provider = make()
    await provider.create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    await provider.create_route(route("node-a", "fd00:10:244:1::/64"), name_hint=UID_A)
    await provider.create_route(route("node-b", "10.244.2.0/24"), name_hint=UID_B)
    assert fake.route_requests("GET", "/aggregated/instances") == 2
    assert fake.route_requests("GET", "/zones/") == 0


async def test_concurrent_creates_share_one_look_up(fake: FakeCompute, make: Any) -> None:
    """Both families of a new Node created at once cost one look-up, not two."""
    provider = make()
    await asyncio.gather(
        provider.create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A),
        provider.create_route(route("node-a", "fd00:10:244:1::/64"), name_hint=UID_A),
    )
    assert fake.route_requests("GET", "/aggregated/instances") == 1


async def test_a_listing_teaches_instances_for_free(fake: FakeCompute, make: Any) -> None:
    """A fresh provider that listed a Node's route looks nothing up to route it again."""
    await make().create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    before = fake.route_requests("GET", "/instances")
    fresh = make()
    await fresh.list_routes()
    await fresh.create_route(route("node-a", "fd00:10:244:1::/64"), name_hint=UID_A)
    assert fake.route_requests("GET", "/instances") == before


async def test_a_single_zone_cluster_gets_the_instance_in_its_zone(
    fake: FakeCompute, make: Any
) -> None:
    """With local-zone and neither multizone nor regional: the zone alone is asked (the CCM
    asks it too); a Node name with a domain is its instance's name."""
    provider = make(**{"local-zone": "us-central1-c"})
    await provider.create_route(
        route("node-b.c.fake-project.internal", "10.244.2.0/24"), name_hint=UID_B
    )
    await provider.create_route(route("node-b", "fd00:10:244:2::/64"), name_hint=UID_B)
    assert (
        fake.requests.count("GET /compute/v1/projects/fake-project/zones/us-central1-c/instances")
        == 1
    )
    assert fake.route_requests("GET", "/aggregated") == 0


async def test_an_unknown_instance_is_transient_and_not_cached(
    fake: FakeCompute, make: Any
) -> None:
    """A Node whose instance the API does not show yet fails, and is looked up again later."""
    provider = make()
    with pytest.raises(ProviderError, match="no instance named 'node-new'"):
        await provider.create_route(route("node-new", "10.244.9.0/24"), name_hint=UID_A)
    fake.add_instance("node-new")
    await provider.create_route(route("node-new", "10.244.9.0/24"), name_hint=UID_A)
    assert fake.route_requests("GET", "/aggregated/instances") == 2


async def test_a_deleted_instance_is_forgotten(fake: FakeCompute, make: Any) -> None:
    """An instance re-created in another zone is found anew after its old URL failed."""
    provider = make()
    await provider.create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    fake.delete_instance("node-a")
    fake.add_instance("node-a", zone="us-central1-f")
    with pytest.raises(ProviderError, match="RESOURCE_NOT_FOUND"):
        await provider.create_route(route("node-a", "fd00:10:244:1::/64"), name_hint=UID_A)
    await provider.create_route(route("node-a", "fd00:10:244:1::/64"), name_hint=UID_A)
    v6 = fake.routes[route_name("kubernetes", UID_A, version=6)]
    assert "/zones/us-central1-f/" in v6["nextHopInstance"]

"""Route names and which routes are this cluster's, against the fake Compute API: the CCM's
names and fields, the ownership filter, pages, and names for two destinations under one
hint."""

from __future__ import annotations

import uuid
from typing import Any

from gce_scene import ROUTES, UID_A, UID_B, route
from routectl_gce.names import route_name
from routectl_gce.testing import FakeCompute

# -- names and ownership -------------------------------------------------------------------


def test_routes_are_named_as_cloud_provider_gcp_names_them() -> None:
    """<cluster[:26]>-<Node UID>; IPv6 and non-UID hints get a UUID of their own."""
    prefix = "a-cluster-name-that-is-long"[:26]
    assert route_name(prefix, UID_A, version=4) == f"{prefix}-{UID_A}"
    assert len(route_name(prefix, UID_A, version=4)) == 63  # the API's limit, exactly
    v6 = route_name(prefix, UID_A, version=6)
    assert v6 != route_name(prefix, UID_A, version=4)
    assert str(uuid.UUID(v6.removeprefix(f"{prefix}-"))) == v6.removeprefix(f"{prefix}-")
    assert route_name(prefix, "node-uid", version=4) == route_name(prefix, "node-uid", version=4)


async def test_listing_reads_only_this_clusters_routes(fake: FakeCompute, make: Any) -> None:
    """Another cluster whose name starts like ours, another network, a person's route and
    a route without the CCM's description are never listed; the CCM's own route is."""
    a = fake.add_instance("their-node")
    hop = fake.add_instance("node-c")
    fake.add_route(
        f"kubernetes-{UID_A}", "10.244.1.0/24", next_hop_instance=hop, description="k8s-node-route"
    )
    fake.add_route(
        f"kubernetes-b-{UID_B}", "10.245.1.0/24", next_hop_instance=a, description="k8s-node-route"
    )
    fake.add_route(
        f"other-{UID_B}", "10.246.1.0/24", next_hop_instance=a, description="k8s-node-route"
    )
    fake.add_route(
        f"kubernetes-{UID_B}",
        "10.247.1.0/24",
        next_hop_instance=a,
        description="k8s-node-route",
        network=fake.network_url.replace("/default", "/other-net"),
    )
    fake.add_route("kubernetes-vpn", "10.248.0.0/16", next_hop_ip="10.128.0.9")
    fake.add_route(
        f"kubernetes-{uuid.uuid4()}", "10.249.1.0/24", next_hop_instance=a, description="by hand"
    )

    listed = await make().list_routes()

    assert [(r.name, r.target_node, r.destination_cidr) for r in listed] == [
        (f"kubernetes-{UID_A}", "node-c", "10.244.1.0/24")
    ]
    assert fake.route_requests("GET", ROUTES) == 1  # one filtered request, not a full read


async def test_a_route_the_ccm_made_is_adopted_without_a_write(
    fake: FakeCompute, make: Any
) -> None:
    """The CCM's route to the Node's instance counts as the route: no insert."""
    hop = fake.add_instance("node-c")
    fake.add_route(
        f"kubernetes-{UID_A}", "10.244.1.0/24", next_hop_instance=hop, description="k8s-node-route"
    )
    provider = make()
    await provider.create_route(route("node-c", "10.244.1.0/24"), name_hint=UID_A)
    assert fake.route_requests("POST", ROUTES) == 0
    assert fake.route_requests("GET", "/instances") == 0


async def test_every_page_is_read(fake: FakeCompute, make: Any) -> None:
    """A listing follows nextPageToken to the end, one paced request a page."""
    fake.page_size = 2
    hop = fake.add_instance("node-c")
    for index in range(5):
        fake.add_route(
            f"kubernetes-{uuid.uuid4()}",
            f"10.244.{index}.0/24",
            next_hop_instance=hop,
            description="k8s-node-route",
        )
    provider = make()
    assert len(await provider.list_routes()) == 5
    assert fake.route_requests("GET", ROUTES) == 3


async def test_created_route_has_the_ccms_fields(fake: FakeCompute, make: Any) -> None:
    """Description, priority, network and the instance's full URL, as the CCM writes them."""
    await make().create_route(route("node-b", "10.244.7.0/24"), name_hint=UID_B)
    made = fake.routes[f"kubernetes-{UID_B}"]
    assert made["description"] == "k8s-node-route"
    assert made["priority"] == 1000
    assert made["network"] == fake.network_url
    assert made["nextHopInstance"].endswith(
        "/projects/fake-project/zones/us-central1-c/instances/node-b"
    )
    assert "tags" not in made  # the CCM's routes apply to the whole network

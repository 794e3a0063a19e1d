"""Properties of the planner, over random clusters and clouds (hypothesis)."""

from __future__ import annotations

import collections
import dataclasses
from ipaddress import ip_network

from hypothesis import given, settings, strategies as st

from routectl.cidr import canonical
from routectl.model import NodeAddress, NodeView, Route
from routectl.reconcile import is_responsible, plan

CLUSTER = (ip_network("10.244.0.0/16"), ip_network("fd00:10:244::/56"))
CIDRS = [
    "10.244.1.0/24",
    "10.244.2.0/24",
    "10.244.3.0/24",
    "10.244.003.0/24",
    "10.244.4.9/24",
    "fd00:10:244:1::/64",
    "fd00:10:244:0001::/64",
    "192.168.0.0/24",
    "10.0.0.0/8",
    "10.244.0.0/15",
    "not-a-cidr",
    "",
]
NAMES = ["a", "b", "c", "d"]
ADDRESSES = [NodeAddress(type="InternalIP", address=f"10.0.0.{i}") for i in range(3)]

addresses = st.lists(st.sampled_from(ADDRESSES), max_size=2, unique=True).map(tuple)
nodes = st.lists(
    st.builds(
        NodeView,
        name=st.sampled_from(NAMES),
        uid=st.just("uid"),
        pod_cidrs=st.lists(st.sampled_from(CIDRS), max_size=3).map(tuple),
        addresses=addresses,
    ),
    max_size=4,
    unique_by=lambda n: n.name,
)
routes = st.lists(
    st.builds(
        Route,
        target_node=st.sampled_from([*NAMES, "", "gone"]),
        destination_cidr=st.sampled_from(CIDRS),
        target_node_addresses=addresses,
        blackhole=st.booleans(),
        enable_node_addresses=st.booleans(),
    ),
    max_size=6,
)


def apply(listed: list[Route], result, *, ena: bool) -> list[Route]:
    """What a faithful cloud holds after the plan ran without failures."""
    remaining = collections.Counter(listed)
    remaining.subtract(result.deletes)
    after = list(remaining.elements())
    after.extend(dataclasses.replace(c.route, enable_node_addresses=ena) for c in result.creates)
    return after


@settings(max_examples=400, deadline=None)
@given(nodes=nodes, listed=routes, ena=st.booleans())
def test_applying_a_plan_converges(nodes, listed, ena) -> None:
    """After the plan is applied, planning again finds nothing to do."""
    first = plan(nodes=nodes, routes=listed, cluster_cidrs=CLUSTER)
    second = plan(nodes=nodes, routes=apply(listed, first, ena=ena), cluster_cidrs=CLUSTER)
    assert second.empty, second


@settings(max_examples=400, deadline=None)
@given(nodes=nodes, listed=routes)
def test_nothing_outside_the_cluster_cidrs_is_deleted(nodes, listed) -> None:
    """Every planned delete is inside a cluster CIDR, so foreign routes are never touched."""
    result = plan(nodes=nodes, routes=listed, cluster_cidrs=CLUSTER)
    assert all(is_responsible(r.destination_cidr, CLUSTER) for r in result.deletes)
    assert all(r in listed for r in result.deletes)


@settings(max_examples=400, deadline=None)
@given(nodes=nodes, listed=routes)
def test_a_nodes_working_routes_are_never_deleted(nodes, listed) -> None:
    """A healthy route from a node to one of its own pod CIDRs is never deleted."""
    result = plan(nodes=nodes, routes=listed, cluster_cidrs=CLUSTER)
    claimed: dict[str, NodeView] = {}
    for node in sorted(nodes, key=lambda n: n.name):
        for cidr in node.pod_cidrs:
            claimed.setdefault(canonical(cidr), node)
    for route in result.deletes:
        owner = claimed.get(canonical(route.destination_cidr))
        healthy = (
            owner is not None
            and route.target_node == owner.name
            and not route.blackhole
            and (
                not route.enable_node_addresses
                or set(route.target_node_addresses) == set(owner.addresses)
            )
        )
        assert not healthy, route


@settings(max_examples=200, deadline=None)
@given(nodes=nodes, listed=routes)
def test_plan_never_raises_and_creates_are_unique(nodes, listed) -> None:
    """Any input plans without raising, and no route is created twice."""
    result = plan(nodes=nodes, routes=listed, cluster_cidrs=CLUSTER)
    keys = [canonical(c.route.destination_cidr) for c in result.creates]
    assert len(keys) == len(set(keys))

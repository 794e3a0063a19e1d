"""Properties of the planner, over random clusters and clouds (hypothesis)."""

from __future__ import annotations

import collections
import dataclasses
from ipaddress import ip_network

import pytest
from hypothesis import given, settings, strategies as st

from routectl.cidr import canonical
from routectl.model import NodeAddress, NodeView, Route
from routectl.plan.reconcile import is_responsible, plan

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
@pytest.mark.slow
def test_applying_a_plan_converges(nodes, listed, ena) -> None:
    """After the plan is applied, planning again finds nothing to do."""
    first = plan(nodes=nodes, routes=listed, cluster_cidrs=CLUSTER)
    second = plan(nodes=nodes, routes=apply(listed, first, ena=ena), cluster_cidrs=CLUSTER)
    assert second.empty, second


@settings(max_examples=400, deadline=None)
@given(nodes=nodes, listed=routes)
@pytest.mark.slow
def test_nothing_outside_the_cluster_cidrs_is_deleted(nodes, listed) -> None:
    """Every planned delete is inside a cluster CIDR, so foreign routes are never touched."""
    result = plan(nodes=nodes, routes=listed, cluster_cidrs=CLUSTER)
    assert all(is_responsible(r.destination_cidr, CLUSTER) for r in result.deletes)
    assert all(r in listed for r in result.deletes)


@settings(max_examples=400, deadline=None)
@given(nodes=nodes, listed=routes)
@pytest.mark.slow
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


def apply_to_table(table: dict[str, Route], result, *, ena: bool) -> dict[str, Route]:
    """A keyed cloud (one route per canonical destination, like AWS's) after ``result``:
    a delete removes only the route with that destination *and* target; a create for a
    destination that is taken changes nothing ("already exists")."""
    after = dict(table)
    for route in result.deletes:
        key = canonical(route.destination_cidr)
        if key in after and after[key].target_node == route.target_node:
            del after[key]
    for create in result.creates:
        after.setdefault(
            canonical(create.route.destination_cidr),
            dataclasses.replace(create.route, enable_node_addresses=ena),
        )
    return after


def shape(table: dict[str, Route]) -> dict[str, tuple[str, bool]]:
    """A table as destination -> (target, blackhole): what matters to traffic."""
    return {key: (r.target_node, r.blackhole) for key, r in table.items()}


def wanted_routes(nodes, table: dict[str, Route]) -> set[str]:
    """The destinations in ``table`` whose route is right for a Node that wants it (not a
    blackhole; with the addresses the Node has, where the cloud reports addresses)."""
    by_name = {n.name: n for n in nodes}
    return {
        key
        for key, r in table.items()
        if (node := by_name.get(r.target_node)) is not None
        and key in {canonical(c) for c in node.pod_cidrs}
        and not r.blackhole
        and (not r.enable_node_addresses or set(r.target_node_addresses) == set(node.addresses))
    }


@settings(max_examples=400, deadline=None)
@given(nodes=nodes, truth=routes, stale=routes, ena=st.booleans())
@pytest.mark.slow
def test_a_stale_listing_never_costs_a_right_route_and_a_fresh_one_repairs(
    nodes, truth, stale, ena
) -> None:
    """Planning on any listing, however old or wrong, deletes no route a Node rightly has;
    and planning again on a fresh listing brings the cloud to the same state as if the
    listing had been fresh from the start. Correctness does not hang on the listing's age."""
    table = {
        canonical(r.destination_cidr): r
        for r in truth
        if is_responsible(r.destination_cidr, CLUSTER)
    }
    right = wanted_routes(nodes, table)
    after = apply_to_table(table, plan(nodes=nodes, routes=stale, cluster_cidrs=CLUSTER), ena=ena)
    assert right <= wanted_routes(nodes, after), "a stale listing cost a right route"
    fresh = plan(nodes=nodes, routes=list(after.values()), cluster_cidrs=CLUSTER)
    repaired = apply_to_table(after, fresh, ena=ena)
    direct = apply_to_table(
        table, plan(nodes=nodes, routes=list(table.values()), cluster_cidrs=CLUSTER), ena=ena
    )
    assert shape(repaired) == shape(direct)

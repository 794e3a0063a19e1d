"""The incremental plan (scope + plan) agrees with the full plan (hypothesis)."""

from __future__ import annotations

import dataclasses
from ipaddress import ip_network

import pytest
from hypothesis import given, settings, strategies as st

from routectl.cidr import canonical
from routectl.model import NodeAddress, NodeView, Route
from routectl.plan.cidr_index import ClaimIndex
from routectl.plan.reconcile import plan
from routectl.plan.scope import RouteIndex, scope
from tests.property.test_plan_properties import apply

CLUSTER = (ip_network("10.244.0.0/16"), ip_network("fd00:10:244::/56"))
CIDRS = [
    "10.244.1.0/24",
    "10.244.2.0/24",
    "10.244.3.0/24",
    "fd00:10:244:1::/64",
    "192.168.0.0/24",
    "10.244.0.0/15",
    "10.244.0.0/20",
]
NAMES = [f"n{i}" for i in range(6)]
ADDRESSES = [NodeAddress(type="InternalIP", address=f"10.0.0.{i}") for i in range(3)]

node_st = st.builds(
    NodeView,
    name=st.sampled_from(NAMES),
    uid=st.just("uid"),
    pod_cidrs=st.lists(st.sampled_from(CIDRS), max_size=2).map(tuple),
    addresses=st.lists(st.sampled_from(ADDRESSES), max_size=2, unique=True).map(tuple),
)
nodes_st = st.lists(node_st, max_size=6, unique_by=lambda n: n.name)
extra_routes = st.lists(
    st.builds(
        Route,
        target_node=st.sampled_from([*NAMES, "", "gone"]),
        destination_cidr=st.sampled_from(CIDRS),
        blackhole=st.booleans(),
    ),
    max_size=3,
)


def claims_of(nodes: dict[str, NodeView]) -> ClaimIndex:
    claims = ClaimIndex()
    for node in nodes.values():
        for cidr in node.pod_cidrs:
            claims.add(cidr, node.name)
    return claims


def overlap_problems(result, names) -> set[tuple[str, str]]:
    return {
        (p.node, p.message)
        for p in result.problems
        if p.reason == "PodCIDROverlap" and p.node in names
    }


def summary(result) -> tuple[set[tuple[str, str]], list[str]]:
    return {
        (c.route.target_node, canonical(c.route.destination_cidr)) for c in result.creates
    }, sorted(map(repr, result.deletes))


@settings(max_examples=500, deadline=None)
@given(before=nodes_st, after=nodes_st, noise=extra_routes, ena=st.booleans())
@pytest.mark.slow
def test_incremental_plan_equals_full_plan(before, after, noise, ena) -> None:
    """After a full plan was applied, planning only the changed Nodes' scope finds the same
    creates and deletes as planning the whole cluster."""
    first = plan(nodes=before, routes=noise, cluster_cidrs=CLUSTER)
    listing = apply(list(noise), first, ena=ena)
    # Whatever the first plan left (e.g. out-of-range noise) is the settled state of the cloud.
    settled = plan(nodes=before, routes=listing, cluster_cidrs=CLUSTER)
    listing = apply(listing, settled, ena=ena)
    old = {n.name: n for n in before}
    new = {n.name: n for n in after}
    changed = {name for name in old.keys() | new.keys() if old.get(name) != new.get(name)}
    changed_cidrs = {c for name in changed if name in old for c in old[name].pod_cidrs}
    nodes, routes = scope(
        changed=changed,
        nodes=new,
        claims=claims_of(new),
        routes=listing,
        changed_cidrs=changed_cidrs,
    )
    full = plan(nodes=after, routes=listing, cluster_cidrs=CLUSTER)
    part = plan(nodes=nodes, routes=routes, cluster_cidrs=CLUSTER)
    assert summary(part) == summary(full)
    # An overlap that involves a changed Node is reported by the scoped plan too.
    assert overlap_problems(full, changed) <= overlap_problems(part, changed)


def test_scope_of_one_node_in_a_big_cluster_is_small() -> None:
    """A one-Node change scopes to that Node and its own routes, whatever the cluster size."""
    nodes = {
        f"n{i}": NodeView(
            name=f"n{i}", uid="u", pod_cidrs=(f"10.{i // 256}.{i % 256}.0/24",), addresses=()
        )
        for i in range(2000)
    }
    routes = [Route(target_node=n.name, destination_cidr=n.pod_cidrs[0]) for n in nodes.values()]
    changed = dataclasses.replace(nodes["n7"], pod_cidrs=("10.0.7.0/24",))
    nodes["n7"] = changed
    subset, picked = scope(changed={"n7"}, nodes=nodes, claims=claims_of(nodes), routes=routes)
    assert [n.name for n in subset] == ["n7"]
    assert picked == [routes[7]]


def test_route_index_tracks_adds_and_removes_by_identity() -> None:
    """The index finds routes by target and by CIDR, and removes the very object given."""
    a = Route(target_node="a", destination_cidr="10.244.1.0/24")
    twin = Route(target_node="a", destination_cidr="10.244.1.0/24")
    b = Route(target_node="b", destination_cidr="10.244.2.0/24")
    index = RouteIndex([a, twin, b])
    assert index.related(["a"], []) == [a, twin]
    assert index.related([], [canonical("10.244.002.0/24")]) == [b]
    assert index.related(["b"], [canonical("10.244.2.0/24")]) == [b]
    index.remove(a)
    assert index.related(["a"], []) == [twin]
    assert index.related([], [canonical("10.244.1.0/24")]) == [twin]


def test_route_index_keeps_a_route_listed_twice_twice() -> None:
    """A route listed twice is found twice (the full plan sees both), once per listing."""
    a = Route(target_node="a", destination_cidr="10.244.1.0/24")
    index = RouteIndex([a, a])
    assert index.related({"a"}, {canonical(a.destination_cidr)}) == [a, a]
    assert index.related(set(), {canonical(a.destination_cidr)}) == [a, a]


def test_a_new_node_inside_an_old_nodes_cidr_is_reported_by_the_scoped_plan() -> None:
    """The scope brings in the unchanged Node whose CIDR the new one overlaps."""
    old = NodeView(name="old", uid="u", pod_cidrs=("10.244.0.0/20",), addresses=())
    new = NodeView(name="new", uid="u", pod_cidrs=("10.244.1.0/24",), addresses=())
    listing = apply([], plan(nodes=[old], routes=[], cluster_cidrs=CLUSTER), ena=False)
    nodes = {n.name: n for n in (old, new)}
    subset, routes = scope(changed={"new"}, nodes=nodes, claims=claims_of(nodes), routes=listing)
    assert [n.name for n in subset] == ["new", "old"]
    part = plan(nodes=subset, routes=routes, cluster_cidrs=CLUSTER)
    assert {p.node for p in part.problems if p.reason == "PodCIDROverlap"} == {"new", "old"}

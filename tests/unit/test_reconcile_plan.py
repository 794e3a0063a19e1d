"""Upstream's action rules (route controller §3.3), one case per rule."""

from __future__ import annotations

import dataclasses
from ipaddress import ip_network

import pytest

from routectl.model import NodeAddress, NodeView, Route
from routectl.plan.reconcile import Plan, plan

V4 = (ip_network("10.244.0.0/16"),)
DUAL = (ip_network("10.244.0.0/16"), ip_network("fd00:10:244::/56"))
ADDR_A = (NodeAddress(type="InternalIP", address="10.0.0.1"),)
ADDR_B = (NodeAddress(type="InternalIP", address="10.0.0.2"),)


def node(name: str, *cidrs: str, addresses=ADDR_A, uid: str | None = None) -> NodeView:
    return NodeView(name=name, uid=uid or f"uid-{name}", pod_cidrs=cidrs, addresses=addresses)


def route(target: str, cidr: str, **kw) -> Route:
    return Route(target_node=target, destination_cidr=cidr, name=f"r-{target}-{cidr}", **kw)


def creates(p: Plan) -> set[tuple[str, str]]:
    return {(c.route.target_node, c.route.destination_cidr) for c in p.creates}


def deletes(p: Plan) -> set[tuple[str, str]]:
    return {(r.target_node, r.destination_cidr) for r in p.deletes}


CASES = [
    pytest.param(
        [node("a", "10.244.1.0/24")], [], V4, {("a", "10.244.1.0/24")}, set(), id="new-node-adds"
    ),
    pytest.param(
        [node("a", "10.244.1.0/24")],
        [route("a", "10.244.1.0/24")],
        V4,
        set(),
        set(),
        id="existing-route-kept",
    ),
    pytest.param(
        [],
        [route("gone", "10.244.1.0/24")],
        V4,
        set(),
        {("gone", "10.244.1.0/24")},
        id="route-of-deleted-node-removed",
    ),
    pytest.param(
        [],
        [route("gone", "192.168.1.0/24")],
        V4,
        set(),
        set(),
        id="foreign-route-outside-cidr-kept",
    ),
    pytest.param(
        [], [route("gone", "10.0.0.0/8")], V4, set(), set(), id="route-containing-cluster-cidr-kept"
    ),
    pytest.param(
        [],
        [route("gone", "10.244.0.0/15")],
        V4,
        set(),
        set(),
        id="route-sharing-first-ip-kept-not-inside",
    ),
    pytest.param(
        [node("a", "10.244.1.0/24")],
        [route("a", "10.244.9.0/24")],
        V4,
        {("a", "10.244.1.0/24")},
        {("a", "10.244.9.0/24")},
        id="wrong-cidr-replaced",
    ),
    pytest.param(
        [],
        [route("", "10.244.1.0/24")],
        V4,
        set(),
        {("", "10.244.1.0/24")},
        id="route-without-target-in-range-removed",
    ),
    pytest.param(
        [],
        [route("", "10.244.1.0/24", blackhole=True)],
        V4,
        set(),
        {("", "10.244.1.0/24")},
        id="blackhole-in-range-removed",
    ),
    pytest.param(
        [],
        [route("", "172.16.0.0/24", blackhole=True)],
        V4,
        set(),
        set(),
        id="blackhole-out-of-range-kept",
    ),
    pytest.param(
        [node("a", "10.244.1.0/24")],
        [route("a", "10.244.1.0/24", blackhole=True)],
        V4,
        {("a", "10.244.1.0/24")},
        {("a", "10.244.1.0/24")},
        id="blackhole-of-live-node-recreated",
    ),
    pytest.param(
        [node("a", "10.244.1.0/24", "fd00:10:244:1::/64")],
        [],
        DUAL,
        {("a", "10.244.1.0/24"), ("a", "fd00:10:244:1::/64")},
        set(),
        id="dual-stack-adds-both",
    ),
    pytest.param(
        [node("a", "10.244.1.0/24", "fd00:10:244:1::/64")],
        [route("a", "10.244.1.0/24")],
        DUAL,
        {("a", "fd00:10:244:1::/64")},
        set(),
        id="dual-stack-adds-missing-v6",
    ),
    pytest.param(
        [],
        [route("gone", "fd00:10:244:1::/64")],
        V4,
        set(),
        set(),
        id="v6-route-out-of-scope-for-v4-cluster",
    ),
    pytest.param(
        [node("a")],
        [route("a", "10.244.1.0/24")],
        V4,
        set(),
        {("a", "10.244.1.0/24")},
        id="node-without-cidrs-loses-stale-route",
    ),
    pytest.param(
        [node("a", "10.244.1.0/24", "10.244.1.0/24")],
        [],
        V4,
        {("a", "10.244.1.0/24")},
        set(),
        id="duplicate-pod-cidr-created-once",
    ),
    pytest.param(
        [node("a", "fd00:10:244:0001::/64")],
        [route("a", "fd00:10:244:1::/64")],
        DUAL,
        set(),
        set(),
        id="canonical-comparison-keeps-route",
    ),
    pytest.param(
        [node("a", "10.244.1.0/24")],
        [route("a", "10.244.1.0/24"), route("a", "10.244.1.0/24")],
        V4,
        set(),
        set(),
        id="duplicate-listed-routes-both-kept",
    ),
    pytest.param([node("a", "not-a-cidr")], [], V4, set(), set(), id="malformed-pod-cidr-left-out"),
    pytest.param(
        [], [route("x", "garbage")], V4, set(), set(), id="unparsable-route-never-deleted"
    ),
]


@pytest.mark.parametrize(("nodes", "routes", "cluster", "want_creates", "want_deletes"), CASES)
def test_plan_follows_upstream_rules(nodes, routes, cluster, want_creates, want_deletes) -> None:
    """Each of upstream's keep/add/update/delete rules gives the expected creates and deletes."""
    result = plan(nodes=nodes, routes=routes, cluster_cidrs=cluster)
    assert creates(result) == want_creates
    assert deletes(result) == want_deletes


def test_create_carries_node_addresses_and_uid_as_hint() -> None:
    """A create targets the node, carries all its addresses and uses its UID as name hint."""
    n = node("a", "10.244.1.0/24", "fd00:10:244:1::/64", addresses=ADDR_A + ADDR_B, uid="1234")
    result = plan(nodes=[n], routes=[], cluster_cidrs=DUAL)
    assert {c.name_hint for c in result.creates} == {"1234"}
    assert all(c.route.target_node_addresses == ADDR_A + ADDR_B for c in result.creates)
    assert all(not c.route.blackhole and not c.route.name for c in result.creates)


@pytest.mark.parametrize(
    ("route_addresses", "node_addresses", "updated"),
    [
        pytest.param(ADDR_A, ADDR_A, False, id="same-addresses-kept"),
        pytest.param(ADDR_A + ADDR_B, ADDR_B + ADDR_A, False, id="reordered-addresses-kept"),
        pytest.param(ADDR_A, ADDR_B, True, id="changed-address-updated"),
        pytest.param(ADDR_A, ADDR_A + ADDR_B, True, id="added-address-updated"),
    ],
)
def test_enable_node_addresses_compares_address_sets(
    route_addresses, node_addresses, updated
) -> None:
    """With EnableNodeAddresses, a route is replaced exactly when the address sets differ."""
    existing = route(
        "a", "10.244.1.0/24", enable_node_addresses=True, target_node_addresses=route_addresses
    )
    result = plan(
        nodes=[node("a", "10.244.1.0/24", addresses=node_addresses)],
        routes=[existing],
        cluster_cidrs=V4,
    )
    assert (result.deletes == (existing,)) is updated
    assert bool(result.creates) is updated
    if updated:
        assert result.creates[0].replaces == (existing,)


def test_addresses_ignored_without_enable_node_addresses() -> None:
    """A provider that does not opt in never gets updates for address changes."""
    existing = route("a", "10.244.1.0/24", target_node_addresses=ADDR_A)
    result = plan(
        nodes=[node("a", "10.244.1.0/24", addresses=ADDR_B)], routes=[existing], cluster_cidrs=V4
    )
    assert result.empty


def test_reassigned_cidr_is_deleted_before_the_new_route() -> None:
    """A CIDR moving from a deleted node to a new one deletes the old route first."""
    old = route("gone", "10.244.1.0/24")
    result = plan(nodes=[node("new", "10.244.1.0/24")], routes=[old], cluster_cidrs=V4)
    (create,) = result.creates
    assert create.replaces == (old,)
    assert result.deletes == (old,)


def test_independent_creates_do_not_wait_for_deletes() -> None:
    """Creates with no delete of the same destination may run at once."""
    result = plan(
        nodes=[node("a", "10.244.1.0/24")],
        routes=[route("gone", "10.244.2.0/24")],
        cluster_cidrs=V4,
    )
    assert result.creates[0].replaces == ()


def test_cidr_claimed_by_two_nodes_goes_to_first_name() -> None:
    """Two nodes with the same pod CIDR: the first by name gets it, the other is reported."""
    result = plan(
        nodes=[node("b", "10.244.1.0/24"), node("a", "10.244.1.0/24")], routes=[], cluster_cidrs=V4
    )
    assert creates(result) == {("a", "10.244.1.0/24")}
    assert result.unroutable_nodes == {"b"}
    assert [p.reason for p in result.problems] == ["PodCIDRConflict"]


def test_problems_are_reported_not_raised() -> None:
    """Malformed pod CIDRs and unparsable route CIDRs become problems, not exceptions."""
    result = plan(
        nodes=[node("a", "10.244.1.0/33")], routes=[route("x", "nonsense")], cluster_cidrs=V4
    )
    assert sorted(p.reason for p in result.problems) == ["InvalidPodCIDR", "UnparsableRouteCIDR"]
    assert result.unroutable_nodes == {"a"}
    assert result.empty


def test_owned_routes_counts_routes_in_range() -> None:
    """owned_routes counts listed routes inside the cluster CIDRs only."""
    result = plan(
        nodes=[],
        routes=[route("a", "10.244.1.0/24"), route("b", "192.168.0.0/24")],
        cluster_cidrs=V4,
    )
    assert result.owned_routes == 1


def test_pod_cidr_outside_cluster_cidrs_gets_no_route() -> None:
    """A pod CIDR outside --cluster-cidr is reported and gets no route (it could never be cleaned)."""
    result = plan(nodes=[node("a", "192.168.5.0/24")], routes=[], cluster_cidrs=V4)
    assert result.creates == ()
    assert [p.reason for p in result.problems] == ["ClusterCIDRMisconfigured"]
    assert result.unroutable_nodes == {"a"}


def test_existing_route_for_misconfigured_cidr_is_kept() -> None:
    """A route already serving a misconfigured pod CIDR is not deleted (pods keep working)."""
    existing = route("a", "10.244.0.0/15")
    result = plan(nodes=[node("a", "10.244.0.0/15")], routes=[existing], cluster_cidrs=V4)
    assert result.deletes == ()
    assert result.creates == ()
    assert result.unroutable_nodes == frozenset()  # routed: its condition says so


def test_a_dual_stack_node_under_an_ipv4_only_cluster_cidr_is_routed_if_both_routes_exist() -> None:
    """Migrating from a CCM whose --cluster-cidr named only IPv4: upstream routed the IPv6
    CIDR anyway. Both routes exist, so the Node is routed (its condition stays False); only
    when the IPv6 route is missing is it unroutable (routectl creates none outside)."""
    both = node("a", "10.244.1.0/24", "fd00:10:244:1::/64")
    v4, v6 = route("a", "10.244.1.0/24"), route("a", "fd00:10:244:1::/64")
    served = plan(nodes=[both], routes=[v4, v6], cluster_cidrs=V4)
    assert (served.creates, served.deletes, served.unroutable_nodes) == ((), (), frozenset())
    assert [p.reason for p in served.problems] == ["ClusterCIDRMisconfigured"]
    missing = plan(nodes=[both], routes=[v4], cluster_cidrs=V4)
    assert missing.unroutable_nodes == {"a"}
    blackholed = dataclasses.replace(v6, blackhole=True)
    assert plan(nodes=[both], routes=[v4, blackholed], cluster_cidrs=V4).unroutable_nodes == {"a"}


def test_duplicate_pod_cidr_is_reported_once() -> None:
    """A pod CIDR listed twice on a node is reported and routed once."""
    result = plan(
        nodes=[node("a", "10.244.1.0/24", "10.244.001.0/24")], routes=[], cluster_cidrs=V4
    )
    assert len(result.creates) == 1
    assert [p.reason for p in result.problems] == ["DuplicatePodCIDR"]
    assert result.unroutable_nodes == frozenset()


# -- unknown Nodes: exist, but never seen readable ---------------------------------------

WHY = "Node u: spec is null, not an object, which the API server never serves"


def test_an_unknown_nodes_route_is_neither_deleted_nor_replaced() -> None:
    """A route to a Node routectl never saw readable stays, blackhole or not, and the
    Node is reported once as UnknownNode; without ``unknown`` the same route is deleted."""
    routes = [route("u", "10.244.9.0/24"), route("u", "10.244.8.0/24", blackhole=True)]
    assert deletes(plan(nodes=[], routes=routes, cluster_cidrs=V4)) == {
        ("u", "10.244.9.0/24"),
        ("u", "10.244.8.0/24"),
    }
    result = plan(nodes=[], routes=routes, cluster_cidrs=V4, unknown={"u": WHY})
    assert result.empty
    assert result.owned_routes == 2
    assert [(p.node, p.reason) for p in result.problems] == [("u", "UnknownNode")]
    assert WHY in result.problems[0].message
    assert "neither deleted nor replaced" in result.problems[0].message


def test_a_create_that_would_replace_an_unknown_nodes_route_is_withheld() -> None:
    """Another Node that claims the CIDR an unknown Node's route holds gets no create (it
    would delete that route first): it is unroutable meanwhile, and told why."""
    result = plan(
        nodes=[node("a", "10.244.9.0/24"), node("b", "10.244.2.0/24")],
        routes=[route("u", "10.244.9.0/24")],
        cluster_cidrs=V4,
        unknown={"u": WHY},
    )
    assert creates(result) == {("b", "10.244.2.0/24")}
    assert deletes(result) == set()
    assert result.unroutable_nodes == {"a"}
    assert ("a", "PodCIDRHeldByUnknownNode") in {(p.node, p.reason) for p in result.problems}


def test_an_unknown_node_changes_nothing_else() -> None:
    """Other Nodes' routes are planned as without it, stale ones deleted."""
    result = plan(
        nodes=[node("a", "10.244.1.0/24")],
        routes=[route("u", "10.244.9.0/24"), route("gone", "10.244.7.0/24")],
        cluster_cidrs=V4,
        unknown={"u": WHY},
    )
    assert creates(result) == {("a", "10.244.1.0/24")}
    assert deletes(result) == {("gone", "10.244.7.0/24")}

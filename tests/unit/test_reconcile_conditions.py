"""NetworkUnavailable outcomes (upstream §3.3 step E), conditions, and the watch filter."""

from __future__ import annotations

from ipaddress import ip_network

import pytest

from routectl.model import Condition, NodeAddress, NodeView, Route
from routectl.plan.reconcile import (
    CONDITION_NO_ROUTE_CREATED,
    CONDITION_ROUTE_CREATED,
    desired_condition,
    is_responsible,
    needs_sync,
    plan,
    routes_created,
    touches_cluster,
)

V4 = (ip_network("10.244.0.0/16"),)
DUAL = (ip_network("10.244.0.0/16"), ip_network("fd00:10:244::/56"))
ADDR = (NodeAddress(type="InternalIP", address="10.0.0.1"),)


def node(name: str, *cidrs: str, **kw) -> NodeView:
    return NodeView(name=name, uid=f"uid-{name}", pod_cidrs=cidrs, addresses=ADDR, **kw)


def test_node_without_cidrs_or_routes_gets_no_write() -> None:
    """A node with no pod CIDRs that no route targets is left alone."""
    nodes = [node("a")]
    assert routes_created(nodes=nodes, plan=plan(nodes=nodes, routes=[], cluster_cidrs=V4)) == {}


def test_node_without_cidrs_but_stale_routes_is_not_created() -> None:
    """A node with no pod CIDRs that a listed route targets gets "not created"."""
    nodes = [node("a")]
    routes = [Route(target_node="a", destination_cidr="192.168.0.0/24")]
    p = plan(nodes=nodes, routes=routes, cluster_cidrs=V4)
    assert routes_created(nodes=nodes, plan=p) == {"a": False}


def test_failed_create_marks_only_its_node() -> None:
    """A node is created iff none of its creates failed."""
    nodes = [node("a", "10.244.1.0/24"), node("b", "10.244.2.0/24")]
    p = plan(nodes=nodes, routes=[], cluster_cidrs=V4)
    failed = [c for c in p.creates if c.route.target_node == "a"]
    assert routes_created(nodes=nodes, plan=p, failed=failed) == {"a": False, "b": True}


def test_dual_stack_node_needs_both_routes() -> None:
    """A dual-stack node whose v6 create failed is not created."""
    nodes = [node("a", "10.244.1.0/24", "fd00:10:244:1::/64")]
    p = plan(nodes=nodes, routes=[], cluster_cidrs=DUAL)
    failed = [c for c in p.creates if ":" in c.route.destination_cidr]
    assert routes_created(nodes=nodes, plan=p, failed=failed) == {"a": False}


def test_unroutable_node_is_not_created() -> None:
    """A node whose pod CIDR cannot be routed (malformed) is reported not created."""
    nodes = [node("a", "10.244.1.0/24", "bogus")]
    p = plan(nodes=nodes, routes=[], cluster_cidrs=V4)
    assert routes_created(nodes=nodes, plan=p) == {"a": False}


CONDITIONS = [
    pytest.param(None, True, CONDITION_ROUTE_CREATED, id="none-to-created"),
    pytest.param(None, False, CONDITION_NO_ROUTE_CREATED, id="none-to-not-created"),
    pytest.param(CONDITION_ROUTE_CREATED, True, None, id="already-created-skipped"),
    pytest.param(CONDITION_NO_ROUTE_CREATED, False, None, id="already-not-created-skipped"),
    pytest.param(
        CONDITION_ROUTE_CREATED, False, CONDITION_NO_ROUTE_CREATED, id="created-to-failed"
    ),
    pytest.param(CONDITION_NO_ROUTE_CREATED, True, CONDITION_ROUTE_CREATED, id="failed-to-created"),
    pytest.param(
        Condition(status="False", reason="CalicoIsUp", message="Calico is running on this node"),
        True,
        CONDITION_ROUTE_CREATED,
        id="calico-reason-replaced",
    ),
    pytest.param(
        Condition(status="False", reason="RouteCreated", message="another message"),
        True,
        None,
        id="message-not-compared",
    ),
    pytest.param(
        Condition(status="True", reason="RouteCreated", message=""),
        True,
        CONDITION_ROUTE_CREATED,
        id="status-mismatch-written",
    ),
]


@pytest.mark.parametrize(("current", "created", "expected"), CONDITIONS)
def test_desired_condition_skips_only_when_status_and_reason_match(
    current, created, expected
) -> None:
    """The condition is written unless status and reason already match (PR #136561)."""
    assert desired_condition(current, routes_created=created) == expected


def test_condition_strings_are_upstreams() -> None:
    """Reasons and messages are upstream's exact strings."""
    assert (
        CONDITION_ROUTE_CREATED.status,
        CONDITION_ROUTE_CREATED.reason,
        CONDITION_ROUTE_CREATED.message,
    ) == ("False", "RouteCreated", "RouteController created a route")
    assert (
        CONDITION_NO_ROUTE_CREATED.status,
        CONDITION_NO_ROUTE_CREATED.reason,
        CONDITION_NO_ROUTE_CREATED.message,
    ) == ("True", "NoRouteCreated", "RouteController failed to create a route")


BASE = node("a", "10.244.1.0/24", "fd00::/64")
SYNC_CASES = [
    pytest.param(None, BASE, True, id="add"),
    pytest.param(BASE, None, True, id="delete"),
    pytest.param(None, None, False, id="nothing"),
    pytest.param(BASE, node("a", "10.244.2.0/24", "fd00::/64"), True, id="pod-cidr-changed"),
    pytest.param(BASE, node("a", "fd00::/64", "10.244.1.0/24"), False, id="pod-cidrs-reordered"),
    pytest.param(
        BASE,
        NodeView(
            name="a",
            uid="uid-a",
            pod_cidrs=BASE.pod_cidrs,
            addresses=(NodeAddress(type="InternalIP", address="10.0.0.9"),),
        ),
        True,
        id="address-changed",
    ),
    pytest.param(
        BASE,
        node("a", "10.244.1.0/24", "fd00::/64", network_unavailable=CONDITION_ROUTE_CREATED),
        False,
        id="condition-only",
    ),
    pytest.param(
        BASE,
        node("a", "10.244.1.0/24", "fd00::/64", provider_id="aws:///x/i-1"),
        False,
        id="provider-id-only",
    ),
    pytest.param(
        BASE,
        NodeView(name="a", uid="other", pod_cidrs=BASE.pod_cidrs, addresses=ADDR),
        True,
        id="recreated-with-new-uid",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), SYNC_CASES)
def test_needs_sync_filters_events(old, new, expected) -> None:
    """Only add, delete and pod CIDR or address changes (as sets) request a sync."""
    assert needs_sync(old, new) is expected


RESPONSIBLE = [
    pytest.param("10.244.1.0/24", V4, True, id="inside"),
    pytest.param("10.245.0.0/24", V4, False, id="outside"),
    pytest.param("10.0.0.0/8", V4, False, id="contains-cluster"),
    pytest.param("10.244.0.0/15", V4, False, id="first-ip-inside-vpn-around-it"),
    pytest.param("10.244.0.0/15", (ip_network("10.245.0.0/16"),), False, id="last-ip-inside"),
    pytest.param("10.244.0.0/16", V4, True, id="the-cluster-cidr-itself"),
    pytest.param("fd00:10:244:1::/64", V4, False, id="v6-for-v4-cluster"),
    pytest.param("fd00:10:244:1::/64", DUAL, True, id="v6-inside-dual"),
    pytest.param("010.244.001.000/24", V4, True, id="sloppy-leading-zeros"),
    pytest.param("10.244.1.7/24", V4, True, id="host-bits-masked"),
    pytest.param("not a cidr", V4, False, id="unparsable"),
    pytest.param("10.244.1.0", V4, False, id="no-prefix"),
]


@pytest.mark.parametrize(("cidr", "cluster", "expected"), RESPONSIBLE)
def test_is_responsible(cidr, cluster, expected) -> None:
    """A route is ours iff its whole destination lies inside a cluster CIDR."""
    assert is_responsible(cidr, cluster) is expected


@pytest.mark.parametrize(
    ("cidr", "cluster", "expected"),
    [
        pytest.param("10.244.0.0/15", V4, True, id="first-ip-inside"),
        pytest.param("10.244.0.0/15", (ip_network("10.245.0.0/16"),), True, id="last-ip-inside"),
        pytest.param("10.0.0.0/8", V4, False, id="contains-cluster"),
        pytest.param("10.244.1.0/24", V4, True, id="inside"),
    ],
)
def test_touches_cluster_is_upstreams_rule(cidr, cluster, expected) -> None:
    """Upstream's rule (first or last address inside) is kept for reporting, not deleting."""
    assert touches_cluster(cidr, cluster) is expected

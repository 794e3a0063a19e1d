"""routectl plan's extra lines: ownership per table and the guard's verdict (pure)."""

from __future__ import annotations

from ipaddress import ip_network

from routectl.cli.preview import (
    LISTING,
    condition_changes,
    ownership,
    ownership_lines,
    plan_as_json,
    plan_as_table,
    verdict_lines,
)
from routectl.model import Condition, NodeView, Route
from routectl.plan.guard import guard
from routectl.plan.reconcile import plan

CIDRS = (ip_network("10.244.0.0/16"),)


def routes(*cidrs: str) -> list[Route]:
    return [Route(target_node=f"n{i}", destination_cidr=c) for i, c in enumerate(cidrs)]


def test_routes_owned_per_table_and_a_warning_for_a_table_owned_by_nobody() -> None:
    listed = routes("10.244.1.0/24", "10.244.2.0/24")
    tables = {
        "rtb-ours": ["10.244.1.0/24", "10.244.2.0/24", "0.0.0.0/0", "10.0.0.0/16"],
        "rtb-other": ["192.168.1.0/24", "0.0.0.0/0"],
        "rtb-empty": [],
    }
    owners = {o.table: (o.routes, o.owned, bool(o.warning)) for o in ownership(listed, CIDRS, tables)}  # fmt: skip
    assert owners == {
        "rtb-ours": (4, 2, False),
        "rtb-other": (2, 0, True),
        "rtb-empty": (0, 0, False),
    }
    lines = ownership_lines(ownership(listed, CIDRS, tables))
    assert "table rtb-other: 2 routes, 0 owned by this cluster" in lines
    assert (
        "WARNING: routectl owns none of the 2 routes of rtb-other: check --cluster-name, "
        "--cluster-cidr and the provider's table options"
    ) in lines


def test_without_tables_the_listing_is_the_table() -> None:
    """A wrong --cluster-cidr: the provider lists routes, none inside the CIDRs: warning."""
    (only,) = ownership(routes("10.99.1.0/24"), CIDRS, None)
    assert (only.table, only.routes, only.owned) == (LISTING, 1, 0)
    assert only.warning


def test_the_guards_verdict_is_shown() -> None:
    """Ten routes, one Node left: the guard would withhold the nine deletes; says so."""
    listed = routes(*(f"10.244.{i}.0/24" for i in range(10)))
    nodes = [NodeView(name="n0", uid="u0", pod_cidrs=("10.244.0.0/24",), addresses=())]
    result = plan(nodes=nodes, routes=listed, cluster_cidrs=CIDRS)
    verdict = guard(result, owned=result.owned_routes, nodes=1, threshold=0.5, allow=False)
    (line,) = verdict_lines(verdict, result)
    assert line.startswith("mass-delete guard: would withhold 9 deletes: Refusing to delete 9 of 10")  # fmt: skip
    allowed = guard(result, owned=result.owned_routes, nodes=1, threshold=0.5, allow=True)
    assert verdict_lines(allowed, result) == ["mass-delete guard: would allow the 9 deletes"]


def test_creates_and_deletes_the_guard_withholds_are_marked_not_counted() -> None:
    """A wrong cluster: 10 routes to other Nodes, 4 of our Nodes claiming 4 of those CIDRs.
    run would delete nothing and make none of the 4 creates (each waits for a delete), so
    the title counts 0 and 0 and every row says it is withheld; JSON says the same."""
    listed = [Route(target_node=f"x{i}", destination_cidr=f"10.244.{i}.0/24") for i in range(10)]
    nodes = [
        NodeView(name=f"n{i}", uid=f"u{i}", pod_cidrs=(f"10.244.{i}.0/24",), addresses=())
        for i in range(4)
    ]
    result = plan(nodes=nodes, routes=listed, cluster_cidrs=CIDRS)
    assert (len(result.creates), len(result.deletes)) == (4, 10)
    verdict = guard(result, owned=result.owned_routes, nodes=4, threshold=0.5, allow=False)
    title, _header, *rows = plan_as_table(result, verdict.plan).splitlines()
    assert title == (
        "routectl plan: 0 to create, 0 to delete "
        "(4 creates and 10 deletes withheld by the mass-delete guard)"
    )
    assert len(rows) == 14
    assert all("withheld" in row for row in rows), rows
    shown = plan_as_json(result, verdict.plan)
    assert all(c["withheld"] for c in shown["creates"])  # type: ignore[attr-defined]
    assert all(d["withheld"] for d in shown["deletes"])  # type: ignore[attr-defined]
    allowed = guard(result, owned=result.owned_routes, nodes=4, threshold=0.5, allow=True)
    assert plan_as_table(result, allowed.plan).splitlines()[0] == (
        "routectl plan: 4 to create, 10 to delete"
    )
    assert "withheld" not in plan_as_table(result, allowed.plan)


def test_the_node_conditions_a_sync_would_write_are_shown() -> None:
    """A preview must not hide the change that stops scheduling: a Node whose pod CIDR lies
    outside --cluster-cidr with no route would turn NetworkUnavailable=True; a routed Node
    without the condition gets RouteCreated; a Node already right gets nothing."""
    routed = Condition(status="False", reason="RouteCreated", message="")
    nodes = [
        NodeView(name="a", uid="ua", pod_cidrs=("10.99.0.0/24",), addresses=(), network_unavailable=routed),
        NodeView(name="b", uid="ub", pod_cidrs=("10.244.1.0/24",), addresses=()),
        NodeView(name="c", uid="uc", pod_cidrs=("10.244.2.0/24",), addresses=(), network_unavailable=routed),
    ]  # fmt: skip
    listed = [Route(target_node=n, destination_cidr=c) for n, c in (("b", "10.244.1.0/24"), ("c", "10.244.2.0/24"))]  # fmt: skip
    result = plan(nodes=nodes, routes=listed, cluster_cidrs=CIDRS)
    changes = condition_changes(nodes, result, result)
    assert [(c.node, c.then.status, c.then.reason) for c in changes] == [
        ("a", "True", "NoRouteCreated"),
        ("b", "False", "RouteCreated"),
    ]
    assert changes[0].line == (
        "condition: node a NetworkUnavailable would become True (NoRouteCreated), "
        "now False (RouteCreated)"
    )
    assert changes[1].line.endswith("now not set")

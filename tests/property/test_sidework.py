"""Side plans a sync admits never share a Node or a destination with it or each other."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from routectl.cidr import canonical
from routectl.model import NodeView, Route
from routectl.plan.reconcile import Plan, RouteCreate
from routectl.sync.sidework import Claims

NAMES = st.sampled_from([f"n{i}" for i in range(6)])
CIDRS = st.sampled_from(["10.0.0.0/24", "10.0.0.0/24 ", "10.0.1.0/24", "10.0.2.0/24", "fd00::/64"])


def route(name: str, cidr: str) -> Route:
    return Route(target_node=name, destination_cidr=cidr.strip())


CREATE = st.builds(
    lambda name, cidr, replaced: RouteCreate(
        route=route(name, cidr),
        name_hint=name,
        replaces=(route("old", cidr),) if replaced else (),
    ),
    NAMES,
    CIDRS,
    st.booleans(),
)
PLAN = st.builds(
    lambda creates, deletes: Plan(creates=tuple(creates), deletes=tuple(deletes)),
    st.lists(CREATE, max_size=3),
    st.lists(st.builds(route, NAMES, CIDRS), max_size=1),
)
NODES = st.lists(NAMES, max_size=3).map(
    lambda names: [NodeView(name=n, uid=n, pod_cidrs=(), addresses=()) for n in names]
)


def touched(plan: Plan, nodes: list[NodeView]) -> tuple[set[str], set[str]]:
    names = {n.name for n in nodes}
    names |= {c.route.target_node for c in plan.creates} | {r.target_node for r in plan.deletes}
    cidrs = {canonical(c.route.destination_cidr) for c in plan.creates}
    cidrs |= {canonical(r.destination_cidr) for c in plan.creates for r in c.replaces}
    cidrs |= {canonical(r.destination_cidr) for r in plan.deletes}
    return names, cidrs


@settings(max_examples=500, deadline=None)
@given(PLAN, NODES, st.lists(st.tuples(PLAN, NODES), max_size=6))
def test_admitted_side_plans_share_nothing(
    main: Plan, main_nodes: list[NodeView], sides: list[tuple[Plan, list[NodeView]]]
) -> None:
    claims = Claims(plan=main, nodes=main_nodes)
    admitted = [(main, main_nodes)]
    for side, nodes in sides:
        before = (set(claims.names), set(claims.destinations))
        if claims.admit(side, nodes):
            assert not side.deletes
            assert not any(c.replaces for c in side.creates)
            admitted.append((side, nodes))
        else:
            assert (claims.names, claims.destinations) == before  # a refusal claims nothing
    for i, (a, a_nodes) in enumerate(admitted):
        for b, b_nodes in admitted[i + 1 :]:
            names_a, cidrs_a = touched(a, a_nodes)
            names_b, cidrs_b = touched(b, b_nodes)
            assert names_a.isdisjoint(names_b)
            assert cidrs_a.isdisjoint(cidrs_b)


@given(PLAN, NODES)
def test_a_plan_that_races_nothing_is_admitted(side: Plan, nodes: list[NodeView]) -> None:
    claims = Claims(plan=Plan(), nodes=[])
    clean = not side.deletes and not any(c.replaces for c in side.creates)
    assert claims.admit(side, nodes) == clean

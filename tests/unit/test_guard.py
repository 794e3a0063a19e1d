"""The mass-delete guard as a pure decision."""

from __future__ import annotations

import pytest

from routectl.model import Route
from routectl.plan.guard import MASS_DELETE_MIN, guard
from routectl.plan.reconcile import Plan, RouteCreate


def routes(n: int) -> tuple[Route, ...]:
    return tuple(Route(target_node=f"n{i}", destination_cidr=f"10.244.{i}.0/24") for i in range(n))


def test_small_plans_pass_untouched() -> None:
    """A plan deleting no more than MASS_DELETE_MIN routes passes, whatever the share."""
    plan = Plan(deletes=routes(MASS_DELETE_MIN))
    verdict = guard(plan, owned=MASS_DELETE_MIN, nodes=3, threshold=0.1, allow=False)
    assert not verdict.tripped
    assert verdict.plan is plan


@pytest.mark.parametrize(("deletes", "owned", "tripped"), [(50, 100, False), (51, 100, True)])
def test_threshold_is_a_share_of_the_owned_routes(deletes: int, owned: int, tripped: bool) -> None:
    """More than threshold x owned deletes trips the guard; exactly the threshold does not."""
    verdict = guard(Plan(deletes=routes(deletes)), owned=owned, nodes=3, threshold=0.5, allow=False)
    assert verdict.tripped is tripped


def test_tripped_guard_keeps_creates_that_wait_for_no_delete() -> None:
    """Deletes, and the creates that replace them, are withheld; other creates stay."""
    stale = routes(10)
    free = RouteCreate(
        route=Route(target_node="x", destination_cidr="10.244.99.0/24"), name_hint="u"
    )
    replacing = RouteCreate(route=stale[0], name_hint="v", replaces=(stale[0],))
    verdict = guard(
        Plan(deletes=stale, creates=(free, replacing)),
        owned=10,
        nodes=3,
        threshold=0.5,
        allow=False,
    )
    assert verdict.plan.deletes == ()
    assert verdict.plan.creates == (free,)
    assert verdict.plan.unroutable_nodes == {"n0"}  # its route leads elsewhere: not routed
    assert "Refusing to delete 10 of 10 routes" in verdict.message
    assert "--allow-mass-delete" in verdict.message


def test_allow_mass_delete_lifts_the_guard() -> None:
    """--allow-mass-delete lets every delete through."""
    plan = Plan(deletes=routes(10))
    assert guard(plan, owned=10, nodes=0, threshold=0.5, allow=True).plan is plan


def test_a_scoped_plan_counts_at_least_what_it_sees() -> None:
    """The plan's own owned count is used when the listing's count is lower."""
    plan = Plan(deletes=routes(6), owned_routes=100)
    assert not guard(plan, owned=0, nodes=3, threshold=0.5, allow=False).tripped


@pytest.mark.parametrize("deletes", [1, MASS_DELETE_MIN])
def test_no_route_is_deleted_while_the_node_list_is_empty(deletes: int) -> None:
    """However few: an empty Node list (a relist answered empty by a broken proxy) deletes
    nothing in a small cluster either; creates go on; the message says what to check."""
    free = RouteCreate(
        route=Route(target_node="x", destination_cidr="10.244.99.0/24"), name_hint="u"
    )
    plan = Plan(deletes=routes(deletes), creates=(free,))
    verdict = guard(plan, owned=deletes, nodes=0, threshold=0.5, allow=False)
    assert verdict.plan.deletes == ()
    assert verdict.plan.creates == (free,)
    assert "the Node list is empty" in verdict.message
    assert "--allow-mass-delete" in verdict.message
    assert not guard(Plan(creates=(free,)), owned=0, nodes=0, threshold=0.5, allow=False).tripped

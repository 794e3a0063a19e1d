"""Write verification as a pure decision: what a fresh listing says of acknowledged writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from routectl.model import Route
from routectl.plan.reconcile import RouteCreate
from routectl.sync.apply import Applied
from routectl.sync.verify import VERIFY_AFTER, Miss, WriteChecks

ROUTE = Route(target_node="n1", destination_cidr="10.244.01.0/24")  # spelled as a Node may


def created() -> Applied:
    return Applied(created=[RouteCreate(route=ROUTE, name_hint="u")])


def test_a_dropped_create_is_a_miss_in_doubt_until_a_listing_shows_it() -> None:
    """Missed once: in doubt, and each further miss doubles the next check, up to the cap."""
    checks = WriteChecks()
    assert checks.acknowledged(Applied(), cap=120.0) is None  # nothing written: no check
    assert checks.acknowledged(created(), cap=120.0) == VERIFY_AFTER
    exists = {"n1"}.__contains__
    assert checks.confirm([], exists=exists) == [
        Miss(operation="create", node="n1", cidr="10.244.1.0/24", times=1)
    ]
    assert checks.doubted_creates() == {("n1", "10.244.1.0/24")}
    assert checks.acknowledged(created(), cap=8.0) == 8.0  # 10 s, cut to the cap
    (again,) = checks.confirm([], exists=exists)
    assert again.times == 2
    assert checks.acknowledged(created(), cap=120.0) == 4 * VERIFY_AFTER
    shown = Route(target_node="n1", destination_cidr="10.244.1.0/24")
    assert checks.confirm([shown], exists=exists) == []
    assert checks.doubted_creates() == frozenset()


def test_a_doubt_ends_with_its_node_and_a_blackhole_does_not_confirm() -> None:
    checks = WriteChecks()
    checks.acknowledged(created(), cap=120.0)
    hole = Route(target_node="n1", destination_cidr="10.244.1.0/24", blackhole=True)
    assert [m.times for m in checks.confirm([hole], exists=lambda _: True)] == [1]
    assert checks.confirm([], exists=lambda _: False) == []
    assert checks.doubted_creates() == frozenset()


def test_a_delete_still_listed_is_a_miss() -> None:
    checks = WriteChecks()
    checks.acknowledged(Applied(deleted=[ROUTE]), cap=120.0)
    (miss,) = checks.confirm([ROUTE], exists=lambda _: True)
    assert (miss.operation, miss.times) == ("delete", 1)
    assert checks.doubted_creates() == frozenset()  # a delete never holds a Node back
    assert checks.confirm([], exists=lambda _: True) == []


def test_a_route_repaired_in_place_is_checked_for_its_create_not_its_delete() -> None:
    """A blackhole deleted and made again for the same Node: the listing that shows the new
    route confirms the sync, and says nothing of the delete."""
    checks = WriteChecks()
    hole = Route(target_node="n1", destination_cidr="10.244.1.0/24", blackhole=True)
    repaired = Applied(deleted=[hole], created=[RouteCreate(route=ROUTE, name_hint="u")])
    checks.acknowledged(repaired, cap=120.0)
    made = Route(target_node="n1", destination_cidr="10.244.1.0/24")
    assert checks.confirm([made], exists=lambda _: True) == []
    checks.acknowledged(repaired, cap=120.0)
    (miss,) = checks.confirm([hole], exists=lambda _: True)
    assert miss.operation == "create", "still the blackhole: the create is missing"


class Unread(list[Route]):
    """A listing that must not be read."""

    def __iter__(self) -> Iterator[Route]:
        raise AssertionError("the listing was read")


def test_with_nothing_to_check_the_listing_is_not_read() -> None:
    """At start nothing was written: a fresh listing of any size costs the check nothing."""
    checks = WriteChecks()
    assert checks.confirm(Unread([ROUTE]), exists=lambda _: True) == []
    checks.acknowledged(created(), cap=120.0)
    with pytest.raises(AssertionError, match="the listing was read"):
        checks.confirm(Unread([ROUTE]), exists=lambda _: True)

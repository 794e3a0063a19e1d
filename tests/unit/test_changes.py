"""Changes: which Nodes changed, who claims which CIDR, and who waits for routes."""

from __future__ import annotations

from routectl.model import NodeView
from routectl.sync.changes import INCREMENTAL_MIN, Changes, Dirty


def node(name: str, *cidrs: str) -> NodeView:
    return NodeView(name=name, uid=f"uid-{name}", pod_cidrs=cidrs, addresses=())


def test_take_hands_over_and_restore_gives_back() -> None:
    """A sync takes the changes; a failed one gives them back, merged with newer ones."""
    changes = Changes()
    changes.note(None, node("a", "10.244.1.0/24"), now=0)
    taken = changes.take()
    assert taken == Dirty(frozenset({"a"}), frozenset({"10.244.1.0/24"}))
    assert changes.take() == Dirty(frozenset(), frozenset())
    changes.note(None, node("b"), now=1)
    changes.restore(taken)
    assert changes.take().names == {"a", "b"}


def test_claims_follow_adds_moves_and_deletes_in_canonical_form() -> None:
    """A CIDR's holders are tracked canonically; old holders are dropped on change."""
    changes = Changes()
    changes.note(None, node("a", "10.244.001.0/24"), now=0)
    changes.note(None, node("b", "10.244.1.0/24"), now=0)
    assert changes.claims["10.244.1.0/24"] == {"a", "b"}
    changes.note(node("a", "10.244.001.0/24"), node("a", "10.244.2.0/24"), now=0)
    changes.note(node("b", "10.244.1.0/24"), None, now=0)
    assert not changes.claims.get("10.244.1.0/24")
    assert changes.claims["10.244.2.0/24"] == {"a"}


def test_waiting_starts_at_the_first_cidr_and_ends_when_routed() -> None:
    """Latency runs from the change that gave a Node its CIDR to its routes existing."""
    changes = Changes()
    changes.note(None, node("a"), now=0.0)  # no CIDR yet: not waiting
    changes.note(node("a"), node("a", "10.244.1.0/24"), now=2.0)
    changes.note(None, node("b", "10.244.2.0/24"), now=0.0)  # waiting from loop time 0
    changes.note(None, node("gone", "10.244.3.0/24"), now=1.0)
    changes.note(node("gone", "10.244.3.0/24"), None, now=1.5)
    assert sorted(changes.routed(["a", "b", "gone", "never"], now=5.0)) == [3.0, 5.0]
    assert changes.routed(["a", "b"], now=9.0) == []


def test_scoping_pays_for_few_changes_only() -> None:
    """A handful of changed Nodes is scoped; a tenth of a large cluster or more is not."""
    few = Dirty(frozenset(f"n{i}" for i in range(INCREMENTAL_MIN)), frozenset())
    assert few.worth_scoping(10)
    many = Dirty(frozenset(f"n{i}" for i in range(2000)), frozenset())
    assert not many.worth_scoping(10_000)
    assert many.worth_scoping(20_000)


def test_a_node_found_routed_is_no_sample_unless_a_create_was_planned_for_it() -> None:
    """Routes listed already when a sync first looks end the wait without a sample (at
    start, every listed Node); a Node a sync tried to route and a later listing shows
    routed is one, from its change; either way it waits no more."""
    changes = Changes()
    changes.note(None, node("there", "10.244.1.0/24"), now=0.0)
    changes.note(None, node("failed", "10.244.2.0/24"), now=1.0)
    changes.tried(["failed", "not-waiting"])
    assert changes.waiting() == ["there", "failed"]
    assert changes.found_routed(["there", "failed"], now=10.0) == [9.0]
    assert changes.waiting() == []
    assert changes.found_routed(["there", "failed"], now=11.0) == []
    changes.note(None, node("again", "10.244.3.0/24"), now=2.0)
    changes.tried(["again"])
    assert changes.routed(["again"], now=4.0) == [2.0]
    changes.note(node("again", "10.244.3.0/24"), None, now=5.0)
    changes.note(None, node("again", "10.244.3.0/24"), now=6.0)
    assert changes.found_routed(["again"], now=7.0) == []  # a new wait, not tried

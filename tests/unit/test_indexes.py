"""The route and claim indexes keep a key's one entry alone and several in a list or set:
adds, identity removes and look-ups answer as a list per key would."""

from __future__ import annotations

from routectl.model import Route
from routectl.plan.cidr_index import ClaimIndex
from routectl.plan.scope import RouteIndex


def test_route_index_keys_of_one_and_of_several_routes() -> None:
    a = Route(target_node="a", destination_cidr="10.244.1.0/24")
    twin = Route(target_node="a", destination_cidr="10.244.1.0/24")  # equal, not the same
    b = Route(target_node="b", destination_cidr="10.244.001.0/24")  # a's CIDR, spelled so
    c = Route(target_node="c", destination_cidr="10.244.3.0/24")
    index = RouteIndex([a, b])
    index.add(twin)
    index.add(c)
    assert index.related({"a"}, ()) == [a, twin]
    assert index.related(set(), ["10.244.1.0/24"]) == [a, b, twin]
    assert index.related({"c"}, ["10.244.3.0/24"]) == [c]
    index.remove(twin)  # this very object: its equal twin stays
    assert index.related({"a"}, ()) == [a]
    assert [r is a for r in index.related(set(), ["10.244.1.0/24"])] == [True, False]
    index.remove(c)
    index.remove(c)  # gone already: nothing happens
    assert index.related({"c"}, ["10.244.3.0/24"]) == []
    index.remove(a)
    index.remove(b)
    assert index.related({"a", "b"}, ["10.244.1.0/24"]) == []
    index.add(c)
    assert index.related({"c"}, ()) == [c]


def test_claim_index_holders_of_one_and_of_several_nodes() -> None:
    index = ClaimIndex()
    index.add("10.244.1.0/24", "a")
    index.add("10.244.001.0/24", "a")  # the same claim again
    assert index["10.244.1.0/24"] == {"a"}
    assert list(index.get("10.244.1.0/24")) == ["a"]
    index.add("10.244.1.0/24", "b")
    assert index["10.244.1.0/24"] == {"a", "b"}
    index.discard("10.244.1.0/24", "x")  # never claimed it: nothing happens
    index.discard("10.244.1.0/24", "a")
    assert set(index.get("10.244.1.0/24")) == {"b"}
    index.discard("10.244.1.0/24", "b")
    assert "10.244.1.0/24" not in index
    assert index.get("10.244.1.0/24", ("none",)) == ("none",)
    index.add("10.244.0.0/16", "wide")
    index.add("10.244.2.0/24", "c")
    index.discard("10.244.2.0/24", "d")  # a single holder is only dropped by its own name
    assert index["10.244.2.0/24"] == {"c"}
    assert index.overlapping("10.244.2.0/24") == ["10.244.0.0/16"]
    index.discard("10.244.2.0/24", "c")
    assert index.overlapping("10.244.0.0/16") == []

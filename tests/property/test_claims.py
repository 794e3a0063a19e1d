"""Claims and overlaps: the index and the sweep agree with brute force (hypothesis)."""

from __future__ import annotations

import ipaddress
import itertools

import pytest
from hypothesis import given, settings, strategies as st

from routectl.cidr import canonical
from routectl.model import NodeView
from routectl.plan.cidr_index import ClaimIndex, overlaps
from routectl.plan.reconcile import plan

PREFIXES = st.integers(min_value=20, max_value=26)
v4 = st.builds(
    lambda a, p: str(ipaddress.ip_network(f"10.244.{a}.0/{p}", strict=False)),
    st.integers(min_value=0, max_value=15),
    PREFIXES,
)
v6 = st.builds(
    lambda a, p: str(ipaddress.ip_network(f"fd00:10:244:{a:x}::/{p}", strict=False)),
    st.integers(min_value=0, max_value=15),
    st.integers(min_value=56, max_value=64),
)
claims_st = st.lists(st.tuples(st.sampled_from("abcdef"), st.one_of(v4, v6)), max_size=12)


def brute(claimed: list[tuple[str, str]]) -> set[frozenset[tuple[str, str]]]:
    found = set()
    for (n1, c1), (n2, c2) in itertools.combinations(claimed, 2):
        a, b = ipaddress.ip_network(c1), ipaddress.ip_network(c2)
        if n1 != n2 and a != b and a.version == b.version and a.overlaps(b):
            found.add(frozenset({(n1, c1), (n2, c2)}))
    return found


@settings(max_examples=300, deadline=None)
@given(claimed=claims_st)
@pytest.mark.slow
def test_the_sweep_finds_exactly_the_overlapping_pairs(claimed) -> None:
    """overlaps() reports each pair of different Nodes' unequal, overlapping CIDRs once,
    outer first."""
    pairs = overlaps(claimed)
    assert {frozenset(p) for p in pairs} == brute(claimed)
    assert len(pairs) == len({frozenset(p) for p in pairs})
    for (_, outer), (_, inner) in pairs:
        assert ipaddress.ip_network(inner).subnet_of(ipaddress.ip_network(outer))  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(
    claimed=claims_st,
    removed=st.lists(st.integers(min_value=0, max_value=11), max_size=4),
    probe=st.one_of(v4, v6),
)
def test_the_index_answers_overlaps_like_brute_force(claimed, removed, probe) -> None:
    """ClaimIndex.overlapping() finds every claimed CIDR overlapping the probe but unequal,
    after adds and discards."""
    index = ClaimIndex()
    for name, cidr in claimed:
        index.add(cidr, name)
    kept = list(claimed)
    for at in removed:
        if at < len(kept):
            name, cidr = kept.pop(at)
            if (name, cidr) not in kept:
                index.discard(cidr, name)
    live = {canonical(c) for _, c in kept}
    want = {
        c
        for c in live
        if c != canonical(probe)
        and ipaddress.ip_network(c).version == ipaddress.ip_network(probe).version
        and ipaddress.ip_network(c).overlaps(ipaddress.ip_network(probe))
    }
    assert set(index.overlapping(probe)) == want


def test_overlapping_pod_cidrs_are_both_routed_and_reported_on_both() -> None:
    """A /16 and a /24 inside it: two routes, and a PodCIDROverlap for each Node."""
    nodes = [
        NodeView(name="big", uid="u1", pod_cidrs=("10.244.0.0/16",), addresses=()),
        NodeView(name="small", uid="u2", pod_cidrs=("10.244.7.0/24",), addresses=()),
    ]
    result = plan(nodes=nodes, routes=(), cluster_cidrs=(ipaddress.ip_network("10.0.0.0/8"),))
    assert {c.route.target_node for c in result.creates} == {"big", "small"}
    assert sorted((p.node, p.reason) for p in result.problems) == [
        ("big", "PodCIDROverlap"),
        ("small", "PodCIDROverlap"),
    ]
    (message,) = {p.message for p in result.problems}
    assert "10.244.7.0/24 of node small overlaps pod CIDR 10.244.0.0/16 of node big" in message

"""The fast paths of CIDR handling agree with ipaddress (hypothesis): the sloppy parse built
from numbers, the canonical spelling and the span made from numbers, ``within`` and
``Clusters``, and the claim index filled by one sort after a large list."""

from __future__ import annotations

import ipaddress
import re

from hypothesis import given, settings, strategies as st

from routectl.cidr import (
    Clusters,
    _parse_slowly,
    canonical,
    network_or_none,
    network_span,
    parse_cidr,
    span,
    span_end,
    within,
)
from routectl.plan.cidr_index import SETTLE_ONE_BY_ONE, ClaimIndex


def slow_parse(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """Go's sloppy ParseCIDR through ipaddress's text parser (the reference)."""
    address, slash, prefix = text.partition("/")
    if not slash or not re.fullmatch(r"\d{1,3}", prefix) or "%" in address:
        return None
    if re.fullmatch(r"\d{1,3}(\.\d{1,3}){3}", address):
        address = ".".join(str(int(o)) for o in address.split("."))
    try:
        return ipaddress.ip_network(f"{address}/{int(prefix)}", strict=False)
    except ValueError:
        return None


octet = st.one_of(
    st.integers(min_value=0, max_value=255).map(str),
    st.integers(min_value=0, max_value=255).map(lambda n: f"{n:03d}"),  # leading zeros
    st.integers(min_value=256, max_value=999).map(str),  # out of range
)
v4_text = st.builds(
    lambda a, b, c, d, p: f"{a}.{b}.{c}.{d}/{p}",
    octet,
    octet,
    octet,
    octet,
    st.one_of(st.integers(min_value=0, max_value=40).map(str), st.just("024"), st.just("")),
)
v6_text = st.builds(
    lambda a, p: f"fd00:{a:x}::/{p}",
    st.integers(min_value=0, max_value=0xFFFF),
    st.integers(min_value=0, max_value=130),
)
texts = st.one_of(v4_text, v6_text, st.text(max_size=20))


@settings(max_examples=500, deadline=None)
@given(text=texts)
def test_the_parse_agrees_with_ipaddress(text: str) -> None:
    """parse_cidr gives ipaddress's network for every spelling it takes, and refuses the
    others; canonical and network_or_none follow it."""
    want = slow_parse(text)
    if want is None:
        assert network_or_none(text) is None
        assert canonical(text) == text
        return
    got = parse_cidr(text)
    assert got == want
    assert type(got) is type(want)
    assert canonical(text) == str(want)


@settings(max_examples=300, deadline=None)
@given(
    text=st.builds(
        lambda t, at, extra: t[:at] + extra + t[at:] if at <= len(t) else t,
        v4_text,
        st.integers(min_value=0, max_value=20),
        st.sampled_from(["", "\n", "\n\n", " ", "/", "0"]),
    )
)
def test_the_fast_ipv4_parse_reads_what_the_text_parser_reads(text: str) -> None:
    """parse_cidr's one-pattern IPv4 path takes and refuses exactly what the patterns of
    the text parser do (a final newline after the address or the prefix included)."""
    try:
        want = _parse_slowly(text)
    except ValueError:
        want = None
    try:
        got = parse_cidr(text)
    except ValueError:
        got = None
    assert got == want


@settings(max_examples=500, deadline=None)
@given(text=texts)
def test_the_span_and_the_spelling_agree_with_ipaddress(text: str) -> None:
    """span() gives the numbers of ipaddress's network (first address, last address, prefix
    length), or None where it refuses; canonical() spells the network as ipaddress does,
    uncached too, and hands back a canonical spelling itself."""
    want = slow_parse(text)
    got = span.__wrapped__(text)
    spelled = canonical.__wrapped__(text)
    if want is None:
        assert got is None
        assert spelled is text
        return
    assert got == (want.version, int(want.network_address), want.prefixlen)
    assert got == network_span(want)
    assert span_end(got) == int(want.broadcast_address)
    assert spelled == str(want)
    if text == str(want):
        assert spelled is text


networks = st.one_of(
    st.builds(
        lambda n, p: ipaddress.ip_network((n, p), strict=False),
        st.integers(min_value=0, max_value=2**32 - 1),
        st.integers(min_value=0, max_value=32),
    ),
    st.builds(
        lambda n, p: ipaddress.ip_network((n, p), strict=False),
        st.integers(min_value=0, max_value=2**128 - 1),
        st.integers(min_value=0, max_value=128),
    ),
)


@settings(max_examples=500, deadline=None)
@given(inner=networks, outer=networks)
def test_within_is_subnet_of(inner, outer) -> None:
    """within() is ipaddress's subnet_of, and False across IP versions."""
    want = inner.version == outer.version and inner.subnet_of(outer)
    assert within(inner, outer) == want


@settings(max_examples=300, deadline=None)
@given(inner=networks, outer=st.lists(networks, max_size=3))
def test_clusters_hold_what_lies_inside_one_of_them(inner, outer) -> None:
    """Clusters.hold is "a subnet of one of them, of the same IP version"; hold_text reads
    the spelling first, and holds nothing that does not parse."""
    want = any(within(inner, o) for o in outer)
    clusters = Clusters(outer)
    assert clusters.hold(network_span(inner)) == want
    assert clusters.hold_text(str(inner)) == want
    assert not clusters.hold_text("10.0.0.0")


pool = st.builds(
    lambda a, p: str(ipaddress.ip_network(f"10.{a // 256}.{a % 256}.0/{p}", strict=False)),
    st.integers(min_value=0, max_value=511),
    st.integers(min_value=14, max_value=26),
)


@settings(max_examples=60, deadline=None)
@given(
    first=st.lists(pool, min_size=SETTLE_ONE_BY_ONE + 1, max_size=3 * SETTLE_ONE_BY_ONE),
    later=st.lists(pool, max_size=8),
    dropped=st.lists(st.integers(min_value=0, max_value=200), max_size=6),
    probe=pool,
)
def test_the_index_filled_by_a_large_list_answers_like_brute_force(
    first: list[str], later: list[str], dropped: list[int], probe: str
) -> None:
    """Many claims at once (put in order by one sort), then a few more and some discards
    (one by one): overlapping() finds exactly the live claimed CIDRs overlapping the probe."""
    index = ClaimIndex()
    live: dict[str, set[str]] = {}
    for number, cidr in enumerate(first):
        index.add(cidr, f"n{number}")
        live.setdefault(canonical(cidr), set()).add(f"n{number}")
    index.overlapping(probe)  # the first look-up sorts
    for number, cidr in enumerate(later):
        index.add(cidr, f"m{number}")
        live.setdefault(canonical(cidr), set()).add(f"m{number}")
    for at in dropped:
        if at < len(first):
            index.discard(first[at], f"n{at}")
            holders = live.get(canonical(first[at]), set())
            holders.discard(f"n{at}")
            if not holders:
                live.pop(canonical(first[at]), None)
    mine = ipaddress.ip_network(probe)
    want = {c for c in live if c != canonical(probe) and ipaddress.ip_network(c).overlaps(mine)}
    assert set(index.overlapping(probe)) == want

"""The msgspec decoder reads every Node as parse_node does, and ``same`` agrees with it."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from routectl.errors import (
    ImpossibleObjectError,
    InvalidObjectError,
    KubeError,
    ResourceVersionGoneError,
)
from routectl.kube import parse_node, same, view_of
from routectl.kube.decode import decode_event, decode_page
from tests.conftest import FIXTURES, load_fixture

TEXT = st.sampled_from(["", "a", "node-1", "10.0.0.1", "fd00::1", "ü-ß", "True", "False"])
MAYBE_TEXT = st.one_of(st.none(), TEXT)
CIDR = st.sampled_from(["10.244.1.0/24", "fd00:10:244:1::/64", "10.244.2.0/24", ""])


def absent_or(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field's value, or a marker that leaves the field out."""
    return st.one_of(st.just(...), value)


def fields(**options: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({k: absent_or(v) for k, v in options.items()}).map(
        lambda d: {k: v for k, v in d.items() if v is not ...}
    )


CONDITION = fields(
    type=st.sampled_from(["Ready", "NetworkUnavailable", "MemoryPressure", None]),
    status=MAYBE_TEXT,
    reason=MAYBE_TEXT,
    message=MAYBE_TEXT,
    lastHeartbeatTime=st.just("2026-11-29T00:00:00Z"),
)
ADDRESS = fields(type=st.sampled_from(["InternalIP", "Hostname", None]), address=MAYBE_TEXT)
NODE = fields(
    apiVersion=st.just("v1"),
    kind=st.just("Node"),
    metadata=st.one_of(
        st.none(),
        fields(
            name=MAYBE_TEXT,
            uid=MAYBE_TEXT,
            resourceVersion=st.sampled_from(["1", "42"]),
            creationTimestamp=MAYBE_TEXT,
            labels=st.just({"kubernetes.io/hostname": "x"}),
            managedFields=st.just([{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]),
        ),
    ),
    spec=st.one_of(
        st.none(),
        fields(
            podCIDR=st.one_of(st.none(), CIDR),
            podCIDRs=st.one_of(st.none(), st.lists(CIDR, max_size=3)),
            providerID=MAYBE_TEXT,
            taints=st.just([{"key": "k", "effect": "NoSchedule"}]),
        ),
    ),
    status=st.one_of(
        st.none(),
        fields(
            addresses=st.one_of(st.none(), st.lists(ADDRESS, max_size=4)),
            conditions=st.one_of(st.none(), st.lists(CONDITION, max_size=4)),
            images=st.just([{"names": ["registry/x:1"], "sizeBytes": 1}]),
        ),
    ),
)


def expected(node: dict[str, Any]) -> object:
    try:
        return parse_node(node)
    except InvalidObjectError:
        return "refused"


def decoded(node: dict[str, Any]) -> object:
    event = decode_event(orjson.dumps({"type": "MODIFIED", "object": node}))
    if event.record is None:
        return event.view if event.view is not None else "refused"
    try:
        return view_of(event.record)
    except InvalidObjectError:
        return "refused"


@settings(max_examples=400, deadline=None)
@given(NODE)
def test_a_watch_event_reads_as_parse_node_reads_it(node: dict[str, Any]) -> None:
    assert decoded(node) == expected(node)


@settings(max_examples=200, deadline=None)
@given(st.lists(NODE, max_size=5))
def test_a_page_reads_as_parse_node_reads_it(nodes: list[dict[str, Any]]) -> None:
    body = {"kind": "NodeList", "metadata": {"resourceVersion": "7"}, "items": nodes}
    page = decode_page(orjson.dumps(body))
    wanted = [v for v in map(expected, nodes) if v != "refused"]
    assert page.nodes == wanted
    assert len(page.skipped) + len(page.impossible) == len(nodes) - len(wanted)
    assert page.resource_version == "7"


@settings(max_examples=300, deadline=None)
@given(NODE, NODE)
def test_same_says_exactly_whether_the_view_would_change(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    before, after = expected(first), expected(second)
    if before == "refused" or after == "refused":
        return
    event = decode_event(orjson.dumps({"type": "MODIFIED", "object": second}))
    if event.record is None:  # read by the tolerant path: nothing to compare
        return
    assert same(before, event.record) == (before == after)  # type: ignore[arg-type]
    assert same(after, event.record)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", sorted((FIXTURES / "nodes").glob("*.json")), ids=lambda p: p.name)
def test_real_nodes_decode_as_parse_node_reads_them(path) -> None:
    raw = load_fixture("nodes", path.name)
    assert decoded(raw) == parse_node(raw)
    event = decode_event(orjson.dumps({"type": "MODIFIED", "object": raw}))
    assert event.record is not None  # the fast path, not the tolerant one
    assert event.name == raw["metadata"]["name"]
    assert event.resource_version == raw["metadata"]["resourceVersion"]


def test_fields_of_unexpected_types_fall_back_to_the_tolerant_reader() -> None:
    odd = {"metadata": {"name": "n", "uid": 7}, "spec": {"podCIDRs": ["10.0.0.0/24"]}}
    event = decode_event(orjson.dumps({"type": "ADDED", "object": odd}))
    assert event.record is None
    assert event.view == parse_node(odd)
    page = decode_page(orjson.dumps({"metadata": {"continue": "x"}, "items": [odd]}))
    assert page.nodes == [parse_node(odd)]
    assert page.continue_token == "x"  # noqa: S105 -- not a password


def test_a_node_the_api_server_never_serves_is_impossible_not_cidr_less() -> None:
    """spec: null, podCIDRs not a list, podCIDR null: what the Node says is unknown, so the
    decoder says so (the informer keeps its last view) instead of reading 'no pod CIDR'."""
    for spec in (None, {"podCIDRs": "10.0.0.0/24"}, {"podCIDR": None}):
        node = {"metadata": {"name": "n"}, "spec": spec}
        event = decode_event(orjson.dumps({"type": "MODIFIED", "object": node}))
        assert event.impossible is not None or (
            event.record is not None and _raises_impossible(event.record)
        ), spec
        page = decode_page(orjson.dumps({"metadata": {}, "items": [node]}))
        assert (page.nodes, [e.name for e in page.impossible]) == ([], ["n"]), spec


def _raises_impossible(record: Any) -> bool:
    try:
        view_of(record)
    except ImpossibleObjectError:
        return True
    return False


def test_error_events_and_malformed_lines_raise() -> None:
    gone = {
        "type": "ERROR",
        "object": {"kind": "Status", "status": "Failure", "reason": "Expired", "code": 410},
    }
    with pytest.raises(ResourceVersionGoneError):
        decode_event(orjson.dumps(gone))
    with pytest.raises(KubeError, match="malformed"):
        decode_event(b"{not json")
    with pytest.raises(KubeError, match="without an object"):
        decode_event(b'{"type": "ADDED"}')
    with pytest.raises(KubeError, match="not JSON"):
        decode_page(b"<html>")


def test_a_bookmark_carries_its_resource_version() -> None:
    line = orjson.dumps(
        {"type": "BOOKMARK", "object": {"kind": "Node", "metadata": {"resourceVersion": "99"}}}
    )
    event = decode_event(line)
    assert (event.type, event.resource_version, event.name) == ("BOOKMARK", "99", "")

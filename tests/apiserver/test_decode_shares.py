"""A PATCH shares what it leaves alone, and a decode skips it: the same objects result.

The fake API server decodes every written object as Go's structs would (canonical form).
A strategic merge patch copies only the maps on its patched paths, and a decode told the
stored object it started from takes a field that *is* that object's as it is (decoding a
canonical value gives it back). These tests hold both to the plain, full decode on the
real Node objects of tests/fixtures/nodes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from routectl_sim.apiserver import FakeApiServer
from routectl_sim.apiserver.gotime import RFC3339, GoTimeError, _parse, parse_time
from routectl_sim.apiserver.kinds import NODE
from routectl_sim.apiserver.patch import strategic_merge_patch

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "nodes").glob("*.json"))
HEARTBEAT = {
    "type": "Ready",
    "status": "True",
    "reason": "KubeletReady",
    "message": "kubelet is posting ready status",
    "lastHeartbeatTime": "2026-12-02T07:00:00Z",
    "lastTransitionTime": "2026-11-29T00:00:00Z",
}


def stored(path: Path) -> dict[str, Any]:
    node = json.loads(path.read_text())
    return NODE.schema.decode(node)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_a_canonical_node_decodes_to_itself(path: Path) -> None:
    node = stored(path)
    assert NODE.schema.decode(node) == node
    assert NODE.schema.decode(copy.deepcopy(node), known=(node,)) == node


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
@pytest.mark.parametrize(
    "patch",
    [
        {"status": {"conditions": [HEARTBEAT]}},
        {"status": {"addresses": [{"type": "InternalIP", "address": "10.9.9.9"}]}},
        {
            "metadata": {"labels": {"topology.kubernetes.io/zone": "z"}},
            "spec": {"unschedulable": True},
        },
        {"status": {"conditions": [{"type": "Ready", "$patch": "delete"}]}},
        {"spec": {"taints": None}, "status": {"capacity": {"pods": "7"}}},
    ],
    ids=["heartbeat", "addresses", "labels-spec", "delete-condition", "nulls"],
)
def test_a_patch_shares_what_it_leaves_and_the_decode_gives_the_same(
    path: Path, patch: dict[str, Any]
) -> None:
    node = stored(path)
    before = copy.deepcopy(node)
    patched = strategic_merge_patch(node, copy.deepcopy(patch), merge_keys=NODE.merge_keys)
    assert node == before, "the stored object is never changed"
    untouched = [key for key in ("metadata", "spec", "status") if key not in patch]
    assert all(patched[key] is node[key] for key in untouched if key in node)
    full = NODE.schema.decode(copy.deepcopy(patched))
    assert NODE.schema.decode(patched, known=(node,)) == full
    assert json.dumps(NODE.schema.decode(patched, known=(node,))) == json.dumps(full), "key order"
    assert node == before


async def test_the_answer_is_a_copy_and_a_heartbeat_without_one_is_stored_alike() -> None:
    node = json.loads(FIXTURES[0].read_text())
    name = node["metadata"]["name"]
    for field in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
        node["metadata"].pop(field, None)
    async with FakeApiServer() as server:
        server.create_node(node)
        answer = server.patch_node_status(name, {"status": {"conditions": [HEARTBEAT]}})
        answer["status"]["conditions"].clear()
        answer["metadata"]["labels"]["changed"] = "by the caller"
        kept = server.get_node(name)
        assert kept["status"]["conditions"], "changing the answer changes nothing stored"
        assert "changed" not in kept["metadata"]["labels"]
        later = {**HEARTBEAT, "lastHeartbeatTime": "2026-12-02T07:05:00Z"}
        server.post_node_status(name, {"status": {"conditions": [later]}})
        after = server.get_node(name)
        ready = [c for c in after["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["lastHeartbeatTime"] == "2026-12-02T07:05:00Z"
        assert int(after["metadata"]["resourceVersion"]) > int(kept["metadata"]["resourceVersion"])


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-12-02T07:00:00Z",
        "2024-02-29T23:59:59Z",
        "2023-02-29T00:00:00Z",  # no such day
        "2026-12-02T24:00:00Z",
        "2026-12-02T07:00:60Z",
        "0999-01-01T00:00:00Z",
        "2026-12-02t07:00:00Z",
        "2026-12-02T07:00:00+02:00",
        "2026-12-02T07:00:00.5Z",
        "\uff12026-12-02T07:00:00Z",  # a full-width digit
    ],
)
def test_a_stamp_printed_as_kubernetes_prints_it_is_taken_as_the_parser_would(stamp: str) -> None:
    """A heartbeat's stamp skips the parser only when the parser would print it unchanged."""
    try:
        expected: str | None = _parse(stamp, RFC3339).strftime("%Y-%m-%dT%H:%M:%SZ")
    except GoTimeError:
        expected = None
    try:
        got: str | None = parse_time(stamp)
    except GoTimeError:
        got = None
    assert got == expected

"""parse_node reads real Node objects from real clusters (tests/fixtures/nodes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from routectl.errors import ImpossibleObjectError, InvalidObjectError
from routectl.kube import parse_node
from routectl.model import Condition, NodeAddress
from tests.conftest import FIXTURES, load_fixture

NODE_FILES = sorted(p.name for p in (FIXTURES / "nodes").glob("*.json"))

EXPECTED = {
    "gke-1.json": (
        ("10.48.10.0/24",),
        Condition(status="False", reason="RouteCreated", message="RouteController created a route"),
    ),
    "eks-1.json": ((), None),
    "kind-1.json": (("10.244.0.0/24",), None),
    "kubeadm-1.json": (
        ("10.244.0.0/24",),
        Condition(status="False", reason="FlannelIsUp", message="Flannel is running on this node"),
    ),
    "rke2-1.json": (
        ("10.42.0.0/24",),
        Condition(status="False", reason="CiliumIsUp", message="Cilium is running on this node"),
    ),
    "openshift-gcp-1.json": ((), None),
    "openshift-aws-1.json": ((), None),
}


def test_every_fixture_is_covered() -> None:
    """The expectations list every real Node fixture."""
    assert set(NODE_FILES) == set(EXPECTED)


@pytest.mark.parametrize("filename", NODE_FILES)
def test_real_nodes_parse(filename: str) -> None:
    """Each real Node parses: name, UID, pod CIDRs, addresses and NetworkUnavailable."""
    raw = load_fixture("nodes", filename)
    view = parse_node(raw)
    cidrs, condition = EXPECTED[filename]
    assert view.name == raw["metadata"]["name"]
    assert view.uid == raw["metadata"].get("uid", "")
    assert view.pod_cidrs == cidrs
    assert view.addresses == tuple(
        NodeAddress(type=a["type"], address=a["address"]) for a in raw["status"]["addresses"]
    )
    if filename != "openshift-gcp-1.json":
        assert view.network_unavailable == condition
    assert view.provider_id == raw["spec"].get("providerID", "")


def test_openshift_condition_with_null_heartbeat() -> None:
    """A NetworkUnavailable condition whose lastHeartbeatTime is null still parses."""
    view = parse_node(load_fixture("nodes", "openshift-gcp-1.json"))
    assert view.network_unavailable is not None
    assert view.network_unavailable.reason == "RouteCreated"


def test_pod_cidrs_preferred_over_pod_cidr() -> None:
    """spec.podCIDRs wins over the singular spec.podCIDR; the singular is a fallback."""
    raw = {
        "metadata": {"name": "n"},
        "spec": {"podCIDR": "10.0.0.0/24", "podCIDRs": ["10.0.1.0/24", "fd00::/64"]},
    }
    assert parse_node(raw).pod_cidrs == ("10.0.1.0/24", "fd00::/64")
    assert parse_node(
        {"metadata": {"name": "n"}, "spec": {"podCIDR": "10.0.0.0/24"}}
    ).pod_cidrs == ("10.0.0.0/24",)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"metadata": {"name": "n"}}, id="no-spec-no-status"),
        pytest.param({"metadata": {"name": "n"}, "status": None}, id="null-status"),
        pytest.param(
            {
                "metadata": {"name": "n"},
                "status": {"addresses": None, "conditions": [None, {"type": "NetworkUnavailable"}]},
            },
            id="null-items",
        ),
        pytest.param(
            {
                "kind": "Node",
                "apiVersion": "v1",
                "metadata": {"name": "n"},
                "spec": {"podCIDRs": []},
            },
            id="with-kind-empty-cidrs",
        ),
    ],
)
def test_sparse_nodes_parse(raw) -> None:
    """Missing sections and null values never raise."""
    assert parse_node(raw).name == "n"


def test_node_without_name_is_refused() -> None:
    """A Node without a name cannot be routed and raises InvalidObjectError."""
    with pytest.raises(InvalidObjectError):
        parse_node({"metadata": {}})


def test_fixture_dir_exists() -> None:
    """The copied fixtures are present (guards against an empty parametrization)."""
    assert len(NODE_FILES) == 7
    assert Path(FIXTURES / "nodes" / "SOURCES.md").exists()


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        pytest.param(None, "spec is null, not an object", id="spec-null"),
        pytest.param({"podCIDRs": "10.244.1.0/24"}, "spec.podCIDRs is", id="cidrs-a-string"),
        pytest.param({"podCIDRs": [24]}, "not a string", id="cidr-a-number"),
        pytest.param({"podCIDR": 7}, "spec.podCIDR is not a string", id="cidr-a-number-alone"),
    ],
)
def test_a_node_the_api_server_never_serves_is_impossible_not_empty(
    spec: object, said: str
) -> None:
    """spec: null or podCIDRs that are not a list of strings: not "no pod CIDR" (which
    would delete the Node's routes) but an ImpossibleObjectError naming the Node and why."""
    with pytest.raises(ImpossibleObjectError, match=said) as caught:
        parse_node({"metadata": {"name": "n"}, "spec": spec})
    assert caught.value.name == "n"
    assert "never serves" in str(caught.value)

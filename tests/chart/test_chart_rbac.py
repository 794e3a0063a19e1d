"""RBAC is least privilege: exact verbs, no wildcard, leases only in the release namespace."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

Manifest = dict[str, Any]
RBAC_KINDS = {"ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"}

CLUSTER_RULES = {
    ("", "nodes"): {"get", "list", "watch"},
    ("", "nodes/status"): {"patch"},
    ("", "events"): {"create", "patch"},
}
LEASE_VERBS = {"get", "create", "update"}
IPAM_CLUSTER_RULES = {
    ("", "nodes"): {"get", "list", "watch", "patch"},
    ("networking.k8s.io", "servicecidrs"): {"list"},
}
CLAIM_VERBS = {"create", "get", "list", "delete"}


def _args(manifests: list[Manifest]) -> list[str]:
    (container,) = next(m for m in manifests if m["kind"] == "Deployment")["spec"]["template"][
        "spec"
    ]["containers"]
    args: list[str] = container["args"]
    return args


def _ipam(manifests: list[Manifest]) -> bool:
    return "--allocate-node-cidrs=true" in _args(manifests)


def _strings(node: Any) -> Iterator[str]:
    """Every string anywhere inside ``node``."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


def _verbs_by_resource(role: Manifest) -> dict[tuple[str, str], set[str]]:
    """(apiGroup, resource) -> verbs granted by ``role``'s rules, all rules added up."""
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        assert "nonResourceURLs" not in rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    return granted


def test_no_wildcard_anywhere_in_rbac(manifests: list[Manifest]) -> None:
    """No RBAC object of any scenario contains ``*`` in any field."""
    rbac = [m for m in manifests if m["kind"] in RBAC_KINDS]
    assert rbac
    for manifest in rbac:
        assert not [s for s in _strings(manifest) if "*" in s], manifest["kind"]


def test_cluster_role_grants_exactly_nodes_status_and_events(manifests: list[Manifest]) -> None:
    """The ClusterRole grants Nodes get/list/watch, nodes/status patch, Events create/patch only."""
    (cluster_role,) = (m for m in manifests if m["kind"] == "ClusterRole")
    expected = CLUSTER_RULES | IPAM_CLUSTER_RULES if _ipam(manifests) else CLUSTER_RULES
    assert _verbs_by_resource(cluster_role) == expected


def test_leases_only_through_a_role_in_the_release_namespace(manifests: list[Manifest]) -> None:
    """Leases are granted get/create/update by a namespaced Role only, never cluster-wide."""
    for cluster_role in (m for m in manifests if m["kind"] == "ClusterRole"):
        assert all("leases" not in r["resources"] for r in cluster_role["rules"])
    roles = [m for m in manifests if m["kind"] == "Role"]
    for role in roles:
        assert role["metadata"]["namespace"] == "kube-system"
        verbs = (
            CLAIM_VERBS if role["metadata"]["name"].endswith("-pod-cidr-claims") else LEASE_VERBS
        )
        assert _verbs_by_resource(role) == {("coordination.k8s.io", "leases"): verbs}


def test_role_exists_exactly_when_leader_election_is_on(manifests: list[Manifest]) -> None:
    """A scenario with leader election gets the lease Role and its binding; one without gets none."""
    (container,) = next(m for m in manifests if m["kind"] == "Deployment")["spec"]["template"][
        "spec"
    ]["containers"]
    leader_elect = "--leader-elect=true" in container["args"]
    claims = _ipam(manifests) and "--pod-cidr-claims=lease" in container["args"]
    kinds = [m["kind"] for m in manifests]
    assert kinds.count("Role") == kinds.count("RoleBinding") == int(leader_elect) + int(claims)


def test_lease_get_and_update_are_limited_to_routectls_lease(
    render: Callable[..., list[Manifest]],
) -> None:
    """get and update name the one Lease routectl uses; create cannot be limited by name."""
    manifests = render(
        {
            "clusterCIDRs": ["10.244.0.0/16"],
            "provider": {"name": "fake"},
            "leaderElection": {"resourceName": "my-lease"},
        }
    )
    (role,) = (m for m in manifests if m["kind"] == "Role")
    assert not role["metadata"]["name"].endswith("-pod-cidr-claims")
    for rule in role["rules"]:
        if set(rule["verbs"]) & {"get", "update"}:
            assert rule["resourceNames"] == ["my-lease"]
    (container,) = next(m for m in manifests if m["kind"] == "Deployment")["spec"]["template"][
        "spec"
    ]["containers"]
    assert "--leader-elect-resource-name=my-lease" in container["args"]
    assert "--leader-elect-resource-namespace=kube-system" in container["args"]


def test_bindings_grant_the_roles_to_routectls_service_account(manifests: list[Manifest]) -> None:
    """Every binding names the chart's own role and only routectl's ServiceAccount."""
    (account,) = (m for m in manifests if m["kind"] == "ServiceAccount")
    roles = {(m["kind"], m["metadata"]["name"]) for m in manifests if m["kind"] in RBAC_KINDS}
    for binding in (m for m in manifests if m["kind"] in {"ClusterRoleBinding", "RoleBinding"}):
        assert (binding["roleRef"]["kind"], binding["roleRef"]["name"]) in roles
        assert binding["subjects"] == [
            {
                "kind": "ServiceAccount",
                "name": account["metadata"]["name"],
                "namespace": "kube-system",
            }
        ]

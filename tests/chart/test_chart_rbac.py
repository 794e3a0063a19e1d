"""RBAC is least privilege: exact verbs, no wildcard, leases and Events only in namespaces.

``tests/integration/test_rbac_matches_code.py`` proves these grants are exactly the calls the
code makes; this file pins their shape per scenario.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

Manifest = dict[str, Any]
RBAC_KINDS = {"ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"}

CLUSTER_RULES = {
    ("", "nodes"): {"list", "watch"},
    ("", "nodes/status"): {"patch"},
}
REVIEWS = {
    ("authentication.k8s.io", "tokenreviews"): {"create"},
    ("authorization.k8s.io", "subjectaccessreviews"): {"create"},
}
LEASE_VERBS = {"get", "create", "update"}
EVENT_VERBS = {"create", "get", "patch"}
IPAM_CLUSTER_RULES = {
    ("", "nodes"): {"list", "watch", "patch"},
    ("networking.k8s.io", "servicecidrs"): {"list"},
}
CLAIM_VERBS = {"create", "get", "list", "delete"}


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


def _args(manifests: list[Manifest]) -> list[str]:
    (container,) = next(m for m in manifests if m["kind"] == "Deployment")["spec"]["template"][
        "spec"
    ]["containers"]
    args: list[str] = container["args"]
    return args


def _ipam(manifests: list[Manifest]) -> bool:
    return "--routectl-allocate-node-cidrs=true" in _args(manifests)


def _claims(manifests: list[Manifest]) -> bool:
    return _ipam(manifests) and "--pod-cidr-claims=none" not in _args(manifests)  # lease: default


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


def test_cluster_role_grants_exactly_nodes_and_their_status(manifests: list[Manifest]) -> None:
    """The ClusterRole grants Nodes list/watch and nodes/status patch, the reviews of
    delegated authn/authz when serving securely, and with node IPAM Node patch and
    ServiceCIDR list: no Event anywhere."""
    (cluster_role,) = (m for m in manifests if m["kind"] == "ClusterRole" and m["metadata"]["name"] == "routectl")  # fmt: skip
    secure = any(
        a.startswith("--secure-port=") and a != "--secure-port=0" for a in _args(manifests)
    )
    expected = CLUSTER_RULES | (REVIEWS if secure else {})
    if _ipam(manifests):
        expected = expected | IPAM_CLUSTER_RULES
    assert _verbs_by_resource(cluster_role) == expected


def test_leases_and_events_only_through_roles(manifests: list[Manifest]) -> None:
    """Leases (with leader election) and Events in the release namespace; Node Events in
    `default`; never cluster-wide."""
    for cluster_role in (m for m in manifests if m["kind"] == "ClusterRole"):
        assert all(
            {"leases", "events"}.isdisjoint(r.get("resources", [])) for r in cluster_role["rules"]
        )
    (container,) = next(m for m in manifests if m["kind"] == "Deployment")["spec"]["template"][
        "spec"
    ]["containers"]
    leader_elect = "--leader-elect=false" not in container["args"]  # on by default
    roles = {
        m["metadata"]["namespace"]: m
        for m in manifests
        if m["kind"] == "Role" and not m["metadata"]["name"].endswith("-pod-cidr-claims")
    }
    expected = {("", "events"): EVENT_VERBS}
    if leader_elect:
        expected[("coordination.k8s.io", "leases")] = LEASE_VERBS
    assert _verbs_by_resource(roles["kube-system"]) == expected
    assert _verbs_by_resource(roles["default"]) == {("", "events"): EVENT_VERBS}
    claims = [m for m in manifests if m["metadata"]["name"].endswith("-pod-cidr-claims")]
    if _claims(manifests):
        (role,) = (m for m in claims if m["kind"] == "Role")
        assert role["metadata"]["namespace"] == "kube-system"
        assert _verbs_by_resource(role) == {("coordination.k8s.io", "leases"): CLAIM_VERBS}
    else:
        assert claims == []
    kinds = [m["kind"] for m in manifests]
    count = 2 + int(_claims(manifests))
    assert kinds.count("Role") == kinds.count("RoleBinding") == count


def test_lease_get_and_update_are_limited_to_routectls_lease(
    render: Callable[..., list[Manifest]],
) -> None:
    """get and update name the one Lease routectl uses; create cannot be limited by name."""
    manifests = render(
        {
            "clusterCIDRs": ["10.244.0.0/16"],
            "provider": {"name": "fake", "options": {"demo": "true"}},
            "image": {"repository": "registry.example.com/routectl"},
            "leaderElection": {"resourceName": "my-lease"},
        }
    )
    (role,) = (m for m in manifests if m["kind"] == "Role" and m["metadata"]["name"] == "routectl")
    for rule in role["rules"]:
        if "leases" in rule["resources"] and set(rule["verbs"]) & {"get", "update"}:
            assert rule["resourceNames"] == ["my-lease"]
    (container,) = next(m for m in manifests if m["kind"] == "Deployment")["spec"]["template"][
        "spec"
    ]["containers"]
    assert "--leader-elect-resource-name=my-lease" in container["args"]
    assert "--leader-elect-resource-namespace=kube-system" in container["args"]


def test_bindings_grant_the_roles_to_routectls_service_account(manifests: list[Manifest]) -> None:
    """Every binding names the chart's own role and only routectl's ServiceAccount; the one
    exception is the metrics scraper's account (the ServiceMonitor's token), which gets the
    metrics reader role and nothing else."""
    (deployment,) = (m for m in manifests if m["kind"] == "Deployment")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    roles = {(m["kind"], m["metadata"]["name"]) for m in manifests if m["kind"] in RBAC_KINDS}
    for binding in (m for m in manifests if m["kind"] in {"ClusterRoleBinding", "RoleBinding"}):
        assert (binding["roleRef"]["kind"], binding["roleRef"]["name"]) in roles
        (subject,) = binding["subjects"]
        if binding["metadata"]["name"].endswith("-metrics-scraper"):
            assert binding["roleRef"]["name"].endswith("-metrics-reader")
            assert subject["name"] == binding["metadata"]["name"] != account
        else:
            assert subject["name"] == account
        assert subject["kind"] == "ServiceAccount"
        assert subject["namespace"] == "kube-system"

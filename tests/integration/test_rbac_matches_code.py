"""The chart grants exactly what the code calls (issue 12, least privilege).

The list of API calls is not written down here: it is what the fake API server recorded
while routectl's real service ran through every path that talks to Kubernetes (informer,
status patches, Events created, aggregated and carried over a restart, a Lease created,
renewed, released and taken over, an Event about the Lease, a scrape of the secure port
reviewed by TokenReview and SubjectAccessReview). Each recorded request is
turned into RBAC attributes the way kube-apiserver does (``request_info``) and checked
against the RBAC the chart renders with the real Helm engine for routectl's own
ServiceAccount (the roles its bindings name; the scraper's metrics-reader role is not
routectl's):

* every request is allowed by a rule (a Role only in its namespace, ``resourceNames``
  honoured);
* every verb the chart grants is used by at least one request: nothing is granted that the
  code never calls.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from routectl.errors import ProviderError
from routectl.model import Route
from routectl.observe.serving import AuthSettings, DelegatedAuth
from routectl.testing.cloud import Fault
from routectl_sim.apiserver.auth import RequestInfo, request_info
from tests.integration.conftest import Cluster, eventually, node_object

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

CHART = Path(__file__).resolve().parents[2] / "charts" / "routectl"
NAMESPACE = "kube-system"
VALUES = {
    "clusterCIDRs": ["10.244.0.0/16", "fd00:10:244::/56"],
    "provider": {"name": "fake", "options": {"demo": "true"}},
    "image": {"repository": "registry.example.com/routectl"},
}


@dataclasses.dataclass(frozen=True)
class Grant:
    """One (group, resource, verb) a rule grants, where, and on which names."""

    group: str
    resource: str
    verb: str
    namespace: str | None  # None: cluster-wide (a ClusterRole)
    names: frozenset[str]  # empty: any name

    def allows(self, info: RequestInfo) -> bool:
        return (
            (info.api_group, info.full_resource, info.verb)
            == (self.group, self.resource, self.verb)
            and (self.namespace is None or self.namespace == info.namespace)
            and (not self.names or info.name in self.names)
        )


def chart_grants(values: dict[str, Any]) -> list[Grant]:
    """Every grant of the chart's Roles and ClusterRoles, as Helm renders them."""
    with helm_python.Chart.load(CHART) as chart:
        files = chart.render(values, name="routectl", namespace=NAMESPACE, is_install=True)
    docs = [
        doc
        for path, text in files.items()
        if not path.endswith("NOTES.txt")
        for doc in yaml.safe_load_all(text)
        if isinstance(doc, dict)
    ]
    account = {"kind": "ServiceAccount", "name": "routectl", "namespace": NAMESPACE}
    bound = {
        (d["roleRef"]["kind"], d["roleRef"]["name"])
        for d in docs
        if d.get("kind") in {"RoleBinding", "ClusterRoleBinding"} and account in d["subjects"]
    }
    grants = []
    for role in (d for d in docs if (d.get("kind"), d["metadata"]["name"]) in bound):
        where = role["metadata"].get("namespace") if role["kind"] == "Role" else None
        for rule in role["rules"]:
            grants += [
                Grant(group, resource, verb, where, frozenset(rule.get("resourceNames", [])))
                for group in rule["apiGroups"]
                for resource in rule["resources"]
                for verb in rule["verbs"]
            ]
    return grants


async def exercise(cluster: Cluster) -> list[RequestInfo]:
    """Run routectl through every path that calls the API server; what did it call?"""
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    cluster.server.create_node(node_object("n2", "10.99.0.0/24"))  # outside: an Event
    cluster.cloud.fail_next("create", Fault(error=ProviderError("503")), times=4)
    for i in range(8):  # stale routes: the mass-delete guard writes an Event on the Lease
        stale = Route(target_node=f"gone-{i}", destination_cidr=f"10.244.{100 + i}.0/24")
        cluster.cloud.add_route("kubernetes", stale)
    flags = {
        "leader_elect": True,
        "cluster_cidrs": VALUES_CIDRS,
        "leader_elect_lease_duration": 6.0,
        "leader_elect_renew_deadline": 4.0,
        "leader_elect_retry_period": 1.0,
    }
    first = await cluster.start(identity="a", **flags)
    await eventually(lambda: cluster.condition("n1") == ("False", "RouteCreated"))
    await eventually(lambda: _count(cluster, "FailedToCreateRoute") >= 2)
    await asyncio.sleep(5)  # a renewal or two
    cluster.server.add_review_token("scraper", username="prometheus")
    cluster.server.grant_review("prometheus", verb="get", path="/metrics")
    auth = DelegatedAuth(first.kube, AuthSettings())  # what the secure port asks per scrape
    user = await auth.user("scraper")
    assert user is not None
    assert await auth.allowed(user, verb="get", path="/metrics")
    assert await first.stop() == 0  # releases the Lease
    second = await cluster.start(identity="b", **flags)  # takes it over; its Events exist
    await eventually(lambda: _count(cluster, "ClusterCIDRMisconfigured") >= 2)
    assert await second.stop() == 0
    return [request_info(r.method, r.path, r.query) for r in cluster.server.requests]


VALUES_CIDRS = tuple(ipaddress.ip_network(c) for c in VALUES["clusterCIDRs"])


def _allowed(call: RequestInfo, grants: list[Grant]) -> bool:
    return any(g.allows(call) for g in grants)


def _count(cluster: Cluster, reason: str) -> int:
    return sum(int(e.get("count") or 1) for e in cluster.server.events() if e["reason"] == reason)


async def test_the_chart_grants_exactly_the_calls_the_code_makes(cluster: Cluster) -> None:
    """Each call allowed; each grant used."""
    calls = [info for info in await exercise(cluster) if info.is_resource]
    grants = chart_grants(VALUES)
    denied = sorted(
        {(c.verb, c.full_resource, c.namespace, c.name) for c in calls}
        - {(c.verb, c.full_resource, c.namespace, c.name) for c in calls if _allowed(c, grants)}
    )
    unused = sorted(
        {(g.verb, g.resource, g.namespace) for g in grants if not any(g.allows(c) for c in calls)}
    )
    assert denied == [], "the chart would refuse these calls"
    assert unused == [], "the chart grants what the code never calls"
    used = {(c.api_group, c.full_resource, c.verb) for c in calls}
    assert ("", "events", "patch") in used  # the correlator's path really ran
    assert ("", "events", "get") in used
    assert ("coordination.k8s.io", "leases", "create") in used
    assert ("authentication.k8s.io", "tokenreviews", "create") in used

"""Discovery and server-side printing, as kubectl and client libraries read them.

kubernetes-asyncio's typed discovery calls deserialize each answer into the real API
types (``V1APIVersions``, ``V1APIGroupList``, ``V1APIResourceList``, ``VersionInfo``),
which refuse a missing required field; the Table and OpenAPI checks read exactly what
kubectl reads (see ``tests/sim/test_playground.py`` for kubectl itself).
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator

import aiohttp
import pytest
from kubernetes_asyncio import client

from routectl_sim.apiserver import FakeApiServer
from routectl_sim.apiserver.tables import human_duration, node_cells, wants_table
from tests.apiserver.harness import TOKEN, admin_client, seed_cluster

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

AUTH = {"Authorization": f"Bearer {TOKEN}"}
KUBECTL_GET = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
"""The Accept header of ``kubectl get``."""
AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)
"""The Accept header of kubectl's discovery (aggregated first, legacy as the fallback)."""


@pytest.fixture
async def server() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token=TOKEN) as fake:
        yield fake


@pytest.fixture
async def api(server) -> AsyncIterator[client.ApiClient]:
    async with admin_client(server) as api:
        yield api


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(headers=AUTH) as http:
        yield http


async def test_the_typed_client_reads_every_discovery_document(api) -> None:
    versions = await client.CoreApi(api).get_api_versions()
    assert versions.versions == ["v1"]
    groups = await client.ApisApi(api).get_api_versions()
    names = {g.name: g.preferred_version.group_version for g in groups.groups}
    assert names == {
        "coordination.k8s.io": "coordination.k8s.io/v1",
        "events.k8s.io": "events.k8s.io/v1",
        "networking.k8s.io": "networking.k8s.io/v1",
    }
    core = await client.CoreV1Api(api).get_api_resources()
    nodes = next(r for r in core.resources if r.name == "nodes")
    assert (nodes.kind, nodes.namespaced, nodes.short_names) == ("Node", False, ["no"])
    assert {"get", "list", "watch", "create", "patch", "update", "delete"} <= set(nodes.verbs)
    leases = await client.CoordinationV1Api(api).get_api_resources()
    assert [(r.name, r.namespaced) for r in leases.resources] == [("leases", True)]
    version = await client.VersionApi(api).get_code()
    assert (version.major, version.minor) == ("1", "36")


async def test_aggregated_discovery_falls_back_to_the_legacy_form(server, session) -> None:
    """Asked for the aggregated form first, the server answers the legacy one as plain JSON,
    which clients take as "not supported" (as from any server before v1.26)."""
    async with session.get(f"{server.url}/apis", headers={"Accept": AGGREGATED}) as response:
        assert response.status == 200
        assert response.content_type == "application/json"
        body = await response.json()
    assert body["kind"] == "APIGroupList"


async def test_unknown_group_versions_are_404(server, session) -> None:
    for path in ("/apis/apps", "/apis/apps/v1", "/apis/coordination.k8s.io/v2"):
        async with session.get(f"{server.url}{path}") as response:
            assert response.status == 404, path
            assert (await response.json())["kind"] == "Status"


async def test_kubectl_get_is_answered_with_a_table(server, session) -> None:
    seed_cluster(server)
    headers = {"Accept": KUBECTL_GET}
    async with session.get(f"{server.url}/api/v1/nodes?limit=500", headers=headers) as response:
        table = await response.json()
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert [c["name"] for c in table["columnDefinitions"]][:5] == [
        "Name",
        "Status",
        "Roles",
        "Age",
        "Version",
    ]
    assert table["metadata"]["resourceVersion"] == str(server.resource_version)
    names = [row["cells"][0] for row in table["rows"]]
    assert names == sorted(n["metadata"]["name"] for n in server.list_nodes())
    assert all(row["object"]["kind"] == "PartialObjectMetadata" for row in table["rows"])
    one = names[0]
    async with session.get(f"{server.url}/api/v1/nodes/{one}", headers=headers) as response:
        single = await response.json()
    assert [row["cells"][0] for row in single["rows"]] == [one]
    async with session.get(f"{server.url}/api/v1/nodes/{one}") as response:
        assert (await response.json())["kind"] == "Node"  # a plain GET is still the object


async def test_openapi_v3_tells_kubectl_the_server_validates_fields(server, session) -> None:
    """kubectl apply looks for a PATCH of the kind with a fieldValidation query parameter."""
    async with session.get(f"{server.url}/openapi/v3") as response:
        root = await response.json()
    url = root["paths"]["api/v1"]["serverRelativeURL"]
    async with session.get(f"{server.url}{url}") as response:
        document = await response.json()
    patches = [op["patch"] for op in document["paths"].values() if "patch" in op]
    (node,) = [p for p in patches if p["x-kubernetes-group-version-kind"]["kind"] == "Node"]
    assert {"name": "fieldValidation", "in": "query"}.items() <= node["parameters"][0].items()
    assert "application/strategic-merge-patch+json" in node["requestBody"]["content"]
    async with session.get(f"{server.url}/openapi/v3/apis/apps/v1") as response:
        assert response.status == 404


async def test_pods_are_an_empty_list(server, session) -> None:
    """kubectl describe node lists the Node's pods; the fake stores none."""
    query = "fieldSelector=spec.nodeName%3Dx%2Cstatus.phase%21%3DFailed&limit=500"
    async with session.get(f"{server.url}/api/v1/pods?{query}") as response:
        body = await response.json()
    assert (body["kind"], body["items"]) == ("PodList", [])
    async with session.get(f"{server.url}/api/v1/namespaces/default/pods/p") as response:
        assert response.status == 404


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 60, "5h1m"),
        (30 * 3600, "30h"),
        (50 * 3600, "2d2h"),
        (20 * 86400, "20d"),
        (3 * 365 * 86400 + 86400, "3y1d"),
        (10 * 365 * 86400, "10y"),
    ],
)
def test_ages_read_as_kubectl_shows_them(seconds, shown) -> None:
    assert human_duration(seconds) == shown


def test_status_and_roles_cells() -> None:
    now = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
    node = {
        "metadata": {
            "name": "n",
            "creationTimestamp": "2026-11-30T23:55:00Z",
            "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "x"},
        },
        "spec": {"unschedulable": True},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
    }
    cells = node_cells(node, now=now)
    assert cells[:5] == ["n", "NotReady,SchedulingDisabled", "control-plane,x", "5m", ""]
    assert node_cells({"metadata": {"name": "m"}}, now=now)[1:3] == ["Unknown", "<none>"]


def test_only_a_first_choice_table_is_a_table() -> None:
    assert wants_table(KUBECTL_GET)
    assert not wants_table("application/json")
    assert not wants_table("application/json, application/json;as=Table;v=v1;g=meta.k8s.io")
    assert not wants_table("")

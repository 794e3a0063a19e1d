"""`routectl plan` against the fake API server, and the probe/metrics HTTP server."""

from __future__ import annotations

import asyncio
import json
from ipaddress import ip_network

import aiohttp
import pytest

from routectl.cli.app import plan_once
from routectl.cli.dropin import with_cloud_config
from routectl.observe.metrics import Metrics
from routectl.observe.probes import ProbeServer
from tests.integration.conftest import Cluster, node_object, settings

pytestmark = [pytest.mark.integration, pytest.mark.looptime]


async def test_plan_prints_the_plan_as_json(cluster: Cluster, capsys) -> None:
    """plan reads Nodes over HTTP and routes from the provider and prints what it would do."""
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    cluster.server.create_node(node_object("n2", "10.244.2.0/24", "fd00:10:244:2::/64"))
    cluster.server.create_node(node_object("n3", "10.244.1.0/24"))
    code = await plan_once(settings(kubeconfig=str(cluster.kubeconfig)), output="json")
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert {(c["node"], c["cidr"]) for c in printed["creates"]} == {
        ("n1", "10.244.1.0/24"),
        ("n2", "10.244.2.0/24"),
        ("n2", "fd00:10:244:2::/64"),
    }
    assert printed["deletes"] == []
    assert [(p["node"], p["reason"]) for p in printed["problems"]] == [("n3", "PodCIDRConflict")]
    writes = [r for r in cluster.server.requests if r.method != "GET"]
    assert writes == [], "plan must change nothing"


async def test_plan_names_a_node_it_cannot_read_as_unknown(cluster: Cluster, capsys) -> None:
    """A Node served with ``spec: null`` is no crash: plan reports it as UnknownNode (its
    routes would be left alone) and plans the others."""
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    impossible = node_object("u") | {"spec": None}
    cluster.server.list_nodes_next_with(impossible)
    code = await plan_once(settings(kubeconfig=str(cluster.kubeconfig)), output="json")
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert {(c["node"], c["cidr"]) for c in printed["creates"]} == {("n1", "10.244.1.0/24")}
    assert [(p["node"], p["reason"]) for p in printed["problems"]] == [("u", "UnknownNode")]


async def test_plan_prints_a_table(cluster: Cluster, capsys) -> None:
    """The default output is a table naming each action."""
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    assert await plan_once(settings(kubeconfig=str(cluster.kubeconfig)), output="table") == 0
    out = capsys.readouterr().out
    assert "1 to create, 0 to delete" in out
    assert "10.244.1.0/24" in out


async def test_probes_and_metrics() -> None:
    """healthz is 200, readyz follows the check, metrics are served, only GET is allowed."""
    metrics = Metrics.create()
    metrics.syncs.labels(trigger="node_change", outcome="changed").inc()
    state = {"ready": (False, "informer has not listed Nodes yet")}
    server = ProbeServer(registry=metrics.registry, ready=lambda: state["ready"])
    await server.start("127.0.0.1:0")
    base = f"http://127.0.0.1:{server.port}"
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/healthz") as r:
                assert r.status == 200
            async with http.get(f"{base}/readyz") as r:
                assert r.status == 503
                assert "not listed" in await r.text()
            state["ready"] = (True, "ok")
            async with http.get(f"{base}/readyz") as r:
                assert r.status == 200
            async with http.get(f"{base}/metrics") as r:
                text = await r.text()
                assert (
                    'route_controller_route_sync_total{outcome="changed",trigger="node_change"} 1.0'
                    in text
                )
            async with http.post(f"{base}/metrics") as r:
                assert r.status == 405
    finally:
        await server.aclose()


async def test_disabled_route_configuration_is_ready_and_idle(cluster: Cluster) -> None:
    """With --configure-cloud-routes=false nothing is synced and the replica reports ready."""
    running = await cluster.start(configure_cloud_routes=False)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await asyncio.sleep(60)
    assert cluster.cloud.calls == []
    assert running.service.ready() == (
        True,
        "route configuration is off (--configure-cloud-routes=false)",
    )
    assert await running.stop() == 0


async def test_plan_shows_the_allocations_node_ipam_would_make(cluster: Cluster, capsys) -> None:
    """With --routectl-allocate-node-cidrs, plan shows each allocation, the routes that follow, the
    Nodes that would wait and the findings; it writes nothing."""
    cluster.server.create_node(node_object("old", "10.244.0.0/24"))
    cluster.server.create_node(node_object("sloppy", "10.244.1.7/24"))
    cluster.server.create_node(node_object("new"))
    ipam = settings(
        kubeconfig=str(cluster.kubeconfig),
        cluster_cidrs=(ip_network("10.244.0.0/22"),),
        routectl_allocate_node_cidrs=True,
    )
    assert await plan_once(ipam, output="json") == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["node_ipam"]["allocations"] == [{"node": "new", "pod_cidrs": ["10.244.2.0/24"]}]
    assert ("new", "10.244.2.0/24") in {(c["node"], c["cidr"]) for c in printed["creates"]}
    assert [(f["node"], f["reason"]) for f in printed["node_ipam"]["findings"]] == [
        ("sloppy", "PodCIDRNotCanonical")
    ]
    assert await plan_once(ipam, output="table") == 0
    table = capsys.readouterr().out
    assert "node IPAM: 1 to allocate, 0 waiting" in table
    assert any(
        line.split()[:3] == ["allocate", "new", "10.244.2.0/24"] for line in table.splitlines()
    )
    writes = [r for r in cluster.server.requests if r.method != "GET"]
    assert writes == [], "plan must change nothing"


async def test_plan_detailed_exitcode_says_whether_changes_are_pending(
    cluster: Cluster, capsys
) -> None:
    """--detailed-exitcode, as terraform plan's: 0 nothing to do, 2 changes pending."""
    config = settings(kubeconfig=str(cluster.kubeconfig))
    assert await plan_once(config, output="table", detailed_exitcode=True) == 0
    assert "mass-delete guard: nothing to delete" in capsys.readouterr().out
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    assert await plan_once(config, output="table", detailed_exitcode=True) == 2
    assert await plan_once(config, output="table") == 0  # without the option: 0 as before
    capsys.readouterr()
    assert await plan_once(config, output="json", detailed_exitcode=True) == 2
    printed = json.loads(capsys.readouterr().out)
    assert printed["guard"] == {"withholds_deletes": False, "message": ""}
    assert printed["tables"] == [
        {"table": "(the provider's listing)", "routes": 0, "owned": 0, "warning": ""}
    ]


async def test_plan_shows_the_cloud_configs_warnings(
    cluster: Cluster, tmp_path, monkeypatch, capsys
) -> None:
    """run logs a WARNING for an unknown cloud-config key at start-up; plan, which prints no
    log line, says it too (a mistyped RoutTableID must show in the preview)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    conf = tmp_path / "cloud.conf"
    conf.write_text("[Global]\nZone = us-east-1a\nRoutTableID = rtb-0123456789abcdef0\n")
    given = settings(
        kubeconfig=str(cluster.kubeconfig),
        provider="aws",
        provider_options={"endpoint-url": "http://127.0.0.1:1"},
        cloud_config=str(conf),
        cloud_max_attempts=1,
    )
    code = await plan_once(with_cloud_config(given), output="table")
    err = capsys.readouterr().err
    (warning,) = [line for line in err.splitlines() if line.startswith("routectl plan: warning:")]
    assert "RoutTableID" in warning, err
    assert "cloud.conf:3" in warning, err
    assert code == 1  # the cloud is unreachable here: the warning came first

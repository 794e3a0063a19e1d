"""routectl's service end to end: real HTTP to the fake API server, the simulated cloud,
loop time fast-forwarded. Assertions are on cloud state and Node conditions."""

from __future__ import annotations

import asyncio

import pytest

from routectl.errors import ProviderError
from routectl.model import Route
from routectl.testing import Fault
from tests.integration.conftest import Cluster, eventually, node_object

pytestmark = [pytest.mark.integration, pytest.mark.looptime]


async def test_node_added_gets_route_and_condition(cluster: Cluster) -> None:
    """A new Node gets its route and NetworkUnavailable False/RouteCreated."""
    await cluster.start()
    cluster.server.create_node(node_object("n1", "10.244.1.0/24", "fd00:10:244:1::/64"))
    await eventually(
        lambda: cluster.routes() == {("n1", "10.244.1.0/24"), ("n1", "fd00:10:244:1::/64")}
    )
    await eventually(lambda: cluster.condition("n1") == ("False", "RouteCreated"))
    node = cluster.server.get_node("n1")
    (condition,) = [c for c in node["status"]["conditions"] if c["type"] == "NetworkUnavailable"]
    assert condition["message"] == "RouteController created a route"
    assert node["status"]["conditions"][0]["type"] == "NetworkUnavailable"


async def test_node_deleted_loses_its_route(cluster: Cluster) -> None:
    """Deleting a Node deletes its route."""
    await cluster.start()
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    cluster.server.create_node(node_object("n2", "10.244.2.0/24"))
    await eventually(lambda: len(cluster.routes()) == 2)
    cluster.server.delete_node("n1")
    await eventually(lambda: cluster.routes() == {("n2", "10.244.2.0/24")})


async def test_pod_cidr_assigned_later_gets_route(cluster: Cluster) -> None:
    """A Node registered without a pod CIDR gets its route once IPAM assigns one."""
    await cluster.start()
    cluster.server.create_node(node_object("n1"))
    await asyncio.sleep(5)
    assert cluster.routes() == set()
    assert cluster.condition("n1") is None
    cluster.server.patch_node(
        "n1", {"spec": {"podCIDR": "10.244.7.0/24", "podCIDRs": ["10.244.7.0/24"]}}
    )
    await eventually(lambda: cluster.routes() == {("n1", "10.244.7.0/24")})


async def test_address_change_replaces_route_with_ena_provider(cluster: Cluster) -> None:
    """With a provider reporting node addresses, an address change replaces the route."""
    cluster.cloud.settings = type(cluster.cloud.settings)(enable_node_addresses=True)
    await cluster.start()
    cluster.server.create_node(node_object("n1", "10.244.1.0/24", address="10.0.0.1"))
    await eventually(lambda: cluster.routes() == {("n1", "10.244.1.0/24")})
    creates = cluster.cloud.count("create")
    cluster.server.patch_node_status(
        "n1",
        {
            "status": {
                "addresses": [
                    {"type": "InternalIP", "address": "10.0.0.99"},
                    {"type": "Hostname", "address": "n1"},
                ]
            }
        },
    )
    await eventually(
        lambda: any(
            a.address == "10.0.0.99"
            for r in cluster.cloud.routes("kubernetes")
            for a in r.target_node_addresses
        )
    )
    assert cluster.cloud.count("delete", "ok") == 1
    assert cluster.cloud.count("create") == creates + 1


async def test_heartbeats_cost_no_cloud_call(cluster: Cluster) -> None:
    """Kubelet status updates that change only conditions and labels make no cloud call."""
    await cluster.start()
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await eventually(lambda: cluster.condition("n1") == ("False", "RouteCreated"))
    await asyncio.sleep(10)
    calls = len(cluster.cloud.calls)
    for minute in range(10):
        stamp = f"2026-11-29T01:{minute:02d}:00Z"
        cluster.server.patch_node_status(
            "n1",
            {
                "status": {
                    "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": stamp}]
                }
            },
        )
        cluster.server.patch_node("n1", {"metadata": {"labels": {"beat": str(minute)}}})
        await asyncio.sleep(30)
    assert len(cluster.cloud.calls) == calls


async def test_cloud_failure_reports_then_heals(cluster: Cluster) -> None:
    """A failing create gives an Event and NoRouteCreated, then the retry heals the Node."""
    cluster.cloud.fail_next("create", Fault(error=ProviderError("503 from the cloud")), times=2)
    await cluster.start()
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await eventually(lambda: cluster.condition("n1") == ("True", "NoRouteCreated"))
    (event,) = [e for e in cluster.server.events() if e["reason"] == "FailedToCreateRoute"]
    assert event["type"] == "Warning"
    assert event["involvedObject"]["kind"] == "Node"
    assert event["involvedObject"]["apiVersion"] == "v1"
    assert event["involvedObject"]["name"] == "n1"
    assert event["message"].startswith(
        f"Could not create route {cluster.server.get_node('n1')['metadata']['uid']} 10.244.1.0/24 for node n1 after "
    )
    assert event["message"].endswith(": 503 from the cloud")
    await eventually(lambda: cluster.condition("n1") == ("False", "RouteCreated"))
    assert cluster.routes() == {("n1", "10.244.1.0/24")}


async def test_existing_routes_are_adopted_not_recreated(cluster: Cluster) -> None:
    """Routes already in the cloud for existing Nodes are kept: nothing deleted or re-created."""
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    cluster.cloud.add_route(
        "kubernetes", Route(target_node="n1", destination_cidr="10.244.1.0/24", name="ccm-made")
    )
    cluster.cloud.add_route(
        "kubernetes", Route(target_node="other", destination_cidr="192.168.0.0/24", name="foreign")
    )
    await cluster.start()
    await eventually(lambda: cluster.condition("n1") == ("False", "RouteCreated"))
    assert cluster.cloud.count("create") == 0
    assert cluster.cloud.count("delete") == 0
    assert len(cluster.cloud.routes("kubernetes")) == 2


async def test_graceful_shutdown_exits_zero(cluster: Cluster) -> None:
    """SIGTERM's path stops the service with exit code 0."""
    running = await cluster.start()
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await eventually(lambda: bool(cluster.routes()))
    assert await running.stop() == 0


async def test_outcomes_at_the_default_level_and_sync_detail_at_v4(
    cluster: Cluster, caplog
) -> None:
    """INFO: one line per route created or deleted, with its Node, CIDR and duration.
    DEBUG (-v 4): what each sync saw and planned, and what it applied."""
    import logging  # noqa: PLC0415 -- only this test sets levels

    with caplog.at_level(logging.DEBUG, logger="routectl"):
        cluster.server.create_node(node_object("keep", "10.244.2.0/24"))
        await cluster.start()
        await eventually(lambda: cluster.routes() == {("keep", "10.244.2.0/24")})
        cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
        await eventually(lambda: ("n1", "10.244.1.0/24") in cluster.routes())
        cluster.server.delete_node("n1")
        await eventually(lambda: cluster.routes() == {("keep", "10.244.2.0/24")})
        await asyncio.sleep(1)
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any(m.startswith("Created route for node n1 10.244.1.0/24 with hint ") and " after " in m for m in infos)  # fmt: skip
    assert any(m.startswith("Deleted route ") and "10.244.1.0/24 after " in m for m in infos)
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any(m.startswith("Sync plan: ") and "1 to create, 0 to delete" in m for m in debug)
    assert "Sync applied: 1 created, 0 deleted, 0 failed" in debug
    assert "Sync applied: 0 created, 1 deleted, 0 failed" in debug


async def test_the_first_listroutes_goes_out_beside_the_first_node_list(cluster: Cluster) -> None:
    """While the first Node list is still on its way, the routes are listed already; the
    first sync plans on that listing (one ListRoutes in all) and routes the Node."""
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    cluster.server.hang = True
    await cluster.start()
    await eventually(lambda: cluster.cloud.count("list") == 1)
    assert not cluster.running[0].service.informer.synced.is_set()
    cluster.server.hang = False
    await eventually(lambda: cluster.routes() == {("n1", "10.244.1.0/24")})
    assert cluster.cloud.count("list") == 1


async def test_a_burst_of_nodes_is_ready_one_write_after_each_arrives(cluster: Cluster) -> None:
    """Five Nodes a few milliseconds apart: the first starts a sync, the other four arrive
    while its create is in flight and are written beside it, not after it; every Node is
    ready about one cloud write (1 s) after it arrived, and one sync did it all."""
    running = await cluster.start()
    cluster.server.create_node(node_object("n0", "10.244.0.0/24"))
    await eventually(lambda: cluster.condition("n0") == ("False", "RouteCreated"))
    await asyncio.sleep(30)  # the budget's burst is back
    loop = asyncio.get_running_loop()
    arrived: dict[str, float] = {}
    ready: dict[str, float] = {}
    syncs = running.service.controller.syncs
    for i in range(1, 6):
        cluster.server.create_node(node_object(f"n{i}", f"10.244.{i}.0/24"))
        arrived[f"n{i}"] = loop.time()
        await asyncio.sleep(0.005)
    while len(ready) < 5:
        for name in arrived:
            if name not in ready and cluster.condition(name) == ("False", "RouteCreated"):
                ready[name] = loop.time()
        await asyncio.sleep(0.01)
    waits = {name: ready[name] - arrived[name] for name in arrived}
    assert all(wait <= 1.15 for wait in waits.values()), waits
    assert running.service.controller.side_plans >= 1
    assert running.service.controller.syncs - syncs <= 2  # the burst's sync, and a no-op
    assert len(cluster.routes()) == 6
    assert cluster.cloud.count("create") == 6  # one call per route: nothing written twice

"""The service under Kubernetes-side faults, modes, and leader election (real HTTP, loop time)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from routectl.config.ccm import WATCH_GATE
from routectl.errors import ProviderError
from routectl.testing import FakeCloud
from routectl.testing.cloud import Fault
from routectl_sim.apiserver import FakeApiServer
from tests.integration.conftest import Cluster, eventually, node_object

pytestmark = [pytest.mark.integration, pytest.mark.looptime]


async def test_dropped_watch_is_resumed(cluster: Cluster) -> None:
    """After the watch connection is cut, changes made meanwhile still arrive."""
    running = await cluster.start()
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await eventually(lambda: len(cluster.routes()) == 1)
    cluster.server.drop_watches()
    cluster.server.create_node(node_object("n2", "10.244.2.0/24"))
    await eventually(lambda: len(cluster.routes()) == 2)
    assert running.service.informer.synced.is_set()


async def test_expired_watch_relists_and_sees_deletes(cluster: Cluster) -> None:
    """A 410 mid-stream relists; a Node deleted meanwhile loses its route."""
    running = await cluster.start()
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    cluster.server.create_node(node_object("n2", "10.244.2.0/24"))
    await eventually(lambda: len(cluster.routes()) == 2)
    cluster.server.hang = True
    cluster.server.end_watches()
    await asyncio.sleep(1)
    cluster.server.delete_node("n1")
    cluster.server.expire_history()
    cluster.server.hang = False
    await eventually(lambda: cluster.routes() == {("n2", "10.244.2.0/24")})
    assert running.service.metrics.relists.labels(reason="expired")._value.get() >= 1


async def test_http_410_on_watch_also_relists(cluster: Cluster) -> None:
    """An HTTP 410 answer to the watch request is handled like the ERROR event."""
    cluster.server.watch_410_as_http_status = True
    await cluster.start()
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await eventually(lambda: len(cluster.routes()) == 1)
    cluster.server.end_watches()
    cluster.server.expire_history()
    cluster.server.create_node(node_object("n2", "10.244.2.0/24"))
    await eventually(lambda: len(cluster.routes()) == 2)


async def test_api_server_outage_is_survived(cluster: Cluster) -> None:
    """While the API server answers 503 nothing breaks; afterwards changes are picked up."""
    running = await cluster.start()
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await eventually(lambda: len(cluster.routes()) == 1)
    cluster.server.unavailable = True
    cluster.server.end_watches()
    await asyncio.sleep(120)
    assert not running.task.done()
    assert not running.service.ready()[0]
    cluster.server.unavailable = False
    cluster.server.create_node(node_object("n2", "10.244.2.0/24"))
    await eventually(lambda: len(cluster.routes()) == 2)
    await eventually(lambda: running.service.ready()[0])


async def test_nothing_is_planned_before_the_first_list(cluster: Cluster) -> None:
    """With the API server down from the start, no cloud call is made but the one early
    ListRoutes (that listing, too old by the time Nodes are listed, is not planned on)."""
    cluster.server.unavailable = True
    running = await cluster.start()
    await asyncio.sleep(60)
    assert [call.operation for call in cluster.cloud.calls] == ["list"]
    assert running.service.ready() == (False, "informer has not listed Nodes yet")
    cluster.server.unavailable = False
    await eventually(lambda: running.service.ready()[0])


async def test_periodic_mode_lists_every_period(cluster: Cluster) -> None:
    """With the watch gate off, routes are listed every period and nodes events add nothing."""
    await cluster.start(feature_gates={WATCH_GATE: False}, route_reconciliation_period=10.0)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await eventually(lambda: len(cluster.routes()) == 1)
    await asyncio.sleep(0.5)
    start = cluster.cloud.count("list")
    await asyncio.sleep(100)
    assert cluster.cloud.count("list") - start in (10, 11)


async def test_watch_mode_idle_cluster_lists_rarely(cluster: Cluster) -> None:
    """In watch mode an idle cluster costs one listing per resync period, not one per 10 s."""
    await cluster.start(route_resync_period=3600.0)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await eventually(lambda: len(cluster.routes()) == 1)
    start = cluster.cloud.count("list")
    await asyncio.sleep(3 * 3600)
    assert 2 <= cluster.cloud.count("list") - start <= 3


@pytest.mark.slow
async def test_drift_is_repaired_at_resync(cluster: Cluster) -> None:
    """A route removed in the cloud behind routectl's back comes back at the next resync."""
    await cluster.start(route_resync_period=600.0)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await eventually(lambda: len(cluster.routes()) == 1)
    cluster.cloud.remove_route("kubernetes", "10.244.1.0/24")
    await eventually(lambda: len(cluster.routes()) == 1, within=800)


async def test_only_the_leader_writes_and_failover_works(cluster: Cluster) -> None:
    """Two replicas: one leads and writes; when it dies the other takes over."""
    a = await cluster.start(identity="a", leader_elect=True)
    await asyncio.sleep(1)
    b = await cluster.start(identity="b", leader_elect=True)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await eventually(lambda: len(cluster.routes()) == 1)
    assert a.service.leading
    assert not b.service.leading
    assert b.service.informer.synced.is_set()
    lease = cluster.server.get_lease("kube-system", "routectl")
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "a"
    a.task.cancel()
    await asyncio.gather(a.task, return_exceptions=True)
    cluster.server.create_node(node_object("n2", "10.244.2.0/24"))
    await eventually(lambda: b.service.leading, within=30)
    await eventually(lambda: len(cluster.routes()) == 2)
    lease = cluster.server.get_lease("kube-system", "routectl")
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1


async def test_graceful_shutdown_releases_the_lease(cluster: Cluster) -> None:
    """A stopped leader releases its lease so the standby takes over at once."""
    a = await cluster.start(identity="a", leader_elect=True)
    await eventually(lambda: a.service.leading)
    b = await cluster.start(identity="b", leader_elect=True)
    assert await a.stop() == 0
    lease = cluster.server.get_lease("kube-system", "routectl")
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == ""
    loop = asyncio.get_running_loop()
    released = loop.time()
    await eventually(lambda: b.service.leading)
    assert loop.time() - released < 5


async def test_losing_the_lease_stops_writes_and_exits_nonzero(cluster: Cluster) -> None:
    """A leader that cannot renew stops working and exits 1 before anyone else may lead."""
    a = await cluster.start(identity="a", leader_elect=True)
    await eventually(lambda: a.service.leading)
    cluster.server.forbid(verb="update", resource="leases")
    cluster.server.forbid(verb="get", resource="leases")
    loop = asyncio.get_running_loop()
    since = loop.time()
    assert await asyncio.wait_for(a.task, 30) == 1
    assert loop.time() - since <= 15
    assert not a.service.leading


async def test_rbac_denied_is_not_ready_and_backs_off(tmp_path) -> None:
    """A 403 on listing Nodes keeps readiness false and retries with backoff, not in a loop."""
    async with FakeApiServer() as server:
        server.kubeconfig(tmp_path / "kubeconfig")
        server.forbid(verb="list", resource="nodes")
        c = Cluster(server=server, cloud=FakeCloud(), kubeconfig=tmp_path / "kubeconfig")
        running = await c.start()
        await asyncio.sleep(120)
        assert not running.service.ready()[0]
        lists = [r for r in server.requests if r.path == "/api/v1/nodes" and r.method == "GET"]
        assert 3 <= len(lists) <= 12
        assert "403" in running.service.informer.last_error
        running.task.cancel()
        await asyncio.gather(running.task, return_exceptions=True)
        await running.kube.aclose()


async def test_a_node_is_not_called_routed_while_the_cloud_keeps_dropping_its_route(
    cluster: Cluster,
) -> None:
    """The cloud acknowledges the first three creates of the route and keeps none. The first
    acknowledgement makes the Node routed (nothing says otherwise yet); the listing after it
    shows the route missing: counted, written again, and from then on the Node is
    NoRouteCreated until a listing shows the route, however often the cloud says "done".
    The listings that check wait twice as long each time the route is missing again."""
    cluster.cloud.fail_next("create", Fault(dropped=True), times=3)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    running = await cluster.start()
    await eventually(lambda: cluster.condition("n1") == ("False", "RouteCreated"))
    await eventually(lambda: cluster.condition("n1") == ("True", "NoRouteCreated"), within=30)
    unconfirmed = running.service.metrics.unconfirmed_writes.labels(operation="create")
    await eventually(lambda: cluster.routes() == {("n1", "10.244.1.0/24")}, within=120)
    await eventually(lambda: cluster.condition("n1") == ("False", "RouteCreated"), within=30)
    assert unconfirmed._value.get() == 3
    creates = [c.time for c in cluster.cloud.calls if c.operation == "create"]
    assert len(creates) == 4
    gaps = [later - earlier for earlier, later in itertools.pairwise(creates)]
    # Each gap is the verifying listing's delay plus the listing and the write (1.2 s): 5 s,
    # then 10 s cut to --retry-backoff-cap (8 s in these tests).
    assert [round(g - 1.2, 1) for g in gaps] == [5.0, 8.0, 8.0], gaps


async def test_a_sync_that_failed_in_part_still_checks_the_writes_it_made(
    cluster: Cluster,
) -> None:
    """One create fails, the other is acknowledged and dropped: the sync fails, and the
    dropped write is still found missing by the listing after it, counted and made again."""
    cluster.cloud.fail_next("create", Fault(dropped=True))
    cluster.cloud.fail_next("create", Fault(error=ProviderError("injected")), times=2)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    cluster.server.create_node(node_object("n2", "10.244.2.0/24"))
    running = await cluster.start()
    await eventually(lambda: len(cluster.routes()) == 2, within=120)
    unconfirmed = running.service.metrics.unconfirmed_writes.labels(operation="create")
    assert unconfirmed._value.get() == 1
    await eventually(lambda: cluster.condition("n1") == ("False", "RouteCreated"), within=30)
    await eventually(lambda: cluster.condition("n2") == ("False", "RouteCreated"), within=30)

"""Safety guards and metrics of the running service (real HTTP, loop time)."""

from __future__ import annotations

import asyncio

import pytest

from routectl.model import Route
from routectl.testing import CloudSettings, FakeCloud
from tests.integration.conftest import Cluster, eventually, node_object

pytestmark = [pytest.mark.integration, pytest.mark.looptime]


def stale_routes(cluster: Cluster, n: int) -> None:
    for i in range(n):
        cluster.cloud.add_route(
            "kubernetes",
            Route(
                target_node=f"gone-{i}",
                destination_cidr=f"10.244.{100 + i}.0/24",
                name=f"stale-{i}",
            ),
        )


async def test_mass_delete_is_refused_and_creates_go_on(cluster: Cluster) -> None:
    """Deleting most owned routes at once is refused with an Event and a metric; creates go on."""
    stale_routes(cluster, 8)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    running = await cluster.start()
    await eventually(lambda: ("n1", "10.244.1.0/24") in cluster.routes())
    await asyncio.sleep(30)
    assert cluster.cloud.count("delete") == 0
    assert len(cluster.routes()) == 9
    assert running.service.metrics.mass_delete_blocked._value.get() >= 1
    (refused,) = [e for e in cluster.server.events() if e["reason"] == "MassDeleteRefused"]
    assert refused["involvedObject"]["kind"] == "Lease"
    assert "Refusing to delete 8 of 8 routes" in refused["message"]


async def test_allow_mass_delete_lifts_the_guard(cluster: Cluster) -> None:
    """With --allow-mass-delete the stale routes are deleted."""
    stale_routes(cluster, 8)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await cluster.start(allow_mass_delete=True)
    await eventually(lambda: cluster.routes() == {("n1", "10.244.1.0/24")})


async def test_a_few_stale_routes_are_always_cleaned(cluster: Cluster) -> None:
    """A handful of stale routes is below the guard's floor and is deleted."""
    stale_routes(cluster, 3)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await cluster.start()
    await eventually(lambda: cluster.routes() == {("n1", "10.244.1.0/24")})


async def test_withheld_deletes_are_looked_at_again_on_a_fresh_listing(
    cluster: Cluster,
) -> None:
    """The guard trips on a listing that passes (eight ghost routes that someone else then
    removes); a Node's legitimately stale route withheld with them is deleted at the
    backoff cap, on a fresh listing, with no Node change and long before the resync."""
    for i in range(4):
        cluster.server.create_node(node_object(f"n{i}", f"10.244.{i}.0/24"))
    running = await cluster.start()
    await eventually(lambda: len(cluster.routes()) == 4)
    stale_routes(cluster, 8)
    cluster.server.delete_node("n3")
    await eventually(lambda: running.service.metrics.mass_delete_blocked._value.get() >= 1)
    assert ("n3", "10.244.3.0/24") in cluster.routes()
    for i in range(8):
        cluster.cloud.remove_route("kubernetes", f"10.244.{100 + i}.0/24")
    lists = cluster.cloud.count("list")
    await eventually(lambda: ("n3", "10.244.3.0/24") not in cluster.routes(), within=300)
    assert cluster.routes() == {(f"n{i}", f"10.244.{i}.0/24") for i in range(3)}
    assert cluster.cloud.count("list") == lists + 1


async def test_sync_metric_labels_follow_upstream(cluster: Cluster) -> None:
    """route_sync_total counts node_change/changed for a new node and periodic/noop at resync."""
    running = await cluster.start(route_resync_period=600.0)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await eventually(lambda: len(cluster.routes()) == 1)
    syncs = running.service.metrics.syncs
    await eventually(
        lambda: syncs.labels(trigger="node_change", outcome="changed")._value.get() >= 1
    )
    await asyncio.sleep(800)
    assert syncs.labels(trigger="periodic", outcome="noop")._value.get() >= 1
    latency = running.service.metrics.route_latency
    assert latency._sum.get() > 0


async def test_throttled_cloud_slows_down_instead_of_storming(cluster: Cluster) -> None:
    """Against a cloud with a 1 req/s budget, a client bucket of 1 req/s never gets throttled."""
    cluster.cloud = FakeCloud(CloudSettings(qps=1.0, burst=5, write_latency=1.0))
    await cluster.start(cloud_qps=1.0, cloud_burst=5)
    for i in range(30):
        cluster.server.create_node(node_object(f"n{i}", f"10.244.{i}.0/24"))
    await eventually(lambda: len(cluster.routes()) == 30, within=120)
    assert cluster.cloud.count(outcome="throttled") == 0


async def test_whole_table_cloud_gets_few_large_writes(cluster: Cluster) -> None:
    """Against a whole-table cloud, a burst of 40 new Nodes costs a handful of batch writes."""
    cluster.cloud = FakeCloud(CloudSettings(whole_table=True, write_latency=1.0))
    await cluster.start()
    for i in range(40):
        cluster.server.create_node(node_object(f"n{i}", f"10.244.{i}.0/24"))
        await asyncio.sleep(0.5)
    await eventually(lambda: len(cluster.routes()) == 40)
    assert cluster.cloud.batches <= 4
    assert cluster.cloud.count("create") == cluster.cloud.batches
    await eventually(
        lambda: all(cluster.condition(f"n{i}") == ("False", "RouteCreated") for i in range(40))
    )


async def join_later(cluster: Cluster, indexes: range, *, every: float) -> None:
    """Nodes ``indexes`` join ``every`` seconds apart."""
    for i in indexes:
        await asyncio.sleep(every)
        cluster.server.create_node(node_object(f"n{i}", f"10.244.{i}.0/24"))


async def test_a_burst_on_an_idle_whole_table_cloud_is_one_write(cluster: Cluster) -> None:
    """Nodes that join together on an idle service settle into one table write: the first
    of them does not get a write of its own, and the write comes once the events pause for
    a tenth of the batch write interval (1 s; longer than the 0.5 s batch window)."""
    cluster.cloud = FakeCloud(CloudSettings(whole_table=True, write_latency=1.0))
    running = await cluster.start()
    await eventually(lambda: running.service.controller.syncs >= 1)
    await asyncio.sleep(60)  # idle: the last sync is long past the batch write interval
    loop = asyncio.get_running_loop()
    for i in range(12):  # 0.7 s apart, as kubelets of a scale-up register
        cluster.server.create_node(node_object(f"n{i}", f"10.244.{i}.0/24"))
        await asyncio.sleep(0.7)
    last_join = loop.time() - 0.7
    await eventually(lambda: len(cluster.routes()) == 12)
    assert cluster.cloud.batches == 1
    # settled 1 s after the last join, then one 1 s write: sooner than the batch write
    # interval (10 s) after the first join
    assert loop.time() - last_join < 3.0


async def test_a_burst_on_a_per_route_cloud_is_written_at_once(cluster: Cluster) -> None:
    """Per-route clouds keep the leading edge: the first Node of a burst is written at once,
    not after the burst."""
    running = await cluster.start()
    await eventually(lambda: running.service.controller.syncs >= 1)
    await asyncio.sleep(60)
    loop = asyncio.get_running_loop()
    first_join = loop.time()
    cluster.server.create_node(node_object("n0", "10.244.0.0/24"))
    burst = asyncio.create_task(join_later(cluster, range(1, 20), every=0.1))
    await eventually(lambda: ("n0", "10.244.0.0/24") in cluster.routes(), step=0.01)
    assert loop.time() - first_join < 1.5  # one write (1 s), no settling in front of it
    await burst
    await eventually(lambda: len(cluster.routes()) == 20)


async def test_batch_writes_can_be_turned_off(cluster: Cluster) -> None:
    """--batch-writes=false writes route by route even to a whole-table cloud."""
    cluster.cloud = FakeCloud(CloudSettings(whole_table=True))
    await cluster.start(batch_writes=False)
    for i in range(5):
        cluster.server.create_node(node_object(f"n{i}", f"10.244.{i}.0/24"))
    await eventually(lambda: len(cluster.routes()) == 5)
    assert cluster.cloud.batches == 0
    assert cluster.cloud.count("create") == 5

"""The controller's orchestration, built by the service's own build_sync, with the fake
provider and a recording Kubernetes API."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import random
from ipaddress import ip_network
from typing import Any

import pytest

from routectl.cloud.fence import Fence
from routectl.cloud.policy import CallPolicy
from routectl.config import Settings
from routectl.errors import ProviderTerminalError, SyncFailedError
from routectl.kube.informer import NodeStore
from routectl.model import Condition, NodeView, Route
from routectl.observe.metrics import Metrics
from routectl.process.wiring import Sources, build_sync
from routectl.provider import RouteProvider
from routectl.sync.changes import Changes
from routectl.sync.controller import Controller
from routectl.sync.queue import Batch
from routectl.testing import CloudSettings, FakeCloud, FakeProvider, Fault
from tests.fakes import RecordingKube, gated

pytestmark = pytest.mark.looptime


def node(name: str, *cidrs: str) -> NodeView:
    return NodeView(name=name, uid=f"uid-{name}", pod_cidrs=cidrs, addresses=())


@dataclasses.dataclass
class Rig:
    """A controller over a fake cloud, a recording API writer, and a Node store it feeds."""

    cloud: FakeCloud
    kube: RecordingKube
    store: NodeStore
    changes: Changes
    metrics: Metrics
    controller: Controller

    def put(self, *nodes: NodeView) -> None:
        for n in nodes:
            self.changes.note(self.store.upsert(n), n, now=asyncio.get_running_loop().time())

    def remove(self, name: str) -> None:
        self.changes.note(self.store.remove(name), None, now=0)

    def routes(self) -> set[tuple[str, str]]:
        return {(r.target_node, r.destination_cidr) for r in self.cloud.routes("c")}


def rig(
    cloud: FakeCloud | None = None, provider: RouteProvider | None = None, **overrides: Any
) -> Rig:
    cloud = cloud or FakeCloud()
    settings = Settings(cluster_cidrs=(ip_network("10.244.0.0/16"),), provider="fake", **overrides)
    kube, store, metrics = RecordingKube(), NodeStore(), Metrics.create()
    parts = build_sync(
        settings,
        kube=kube,
        provider=provider or FakeProvider.over(cloud, "c"),
        store=store,
        metrics=metrics,
        sources=Sources(
            rng=random.Random(0),
            wall_clock=lambda: datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
        ),
        fence=Fence(open_=True),
        timeout=30.0,
    )
    changes, controller = parts.changes, parts.controller
    return Rig(cloud, kube, store, changes, metrics, controller)


def samples(r: Rig) -> float:
    """How many route-latency samples the controller observed."""
    return sum(
        s.value
        for m in r.metrics.route_latency.collect()
        for s in m.samples
        if s.name.endswith("_count")
    )


def batch(*, fresh: bool = False) -> Batch:
    return Batch(
        triggers=frozenset({"node_change"}), requests=1, requested_at=0, fresh_listing=fresh
    )


async def test_first_sync_is_full_later_ones_plan_only_the_change() -> None:
    """The first sync lists and plans everything; a change then costs no listing."""
    r = rig()
    r.put(node("a", "10.244.1.0/24"), node("b", "10.244.2.0/24"))
    await r.controller.sync(batch(fresh=True))
    assert r.routes() == {("a", "10.244.1.0/24"), ("b", "10.244.2.0/24")}
    assert r.kube.conditions() == {"a": ("False", "RouteCreated"), "b": ("False", "RouteCreated")}
    r.put(node("c", "10.244.3.0/24"))
    await r.controller.sync(batch())
    assert ("c", "10.244.3.0/24") in r.routes()
    assert r.cloud.count("list") == 1
    last = r.controller.last
    assert last is not None
    assert not last.full
    assert [n.name for n in last.nodes] == ["c"]


async def test_a_failed_sync_raises_a_group_and_gives_its_changes_back() -> None:
    """Failed creates surface as a SyncFailedError; the next sync retries that Node."""
    r = rig()
    r.put(node("a", "10.244.1.0/24"))
    r.cloud.fail_next("create", Fault(error=ProviderTerminalError("quota")))
    with pytest.raises(SyncFailedError) as failed:
        await r.controller.sync(batch(fresh=True))
    assert [type(e) for e in failed.value.exceptions] == [ProviderTerminalError]
    assert "1 cloud call(s) and 0 Node write(s) failed" in str(failed.value)
    assert r.kube.conditions() == {"a": ("True", "NoRouteCreated")}
    assert r.kube.reasons() == ["FailedToCreateRoute"]
    await r.controller.sync(batch())
    assert r.routes() == {("a", "10.244.1.0/24")}
    assert r.kube.conditions() == {"a": ("False", "RouteCreated")}


async def test_the_guard_withholds_mass_deletes_and_says_so_once() -> None:
    """A sync deleting most owned routes deletes none: one Event, a metric per sync."""
    cloud = FakeCloud()
    for i in range(10):
        cloud.add_route("c", Route(target_node=f"n{i}", destination_cidr=f"10.244.{i}.0/24"))
    r = rig(cloud)
    for _ in range(2):
        await r.controller.sync(batch(fresh=True))
    assert len(r.routes()) == 10
    assert r.kube.reasons() == ["MassDeleteRefused"]
    assert r.metrics.mass_delete_blocked._value.get() == 2


async def test_deleting_a_route_we_made_lists_afresh_first() -> None:
    """A route known only from our own create is deleted by the cloud's listed name."""
    r = rig()
    r.put(node("a", "10.244.1.0/24"), node("b", "10.244.2.0/24"))
    await r.controller.sync(batch(fresh=True))
    r.remove("a")
    await r.controller.sync(batch())
    assert r.routes() == {("b", "10.244.2.0/24")}
    assert r.cloud.count("list") == 2
    assert r.cloud.count("delete", "ok") == 1


async def test_each_node_is_ready_when_its_own_route_is_made_not_at_the_end() -> None:
    """A Node with nothing to create is marked at once; the others one by one, as their
    own creates finish under a 1 req/s budget, each written once."""
    cloud = FakeCloud(CloudSettings(write_latency=1.0))
    paced = gated(FakeProvider.over(cloud, "c"), CallPolicy(qps=1.0, burst=1))
    r = rig(cloud, paced)
    cloud.add_route("c", Route(target_node="old", destination_cidr="10.244.9.0/24"))
    r.put(node("old", "10.244.9.0/24"), *(node(f"n{i}", f"10.244.{i}.0/24") for i in range(1, 6)))
    await r.controller.sync(batch(fresh=True))
    written = r.kube.patched_at
    first_create = min(c.time for c in cloud.calls if c.operation == "create")
    assert written["old"] <= first_create  # nothing to create: marked before any write
    times = sorted(written[f"n{i}"] for i in range(1, 6))
    assert times[-1] - times[0] >= 3.0  # spread out, as each Node's own create finished
    assert len(r.kube.patches) == 6  # one write per Node, as before


def periodic() -> Batch:
    return Batch(triggers=frozenset({"periodic"}), requests=1, requested_at=0, fresh_listing=True)


async def test_a_cluster_at_rest_is_listed_every_period_but_not_planned_again() -> None:
    """Upstream's periodic mode at rest: each period lists the routes; when they and the
    Nodes are as a sync that found nothing to do left them, nothing is planned."""
    cloud = FakeCloud()
    routed = Condition(
        status="False", reason="RouteCreated", message="RouteController created a route"
    )
    nodes = [
        dataclasses.replace(node(f"n{i}", f"10.244.{i}.0/24"), network_unavailable=routed)
        for i in range(1, 4)
    ]
    for n in nodes:
        cloud.add_route("c", Route(target_node=n.name, destination_cidr=n.pod_cidrs[0]))
    r = rig(cloud, feature_gates={"CloudControllerManagerWatchBasedRoutesReconciliation": False})
    r.put(*nodes)
    await r.controller.sync(periodic())  # plans every Node: nothing to do
    full = r.metrics.plan_duration.labels(scope="full")
    planned = full._sum.get(), r.controller.syncs
    for _ in range(3):
        await r.controller.sync(periodic())
    assert r.controller.skipped == 3, "listed, compared, not planned"
    assert r.cloud.count("list") == 4, "every period lists, as upstream does"
    assert full._sum.get() == planned[0], "no plan observed"
    assert r.kube.patches == [], "nothing written"
    r.cloud.remove_route("c", "10.244.1.0/24")  # drift behind routectl's back
    await r.controller.sync(periodic())
    assert ("n1", "10.244.1.0/24") in r.routes(), "a changed listing is planned: repaired"
    r.put(node("n9", "10.244.9.0/24"))  # a Node change
    await r.controller.sync(periodic())
    assert ("n9", "10.244.9.0/24") in r.routes(), "a Node change is planned"
    assert r.controller.skipped == 3


async def test_a_sync_that_did_something_is_never_taken_as_rest() -> None:
    """A failed write, a withheld delete or a problem keeps every next sync planning."""
    cloud = FakeCloud()
    for i in range(10):  # routes of Nodes that are gone: the guard withholds their deletes
        cloud.add_route("c", Route(target_node=f"gone{i}", destination_cidr=f"10.244.{i}.0/24"))
    r = rig(cloud, feature_gates={"CloudControllerManagerWatchBasedRoutesReconciliation": False})
    for _ in range(3):
        await r.controller.sync(periodic())
    assert r.controller.skipped == 0
    assert r.metrics.mass_delete_blocked._value.get() == 3


async def test_route_latency_samples_only_the_nodes_routectl_routed() -> None:
    """At start every listed Node waits; those whose routes are listed already are no
    latency sample, a Node that gets its route by this sync's create is one, and so is a
    Node whose failed create a later listing shows done."""
    cloud = FakeCloud()
    for i in range(3):
        cloud.add_route("c", Route(target_node=f"n{i}", destination_cidr=f"10.244.{i}.0/24"))
    r = rig(cloud)
    r.put(*(node(f"n{i}", f"10.244.{i}.0/24") for i in range(5)))
    r.cloud.fail_next("create", Fault(error=ProviderTerminalError("quota")))
    with pytest.raises(SyncFailedError):
        await r.controller.sync(batch(fresh=True))
    assert samples(r) == 1  # one of n3 and n4; the other's create failed
    failed = next(n for n in ("n3", "n4") if n in r.controller.changes.waiting())
    cloud.add_route("c", Route(target_node=failed, destination_cidr=f"10.244.{failed[1]}.0/24"))
    await asyncio.sleep(5)
    await r.controller.sync(batch(fresh=True))
    assert samples(r) == 2
    assert r.controller.changes.waiting() == []

"""Node changes that arrive while a sync writes are written beside it, and never race it:
whatever the churn, no two cloud calls for one destination are ever in flight together,
and the cloud ends matching the cluster with every Node's condition right."""

from __future__ import annotations

import asyncio
import collections
import random
from collections.abc import Awaitable, Collection

import pytest

from routectl.cidr import canonical
from routectl.kube import KubeClient
from routectl.model import Route
from routectl.observe.metrics import Metrics
from routectl.process.wiring import Sources, build_service
from routectl.testing import FakeProvider
from tests.integration.conftest import CLUSTER, Cluster, eventually, node_object, settings

pytestmark = [pytest.mark.integration, pytest.mark.looptime]


class RaceWatch(FakeProvider):
    """The fake cloud's provider, noting the calls in flight for each destination."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(cluster_name=CLUSTER, options={}, cloud=cluster.cloud)
        self.in_flight: collections.Counter[str] = collections.Counter()
        self.races: list[str] = []

    async def _watched(self, destination: str, call: Awaitable[None]) -> None:
        key = canonical(destination)
        self.in_flight[key] += 1
        if self.in_flight[key] > 1:
            self.races.append(key)
        try:
            await call
        finally:
            self.in_flight[key] -= 1

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        await self._watched(
            route.destination_cidr, super().create_route(route, name_hint=name_hint)
        )

    async def delete_route(self, route: Route) -> None:
        await self._watched(route.destination_cidr, super().delete_route(route))

    async def list_routes(self) -> Collection[Route]:
        return await super().list_routes()


async def churn(cluster: Cluster, rng: random.Random, *, steps: int) -> None:
    """Nodes join, leave, and are replaced by a Node taking the same pod CIDR (its route
    must be deleted and created again), a few milliseconds to a second apart."""
    alive: dict[str, int] = {}
    serial = 0
    for _ in range(steps):
        action = rng.random()
        if action < 0.5 or not alive:
            serial += 1
            slot = rng.randrange(12)
            if slot not in alive.values():
                name = f"n{serial}"
                alive[name] = slot
                cluster.server.create_node(node_object(name, f"10.244.{slot}.0/24"))
        elif action < 0.75:
            name = rng.choice(sorted(alive))
            cluster.server.delete_node(name)
            del alive[name]
        else:
            name = rng.choice(sorted(alive))
            slot = alive.pop(name)
            cluster.server.delete_node(name)
            serial += 1
            alive[f"n{serial}"] = slot
            cluster.server.create_node(node_object(f"n{serial}", f"10.244.{slot}.0/24"))
        await asyncio.sleep(rng.choice([0.002, 0.01, 0.1, 0.4, 1.3]))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_changes_during_writes_never_race_and_converge(cluster: Cluster, seed: int) -> None:
    provider = RaceWatch(cluster)
    config = settings(kubeconfig=str(cluster.kubeconfig), batch_window=0.2)
    kube = await KubeClient.connect(kubeconfig=config.kubeconfig)
    service = build_service(
        config,
        kube=kube,
        provider=provider,
        metrics=Metrics.create(),
        identity="a",
        sources=Sources.system(),
    )
    task = asyncio.create_task(service.run())
    try:
        await asyncio.sleep(20)  # the budget's burst is back
        await churn(cluster, random.Random(seed), steps=60)
        nodes = {n["metadata"]["name"]: n for n in cluster.server.list_nodes()}
        wanted = {(name, n["spec"]["podCIDRs"][0]) for name, n in nodes.items()}
        await eventually(lambda: cluster.routes() == wanted, within=120)
        await eventually(
            lambda: all(cluster.condition(name) == ("False", "RouteCreated") for name in nodes),
            within=60,
        )
        assert provider.races == []
        assert service.controller.side_plans >= 1  # the churn did land during writes
    finally:
        service.stopping.set()
        await asyncio.gather(task, return_exceptions=True)
        await kube.aclose()

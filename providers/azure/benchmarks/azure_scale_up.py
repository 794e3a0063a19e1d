"""Benchmark: a scale-up of N Nodes into an Azure route table: routectl batched, routectl
per-route, and the Azure CCM's way (a delayed batch every 30 s), side by side.

routectl modes run the real service (``wiring.build_service``, default flags: ``--cloud-qps
2 --cloud-burst 10``, ``--batch-write-interval 10s``) against routectl-sim's fake API server
and the ``azure`` plugin, configured by an ``azure.json`` through ``--cloud-config`` and a
client secret exchanged at the fake Entra ID, talking through azure-mgmt-network to
:class:`~routectl_azure.testing.FakeArm` over HTTPS. ``ccm`` replays cloud-provider-azure's
route path through the same SDK and fake: the route controller reconciles every 10 s
(``--route-reconciliation-period``), lists the table and queues a CreateRoute per Node
without a route; the ``delayedRouteUpdater`` runs every 30 s
(``routeUpdateIntervalInSeconds``): it reads the table, merges the queue and writes it
whole, without ``If-Match`` (``routetable/repo.go``). Its rate limits are off (ARM's
default QPS would only slow it).

routectl meets the Nodes idle, as in a running cluster: its first (empty) sync is over and
the batch write interval since it has passed. Nodes join spread over ``--join-seconds``
(0: at once). A concurrent writer (an operator tagging the table) changes it just before
each of the first ``--concurrent`` table writes: routectl's ``If-Match`` makes ARM refuse
the stale write (412) and the change survives; the CCM's write overwrites it. Reported per
mode: requests by kind, writes ARM carried out and writes it refused (412), concurrent
changes lost, and the time from the first Node's creation until the last Node's route
existed.

    python providers/azure/benchmarks/azure_scale_up.py --nodes 400 [--modes batched,ccm]
        [--json out]

Needs ``routectl-sim`` and ``routectl-azure[test]``. Real time: the per-route mode is paced
by the bucket (two requests a second, about three requests a route), about 10 minutes for
400.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from azure.core.exceptions import ResourceNotFoundError
from azure.mgmt.network import models
from routectl_azure.arm import RateLimits, network_client
from routectl_azure.options import parse_options
from routectl_azure.table import route_name
from routectl_azure.testing import CLIENT_ID, SECRET, SUBSCRIPTION, TENANT, FakeArm, StaticToken

from routectl.cli.flags import parse_run_flags
from routectl.kube import KubeClient
from routectl.observe.metrics import Metrics
from routectl.process.service import Service
from routectl.process.wiring import Sources, build_service, load_provider
from routectl_sim.apiserver import FakeApiServer

GROUP, TABLE = "mc_bench", "bench-routetable"


def cidr(index: int) -> str:
    """Node ``index``'s pod CIDR."""
    return f"10.{100 + index // 256}.{index % 256}.0/24"


def address(index: int) -> str:
    """Node ``index``'s private IP."""
    return f"10.240.{index // 250}.{index % 250 + 4}"


def node(index: int) -> dict[str, Any]:
    """Node ``index`` as the API server holds it."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{index}"},
        "spec": {"podCIDR": cidr(index), "podCIDRs": [cidr(index)]},
        "status": {"addresses": [{"type": "InternalIP", "address": address(index)}]},
    }


def kind_of(method: str, path: str) -> str:
    """A request's kind, for the report."""
    if path.endswith("/oauth2/v2.0/token"):
        return "token"
    if "/operations/" in path or "/operationResults/" in path:
        return "poll"
    if "networkInterfaces" in path or "virtualMachineScaleSets" in path:
        return "machines"
    if "/routes/" in path:
        return f"route {method}"
    return f"table {method}"


def concurrent_writer(cloud: FakeArm, count: int) -> list[str]:
    """Before each of the next ``count`` writes, an operator tags the table (a change that
    takes no route of the 400); the tags added so far (the list grows as writes happen)."""
    table = cloud.tables[(GROUP, TABLE)]
    added: list[str] = []

    def change(n: int) -> Callable[[], None]:
        def tag() -> None:
            table.tags[f"operator-{n}"] = "true"
            table.touch()
            added.append(f"operator-{n}")

        return tag

    for n in range(count):
        cloud.before_next("PUT", change(n))
    return added


async def join(api: FakeApiServer, nodes: int, seconds: float) -> None:
    """Create the Nodes, spread evenly over ``seconds``."""
    await on_schedule(nodes, seconds, lambda index: api.create_node(node(index)))


async def on_schedule(count: int, seconds: float, make: Callable[[int], object]) -> None:
    """``make(i)`` at ``i * seconds / count`` from now (each on time, however long the ones
    before took: the join lasts ``seconds``, not that plus every step's overhead)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    for index in range(count):
        await asyncio.sleep(max(0.0, start + index * seconds / count - loop.time()))
        make(index)


async def run_routectl(
    cloud: FakeArm,
    api: FakeApiServer,
    *,
    nodes: int,
    batched: bool,
    join_seconds: float,
    interval: str,
) -> float:
    """The routectl service until every Node's route exists; the seconds it took."""
    with tempfile.TemporaryDirectory() as scratch:
        kubeconfig = Path(scratch) / "kubeconfig"
        api.kubeconfig(kubeconfig)
        azure_json = Path(scratch) / "azure.json"
        azure_json.write_text(
            json.dumps(
                {
                    "cloud": "AzurePublicCloud",
                    "tenantId": TENANT,
                    "subscriptionId": SUBSCRIPTION,
                    "aadClientId": CLIENT_ID,
                    "aadClientSecret": SECRET,
                    "resourceGroup": GROUP,
                    "location": "westeurope",
                    "vmType": "vmss",
                    "routeTableName": TABLE,
                    "resourceManagerEndpoint": cloud.url,
                    "ca-bundle": cloud.ca_path,
                    "batch-writes": "true" if batched else "false",
                    "find-blackholes": "false",
                }
            )
        )
        os.environ["AZURE_AUTHORITY_HOST"] = cloud.authority
        from routectl.cli.dropin import with_cloud_config  # noqa: PLC0415 -- as the CLI reads it

        settings = with_cloud_config(
            parse_run_flags(
                [
                    f"--kubeconfig={kubeconfig}",
                    "--cluster-cidr=10.96.0.0/11",
                    "--cloud-provider=azure",
                    f"--cloud-config={azure_json}",
                    "--leader-elect=false",
                    "--metrics-bind-address=127.0.0.1:0",
                    f"--batch-writes={'true' if batched else 'false'}",
                    f"--batch-write-interval={interval}",
                ]
            )
        )
        metrics, sources = Metrics.create(), Sources.system()
        kube = await KubeClient.connect(kubeconfig=str(kubeconfig))
        plugin = load_provider(settings, metrics=metrics, sources=sources)
        service = build_service(
            settings, kube=kube, provider=plugin, metrics=metrics, identity="bench", sources=sources
        )
        task = asyncio.create_task(service.run())
        await until_idle(service)
        elapsed = await until_routed(cloud, api, nodes=nodes, join_seconds=join_seconds)
        service.stopping.set()
        await task
        await plugin.provider.aclose()
        await kube.aclose()
    return elapsed


async def until_idle(service: Service) -> None:
    """Until the first (empty) sync is over and the next sync may start at once: a burst
    then meets routectl as it runs in a steady cluster, not its start-up."""
    state = service.queue.state
    loop = asyncio.get_running_loop()
    while service.controller.syncs < 1 or state.running or state.dirty:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    assert state.last_start is not None  # noqa: S101 -- a sync ran
    await asyncio.sleep(max(0.0, state.last_start + state.min_interval - loop.time()) + 0.1)


async def until_routed(
    cloud: FakeArm, api: FakeApiServer, *, nodes: int, join_seconds: float
) -> float:
    """Add the Nodes; wait until the table routes each; the seconds from the first join."""
    loop = asyncio.get_running_loop()
    table = cloud.tables[(GROUP, TABLE)]
    started = loop.time()
    joining = asyncio.create_task(join(api, nodes, join_seconds))
    wanted = {route_name(f"node-{i}", cidr(i)) for i in range(nodes)}
    while not wanted <= {r["name"] for r in table.routes}:  # noqa: ASYNC110 -- polling the fake
        await asyncio.sleep(0.05)
    await joining
    return loop.time() - started


async def run_ccm(  # noqa: PLR0915 -- the CCM model reads best as one piece
    cloud: FakeArm, api: FakeApiServer, *, nodes: int, join_seconds: float
) -> float:
    """cloud-provider-azure's route path (route controller + delayedRouteUpdater)."""
    options = parse_options(
        {
            "subscriptionId": SUBSCRIPTION,
            "resourceGroup": GROUP,
            "routeTableName": TABLE,
            "resourceManagerEndpoint": cloud.url,
            "ca-bundle": cloud.ca_path,
            "polling-interval": "2",
        },
        environ={},
        need_credentials=False,
    )
    client = network_client(options, StaticToken(), None, RateLimits())
    queue: list[tuple[models.Route, asyncio.Future[None]]] = []
    pending: set[str] = set()
    creating: set[asyncio.Task[None]] = set()
    created = [0]  # Nodes the API server holds so far

    async def get_table() -> models.RouteTable | None:
        try:
            return await client.route_tables.get(GROUP, TABLE)
        except ResourceNotFoundError:
            return None

    async def updater() -> None:  # delayedRouteUpdater.updateRoutes, every 30 s
        while True:
            await asyncio.sleep(30)
            if not queue:
                continue
            batch, queue[:] = list(queue), []
            table = await get_table()
            assert table is not None  # noqa: S101 -- the scene made it
            assert table.properties is not None  # noqa: S101 -- ARM always sends properties
            routes = list(table.properties.routes or [])
            for route, _ in batch:
                routes = [r for r in routes if (r.name or "").lower() != (route.name or "").lower()]
                routes.append(route)
            table.properties.routes = routes
            poller = await client.route_tables.begin_create_or_update(GROUP, TABLE, table)
            await poller.result()
            for _, done in batch:
                done.set_result(None)

    async def create(index: int) -> None:  # CreateRoute: queue, then wait for the write
        name = route_name(f"node-{index}", cidr(index))
        route = models.Route(
            {
                "name": name,
                "properties": {
                    "addressPrefix": cidr(index),
                    "nextHopType": "VirtualAppliance",
                    "nextHopIpAddress": address(index),
                },
            }
        )
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append((route, done))
        await done
        pending.discard(name)

    async def route_controller() -> None:  # reconcile every --route-reconciliation-period
        while True:
            table = await get_table()
            listed = (table.properties.routes if table and table.properties else None) or []
            have = {r.name for r in listed}
            for index in range(created[0]):
                name = route_name(f"node-{index}", cidr(index))
                if name not in have and name not in pending:
                    pending.add(name)
                    creating.add(asyncio.create_task(create(index)))
            await asyncio.sleep(10)

    async def joining() -> None:
        def make(index: int) -> None:
            api.create_node(node(index))
            created[0] = index + 1

        await on_schedule(nodes, join_seconds, make)

    loop = asyncio.get_running_loop()
    tasks = [asyncio.create_task(updater()), asyncio.create_task(route_controller())]
    await asyncio.sleep(1.0)
    started = loop.time()
    join_task = asyncio.create_task(joining())
    table = cloud.tables[(GROUP, TABLE)]
    wanted = {route_name(f"node-{i}", cidr(i)) for i in range(nodes)}
    while not wanted <= {r["name"] for r in table.routes}:  # noqa: ASYNC110 -- polling the fake
        await asyncio.sleep(0.05)
    elapsed = loop.time() - started
    await join_task
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await client.close()
    return elapsed


async def run(
    *, mode: str, nodes: int, join_seconds: float, concurrent: int, interval: str
) -> dict[str, Any]:
    """One scale-up; its numbers."""
    async with FakeArm(operation_seconds=0) as cloud, FakeApiServer() as api:
        cloud.add_table(GROUP, TABLE)
        operator = concurrent_writer(cloud, concurrent)
        if mode == "ccm":
            elapsed = await run_ccm(cloud, api, nodes=nodes, join_seconds=join_seconds)
        else:
            elapsed = await run_routectl(
                cloud,
                api,
                nodes=nodes,
                batched=mode == "batched",
                join_seconds=join_seconds,
                interval=interval,
            )
        table = cloud.tables[(GROUP, TABLE)]
        present = {r["name"] for r in table.routes}
        tags = set(table.tags)
        accepted = cloud.writes
    kinds = collections.Counter(kind_of(m, p) for m, p in cloud.requests)
    sent = kinds["table PUT"] + kinds["route PUT"] + kinds["route DELETE"]
    return {
        "mode": mode,
        "nodes": nodes,
        "join_seconds": join_seconds,
        "batch_write_interval": interval if mode == "batched" else None,
        "requests": len(cloud.requests),
        "by_kind": dict(sorted(kinds.items())),
        "writes_accepted": accepted,
        "writes_refused_412": sent - accepted,
        "routes_written": len(present & {route_name(f"node-{i}", cidr(i)) for i in range(nodes)}),
        "concurrent_changes": len(operator),
        "concurrent_changes_lost": sum(1 for name in operator if name not in tags),
        "seconds_to_all_routes": round(elapsed, 1),
    }


def main(argv: list[str]) -> int:
    """Run the modes and print (or write) the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=400)
    parser.add_argument("--join-seconds", type=float, default=0.0)
    parser.add_argument("--concurrent", type=int, default=2)
    parser.add_argument("--batch-write-interval", default="10s", help="routectl's flag")
    parser.add_argument("--modes", default="batched,ccm,per-route")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    results = []
    for mode in args.modes.split(","):
        result = asyncio.run(
            run(
                mode=mode,
                nodes=args.nodes,
                join_seconds=args.join_seconds,
                concurrent=args.concurrent,
                interval=args.batch_write_interval,
            )
        )
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

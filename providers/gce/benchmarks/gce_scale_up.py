"""Benchmark: a scale-up of N Nodes on GCE, routectl side by side with the GCE CCM's way.

Both run against :class:`~routectl_gce.testing.FakeCompute` (routes, global operations that
take ``--operation-seconds`` each, instances spread over three zones) and count the
requests it receives, by kind, until a route exists for every Node:

* ``routectl``: the real service (``wiring.build_service``; ``--cloud-qps``/``--cloud-burst``
  as given, other flags default) with the ``gce`` plugin through google-cloud-compute, and
  routectl-sim's fake API server. Each create: one ``routes.list`` of its destination, one
  ``routes.insert``, ``globalOperations.wait`` until DONE; one ``instances.aggregatedList``
  the first time a Node is seen (``multizone = true``).
* ``ccm``: a model of cloud-provider-gcp's route controller (``providers/gce/gce_routes.go``
  with k8s.io/cloud-provider's reconcile), written here over plain HTTP: every
  ``--route-reconciliation-period`` (10 s) one filtered ``routes.list``, then a create per
  Node without a route, at most 200 at once, and the next reconcile only when all have
  returned. A create is ``getInstanceByName`` (``instances.get`` in each managed zone until
  found: three zones), ``routes.insert``, then the operation polled with
  ``globalOperations.get`` every second under the CCM's 5 qps / burst 5 poll limiter
  (``operationPollInterval``, ``NewTokenBucketRateLimiter(5, 5)``). It does not model the
  Compute API's own rate limits (the fake has none), so its time is a lower bound.

    python providers/gce/benchmarks/gce_scale_up.py --nodes 1000 --cloud-qps 20 --cloud-burst 40

Needs ``routectl-sim`` and ``routectl-gce``. Times are wall-clock.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import aiohttp
from google.auth.credentials import AnonymousCredentials
from routectl_gce import GceProvider
from routectl_gce.testing import FakeCompute

from routectl.config import Settings
from routectl.observe.metrics import Metrics
from routectl.process.wiring import Plugin, Sources, new_budget
from routectl.ratelimit import TokenBucket
from routectl_sim.apiserver import FakeApiServer
from routectl_sim.bench import service_running, until

ZONES = ("us-central1-a", "us-central1-b", "us-central1-c")
CLUSTER = "kubernetes"


def cidr(index: int) -> str:
    """Node ``index``'s pod CIDR."""
    return f"10.{100 + index // 256}.{index % 256}.0/24"


def node(index: int) -> dict[str, Any]:
    """Node ``index`` with its pod CIDR."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{index}"},
        "spec": {"podCIDR": cidr(index), "podCIDRs": [cidr(index)]},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{index // 250}.{index % 250 + 2}"}
            ]
        },
    }


def kind_of(request: str) -> str:
    """A request's kind, for the report."""
    method, path = request.split(" ", 1)
    if path.endswith("/wait"):
        return "globalOperations.wait"
    if "/global/operations/" in path:
        return "globalOperations.get"
    if "/aggregated/instances" in path:
        return "instances.aggregatedList"
    if "/instances/" in path:
        return "instances.get"
    if path.endswith("/global/routes"):
        return "routes.insert" if method == "POST" else "routes.list"
    return f"routes.{method.lower()}"


def cloud(nodes: int, operation_seconds: float) -> FakeCompute:
    """The fake Compute API with an instance per Node over three zones."""
    fake = FakeCompute()
    fake.routes_quota = nodes + 100
    fake.operation_seconds = operation_seconds
    return fake


async def routectl(
    *, nodes: int, qps: float, burst: int, operation_seconds: float
) -> dict[str, Any]:
    """The real service with the gce plugin."""
    async with cloud(nodes, operation_seconds) as fake, FakeApiServer() as api:
        for index in range(nodes):
            fake.add_instance(f"node-{index}", zone=ZONES[index % len(ZONES)])

        def gce(settings: Settings, metrics: Metrics, sources: Sources) -> Plugin:
            budget = new_budget(settings, metrics=metrics, sources=sources)
            options = {
                "project-id": fake.project,
                "network-name": "default",
                "multizone": "true",
                "api-endpoint": f"{fake.url}/compute/v1/",
            }
            provider = GceProvider(
                cluster_name=CLUSTER,
                options=options,
                budget=budget,
                credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            )
            return Plugin(provider=provider, budget=budget)

        flags = [
            f"--cluster-name={CLUSTER}",
            "--cluster-cidr=10.96.0.0/11",
            "--provider=gce",
            "--leader-elect=false",
            "--metrics-bind-address=127.0.0.1:0",
            f"--cloud-qps={qps}",
            f"--cloud-burst={burst}",
        ]
        async with service_running(api, flags, plugin=gce):
            loop = asyncio.get_running_loop()
            fake.requests.clear()
            started = loop.time()
            for index in range(nodes):
                api.create_node(node(index))
            await until(lambda: len(fake.routes) >= nodes)
            elapsed = loop.time() - started
        return report("routectl", fake, nodes, elapsed, qps=qps, burst=burst)


async def ccm(*, nodes: int, operation_seconds: float, period: float = 10.0) -> dict[str, Any]:
    """A model of the GCE CCM's route controller (see the module docstring)."""
    async with cloud(nodes, operation_seconds) as fake, aiohttp.ClientSession() as http:
        for index in range(nodes):
            fake.add_instance(f"node-{index}", zone=ZONES[index % len(ZONES)])
        base = f"{fake.url}/compute/v1/projects/{fake.project}"
        loop = asyncio.get_running_loop()
        polls = TokenBucket(rate=5.0, burst=5.0)  # NewTokenBucketRateLimiter(5, 5)
        semaphore = asyncio.Semaphore(200)  # maxConcurrentRouteOperations

        async def poll_token() -> None:
            while delay := polls.try_take(now=loop.time()):  # noqa: ASYNC110 -- a bucket
                await asyncio.sleep(delay)

        async def create(index: int) -> None:
            async with semaphore:
                instance = None
                for zone in ZONES:  # getInstanceByName: every managed zone until found
                    async with http.get(f"{base}/zones/{zone}/instances/node-{index}") as answer:
                        if answer.status == 200:  # noqa: PLR2004
                            instance = await answer.json()
                            break
                if instance is None:
                    raise RuntimeError(f"node-{index} has no instance")
                body = {
                    "name": f"{CLUSTER}-{uuid.uuid5(uuid.NAMESPACE_DNS, f'node-{index}')}",
                    "destRange": cidr(index),
                    "nextHopInstance": f"zones/{ZONES[index % len(ZONES)]}/instances/node-{index}",
                    "network": fake.network_url,
                    "priority": 1000,
                    "description": "k8s-node-route",
                }
                async with http.post(f"{base}/global/routes", json=body) as answer:
                    if answer.status != 200:  # noqa: PLR2004 -- 409: it exists
                        return
                    operation = await answer.json()
                while operation["status"] != "DONE":
                    await asyncio.sleep(1.0)  # operationPollInterval
                    await poll_token()
                    async with http.get(f"{base}/global/operations/{operation['name']}") as answer:
                        operation = await answer.json()

        async def reconcile() -> None:
            while True:
                begun = loop.time()
                listed = await ccm_listing(http, base)
                await asyncio.gather(*(create(i) for i in range(nodes) if cidr(i) not in listed))
                await asyncio.sleep(max(0.0, period - (loop.time() - begun)))

        started = loop.time()
        controller = asyncio.create_task(reconcile())
        while len(fake.routes) < nodes:  # noqa: ASYNC110 -- polling the fake's state
            await asyncio.sleep(0.05)
        elapsed = loop.time() - started
        controller.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await controller
        return report("ccm", fake, nodes, elapsed)


async def ccm_listing(http: aiohttp.ClientSession, base: str) -> set[str]:
    """ListRoutes as the CCM filters it (name prefix, description), every page."""
    listed: set[str] = set()
    token = ""
    while True:
        query = {
            "filter": f'(name eq "{CLUSTER}-.*") (description eq "k8s-node-route")',
            "pageToken": token,
        }
        async with http.get(f"{base}/global/routes", params=query) as answer:
            page = await answer.json()
        listed |= {r["destRange"] for r in page.get("items", [])}
        token = page.get("nextPageToken", "")
        if not token:
            return listed


def report(
    mode: str, fake: FakeCompute, nodes: int, elapsed: float, **flags: Any
) -> dict[str, Any]:
    """The numbers of one run."""
    kinds = collections.Counter(kind_of(r) for r in fake.requests)
    routed = collections.Counter(r["destRange"] for r in fake.routes.values())
    return {
        "mode": mode,
        "nodes": nodes,
        "operation_seconds": fake.operation_seconds,
        **flags,
        "routes": len(fake.routes),
        "destinations_routed_twice": sum(1 for n in routed.values() if n > 1),
        "requests": len(fake.requests),
        "by_kind": dict(sorted(kinds.items())),
        "seconds_to_all_routes": round(elapsed, 1),
    }


def main(argv: list[str]) -> int:
    """Run both and print (or write) the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--cloud-qps", type=float, default=2.0)
    parser.add_argument("--cloud-burst", type=int, default=10)
    parser.add_argument("--operation-seconds", type=float, default=2.0)
    parser.add_argument("--modes", default="routectl,ccm")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    results = []
    for mode in args.modes.split(","):
        if mode == "routectl":
            run = routectl(
                nodes=args.nodes,
                qps=args.cloud_qps,
                burst=args.cloud_burst,
                operation_seconds=args.operation_seconds,
            )
        else:
            run = ccm(nodes=args.nodes, operation_seconds=args.operation_seconds)
        results.append(asyncio.run(run))
    text = json.dumps(results, indent=2)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The scale benchmark: a very large cluster's start-up, and a one-Node change in it.

``python -m routectl_sim.scale --nodes 65000`` builds that many Nodes (routes in
place) in the fake API server, starts routectl on a real clock, and reports:

* the time from start to the end of the first sync (initial paginated list of every Node,
  one ListRoutes, a full plan, nothing to change), in wall seconds and in CPU seconds the
  controller itself spent (the fake API server shares the process and its serving is not
  charged to the controller);
* the controller's RSS growth, from just before it starts;
* the plan time of a sync after one new Node gets its pod CIDR (the scoped, incremental
  path) next to the plan time of the full plan.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from routectl.kube import KubeClient
from routectl.observe.metrics import Metrics
from routectl.process.wiring import Sources, build_service
from routectl.testing import FakeCloud, FakeProvider
from routectl_sim.apiserver import FakeApiServer
from routectl_sim.measure import COMPONENT, MeteredLoop, Recorder, rss_bytes
from routectl_sim.profiles import profile_settings
from routectl_sim.workload import CLUSTER, Sim, setup


def _mean(metrics: Metrics, scope: str) -> float:
    samples = {
        s.name: s.value
        for m in metrics.plan_duration.collect()
        for s in m.samples
        if s.labels.get("scope") == scope
    }
    count = samples.get("routectl_plan_duration_seconds_count", 0.0)
    return samples.get("routectl_plan_duration_seconds_sum", 0.0) / count if count else 0.0


async def _wait(check: Callable[[], bool], step: float = 0.05) -> None:
    while not check():  # noqa: ASYNC110 -- polling the controller's counters from outside
        await asyncio.sleep(step)


async def measure(nodes: int) -> dict[str, float]:
    """Run the benchmark at ``nodes`` Nodes; returns the numbers it reports."""
    loop = asyncio.get_running_loop()
    assert isinstance(loop, MeteredLoop)  # noqa: S101 -- run() guarantees it
    cloud = FakeCloud()
    async with FakeApiServer(history_limit=10_000) as server:
        sim = Sim(
            server=server,
            cloud=cloud,
            recorder=Recorder(cluster=CLUSTER),
            rng=random.Random(1),  # noqa: S311 -- a seeded workload
            heartbeat=3600.0,
        )
        setup(sim, "idle", nodes)
        with tempfile.TemporaryDirectory() as scratch:
            kubeconfig = Path(scratch) / "kubeconfig"
            server.kubeconfig(kubeconfig)
            settings = dataclasses.replace(
                profile_settings("routectl", budget_qps=1000.0, budget_burst=1000),
                kubeconfig=str(kubeconfig),
            )
            baseline = rss_bytes()
            token = COMPONENT.set("controller")
            try:
                kube = await KubeClient.connect(kubeconfig=str(kubeconfig))
                metrics = Metrics.create()
                service = build_service(
                    settings,
                    kube=kube,
                    provider=FakeProvider.over(cloud, CLUSTER),
                    metrics=metrics,
                    identity="scale",
                    sources=Sources.system(),
                )
                started = time.perf_counter()
                running = asyncio.create_task(service.run())
            finally:
                COMPONENT.reset(token)
            await _wait(lambda: service.controller.syncs >= 1)
            first_wall = time.perf_counter() - started
            first_cpu = loop.cpu["controller"]
            first_rss = rss_bytes() - baseline
            sim.register(nodes, f"node-{nodes:05d}")
            sim.assign(f"node-{nodes:05d}")
            await _wait(lambda: len(cloud.routes(CLUSTER)) > nodes)
            await _wait(lambda: service.controller.syncs >= 1 + 1)  # the change's own sync
            last = service.controller.last
            last_full = last is not None and last.full
            service.stopping.set()
            await running
            await kube.aclose()
    return {
        "nodes": nodes,
        "first_sync_wall_seconds": round(first_wall, 3),
        "first_sync_controller_cpu_seconds": round(first_cpu, 3),
        "controller_rss_growth_bytes": first_rss,
        "full_plan_seconds": round(_mean(metrics, "full"), 4),
        "one_node_change_plan_seconds": round(_mean(metrics, "changes"), 4),
        "one_node_change_planned_in_full": last_full,
    }


def main() -> None:
    """Command-line entry: print the numbers as JSON."""
    parser = argparse.ArgumentParser(prog="python -m routectl_sim.scale")
    parser.add_argument("--nodes", type=int, default=65000)
    args = parser.parse_args()
    loop = MeteredLoop()
    try:
        print(json.dumps(loop.run_until_complete(measure(args.nodes)), indent=2))  # noqa: T201
    finally:
        loop.close()


if __name__ == "__main__":
    main()

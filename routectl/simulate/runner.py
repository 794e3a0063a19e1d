"""Run one (scenario, profile) simulation on a virtual clock, and many of them side by side.

Each job gets a fresh process (so CPU and memory are its own), a fresh fake API server,
a fresh simulated cloud and the same seeded workload; the controller is routectl's real
:class:`~routectl.service.Service`, configured from the profile's flags, talking HTTP.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import multiprocessing
import random
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import cast

import looptime

from routectl.cidr import canonical
from routectl.kube import KubeClient
from routectl.metrics import Metrics
from routectl.service import Service, gate
from routectl.simulate.measure import COMPONENT, MeteredLoop, Recorder, percentile, rss_bytes
from routectl.simulate.profiles import profile_settings
from routectl.simulate.workload import CLUSTER, DRIVERS, Sim, setup
from routectl.testing import CloudSettings, FakeCloud
from routectl.testing.apiserver import FakeApiServer

SimLoop = looptime.make_event_loop_class(MeteredLoop)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CloudModel:
    """The simulated cloud: latency per operation and the server-side budget."""

    list_latency: float = 0.2
    write_latency: float = 1.0
    qps: float = 1.0
    burst: int = 10
    whole_table: bool = False
    """The route table is one object and the provider writes batches (Azure, OpenStack)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """One simulation: a scenario at a size, under one profile."""

    scenario: str
    profile: str
    nodes: int
    duration: float
    seed: int = 1
    heartbeat: float = 300.0
    cloud: CloudModel = CloudModel()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """What one job measured (times are simulated seconds)."""

    job: Job
    cloud_calls: dict[str, int]
    throttled: int
    latencies: list[float]
    converge_seconds: float
    wrongful_deletes: int
    cpu_seconds: float
    peak_rss_bytes: int
    call_times: list[float]
    batched_writes: int = 0

    def summary(self) -> dict[str, object]:
        """The per-profile object of ``routectl simulate --json``."""
        return {
            "cloud_calls": self.cloud_calls,
            "throttled": self.throttled,
            "route_latency_seconds": {
                "p50": percentile(self.latencies, 0.50),
                "p99": percentile(self.latencies, 0.99),
                "max": max(self.latencies, default=0.0),
            },
            "converge_seconds": self.converge_seconds,
            "wrongful_deletes": self.wrongful_deletes,
            "cpu_seconds": self.cpu_seconds,
            "peak_rss_bytes": self.peak_rss_bytes,
        }


def run_job(job: Job) -> Result:
    """Run ``job`` to completion on a fresh virtual-clock loop (blocking)."""
    logging.getLogger("routectl").setLevel(logging.CRITICAL)
    loop = SimLoop(start=0.0, noop_cycles=42)
    try:
        return loop.run_until_complete(_simulate(job, cast("MeteredLoop", loop)))
    finally:
        loop.close()


async def _simulate(job: Job, loop: MeteredLoop) -> Result:
    model = job.cloud
    by_address = job.scenario == "address-change"
    cloud = FakeCloud(
        CloudSettings(
            list_latency=model.list_latency,
            write_latency=model.write_latency,
            qps=model.qps,
            burst=model.burst,
            seed=job.seed,
            enable_node_addresses=by_address,
            whole_table=model.whole_table,
        )
    )
    recorder = Recorder(cluster=CLUSTER, routes_by_address=by_address)
    cloud.listeners.append(recorder.on_change)
    async with FakeApiServer(history_limit=20_000) as server:
        sim = Sim(
            server=server,
            cloud=cloud,
            recorder=recorder,
            rng=random.Random(job.seed),  # noqa: S311 -- a seeded workload
            heartbeat=job.heartbeat,
        )
        setup(sim, job.scenario, job.nodes)
        peak = baseline = rss_bytes()
        with tempfile.TemporaryDirectory() as scratch:
            kubeconfig = Path(scratch) / "kubeconfig"
            server.kubeconfig(kubeconfig)
            service, kube, running = await _start_controller(job, cloud, str(kubeconfig))
            try:
                peak = await _drive(sim, job, peak)
            finally:
                service.stopping.set()
                await running
                await kube.aclose()
    routed = {
        (r.target_node, canonical(r.destination_cidr))
        for r in cloud.routes(CLUSTER)
        if not r.blackhole
    }
    converged = routed == recorder.expected()
    return Result(
        job=job,
        cloud_calls={op: cloud.count(op) for op in ("list", "create", "delete")},
        throttled=cloud.count(outcome="throttled"),
        latencies=recorder.latencies,
        converge_seconds=max(0.0, recorder.last_cloud_change - recorder.last_workload_change)
        if converged
        else -1.0,
        wrongful_deletes=recorder.wrongful_deletes,
        cpu_seconds=round(loop.cpu["controller"], 3),
        peak_rss_bytes=max(0, peak - baseline),
        call_times=[c.time for c in cloud.calls],
        batched_writes=cloud.batches,
    )


async def _start_controller(
    job: Job, cloud: FakeCloud, kubeconfig: str
) -> tuple[Service, KubeClient, asyncio.Task[int]]:
    """Start routectl's service in the "controller" context (its CPU is metered apart)."""
    settings = dataclasses.replace(
        profile_settings(job.profile, budget_qps=job.cloud.qps, budget_burst=job.cloud.burst),
        kubeconfig=kubeconfig,
    )
    token = COMPONENT.set("controller")
    try:
        kube = await KubeClient.connect(kubeconfig=kubeconfig)
        metrics = Metrics.create()
        provider = gate(cloud.provider(settings.cluster_name), settings, metrics)
        service = Service(
            settings, kube=kube, provider=provider, metrics=metrics, identity="simulate"
        )
        running = asyncio.create_task(service.run())
    finally:
        COMPONENT.reset(token)
    return service, kube, running


async def _drive(sim: Sim, job: Job, peak: int) -> int:
    """Run the workload and the heartbeats for the job's duration; return the peak RSS."""
    tasks = [
        asyncio.create_task(DRIVERS[job.scenario](sim, job.nodes)),
        asyncio.create_task(sim.heartbeats()),
    ]
    try:
        end = sim.now() + job.duration
        while (left := end - sim.now()) > 0:
            await asyncio.sleep(min(60.0, left))
            peak = max(peak, rss_bytes())
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return peak


def run_jobs(
    jobs: Iterable[Job], *, workers: int, on_done: Callable[[Result], None] = lambda r: None
) -> list[Result]:
    """Run jobs in separate processes (``workers`` at a time); results in job order."""
    jobs = list(jobs)
    if workers <= 1:
        results = []
        for job in jobs:
            results.append(run_job(job))
            on_done(results[-1])
        return results
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {pool.submit(run_job, job): i for i, job in enumerate(jobs)}
        done: dict[int, Result] = {}
        for future in concurrent.futures.as_completed(futures):
            result = future.result()
            done[futures[future]] = result
            with contextlib.suppress(Exception):
                on_done(result)
    return [done[i] for i in range(len(jobs))]

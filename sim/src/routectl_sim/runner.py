"""Run one (scenario, profile) simulation on a virtual clock, and many of them side by side.

Each job gets a fresh process (so CPU and memory are its own), a fresh fake API server,
a fresh simulated cloud and the same seeded workload; the controller is routectl's real
:class:`~routectl.process.service.Service`, configured from the profile's flags, talking HTTP.
A profile's companions (KCM's allocator in ``kcm+…``) run beside it in the same loop,
talking HTTP to the same server; their CPU is not the controller's.

The same job gives the same numbers every time (CPU and memory aside): the loop is
:class:`SequencedLoop`, whose timers due at one instant run in the order they were set (so
real socket timing cannot reorder simultaneous virtual-time events) and whose executor
work runs inline (so no real time spent waiting for a thread can move the virtual clock).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import datetime
import heapq
import itertools
import logging
import multiprocessing
import random
import tempfile
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from ipaddress import ip_network
from pathlib import Path
from typing import Any, TypeVar, cast

from routectl.cidr import canonical
from routectl.cli.flags import parse_run_flags
from routectl.config import Settings
from routectl.plan.reconcile import is_responsible
from routectl.testing import CloudSettings, FakeCloud
from routectl_sim.apiserver import FakeApiServer
from routectl_sim.chaos import burst_failover, run_chaos
from routectl_sim.kcm import start_kcm
from routectl_sim.measure import (
    COMPONENT,
    MeteredLoop,
    Recorder,
    ReuseWatch,
    api_writes,
    event_occurrences,
    percentile,
    rss_bytes,
)
from routectl_sim.pool import Pool
from routectl_sim.profiles import (
    CLUSTER_CIDR,
    ELECTED,
    IPAM_SCENARIOS,
    POD_MASK,
    pod_cidr_pool,
    profile_flags,
    scenario_flags,
    split_profile,
)
from routectl_sim.workload import CLUSTER, DRIVERS, EPOCH, Sim, setup

T = TypeVar("T")


class _SequencedTimer(asyncio.TimerHandle):
    """A timer that orders after every timer scheduled before it for the same instant."""

    __slots__ = ("_sequence",)

    def __init__(self, when: float, sequence: int, *args: Any) -> None:
        super().__init__(when, *args)
        self._sequence = sequence

    def __lt__(self, other: object) -> bool:
        if isinstance(other, _SequencedTimer):
            return (self.when(), self._sequence) < (other.when(), other._sequence)
        return NotImplemented

    def __gt__(self, other: object) -> bool:
        if isinstance(other, _SequencedTimer):
            return (self.when(), self._sequence) > (other.when(), other._sequence)
        return NotImplemented


class SequencedLoop(MeteredLoop):
    """A metered loop whose timers due at the same instant run in the order they were set.

    asyncio keeps timers in a heap, which is not stable: which of two timers due at the
    same instant runs first depends on the heap's history, and on a virtual clock that
    history includes every timer set while real socket I/O was being answered (the fake
    API server and the controller talk HTTP over loopback). So two runs with one seed
    could wake simultaneous waiters (calls held back by a cloud's Retry-After, say) in
    different orders, and a cloud budget then let different calls through. Ordering ties
    by when each timer was set makes a run depend on its seed alone.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timers_set = itertools.count()

    def call_at(  # type: ignore[override]
        self,
        when: float,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        """Schedule ``callback`` at ``when``, metered, after the timers set for ``when``."""
        self._check_closed()  # type: ignore[attr-defined]
        timer = _SequencedTimer(
            when, next(self._timers_set), self._metered, (callback, *args), self, context
        )
        heapq.heappush(self._scheduled, timer)  # type: ignore[attr-defined]
        timer._scheduled = True  # type: ignore[attr-defined]  # noqa: SLF001
        return timer

    def run_in_executor(
        self, executor: object, func: Callable[..., T], *args: object
    ) -> asyncio.Future[T]:
        """Run ``func`` at once, in the loop's thread: its future is done when returned.

        aiohttp sends every request's netrc and proxy-environment lookups to a thread
        (kubernetes-asyncio's session trusts the environment). While such a future is
        pending, a virtual clock that waits for it (looptime's does) moves by the real time
        that passes, so a busy machine would shift the simulation's clock; run inline, the
        lookups take no virtual time at all.
        """
        future: asyncio.Future[T] = self.create_future()
        try:
            future.set_result(func(*args))
        except Exception as exc:  # noqa: BLE001 -- handed to the awaiting code, as a thread would
            future.set_exception(exc)
        return future


IDLE_POLLS = 4
"""Idle polls of the sockets before the virtual clock jumps to the next timer.

When no callback is ready, :class:`SimLoop` polls the sockets this many times (a
non-blocking ``epoll``) before it moves the clock, so that bytes still on their way
between the fake API server and the controller are read first. Over loopback, Linux
delivers what one socket sends to the other's receive queue within the ``send`` call
itself, so the first poll sees it; a few more cover a delivery the kernel deferred.
(looptime's default, 42, made an idle simulation spend most of its CPU polling: 755,000
of 824,000 loop iterations of 15 simulated minutes of 5,000 idle Nodes ran nothing; a
run's results are the same with 4.)
"""


class SimLoop(SequencedLoop):
    """:class:`SequencedLoop` on a virtual clock: time stands still while anything is
    ready to run or to read, and jumps to the next timer when nothing is.

    ``time()`` starts at 0. Each turn polls the sockets without waiting; when nothing is
    ready to run and a timer is due later, the sockets are polled :data:`IDLE_POLLS` more
    times, and if none has anything, the clock moves to the timer. With no timer at all,
    the loop waits for the sockets in real time, as any loop does. This is what looptime
    does for tests, without what the simulator does not use (executors in real time, end
    and idle timeouts), whose bookkeeping every turn paid for, and with the idle polls
    taken in one turn instead of one turn each: a jump of the clock costs a few ``epoll``
    calls (a simulated hour of 5,000 Nodes makes some 200,000 jumps).
    """

    def __init__(self, *, idle_polls: int = IDLE_POLLS) -> None:
        super().__init__()
        self._now = 0.0
        self._idle_polls = idle_polls
        selector = self._selector  # type: ignore[attr-defined]
        self._poll = selector.select
        selector.select = self._select

    def time(self) -> float:
        """The virtual clock."""
        return self._now

    def _select(self, timeout: float | None = None) -> list[Any]:
        ready: list[Any] = self._poll(0)
        if ready or timeout == 0:  # something to do now: the clock stands
            return ready
        if timeout is None:  # no timer: only the sockets can bring anything
            return self._poll(None)  # type: ignore[no-any-return]
        for _ in range(self._idle_polls):
            ready = self._poll(0)
            if ready:
                return ready
        self._now += timeout
        return ready


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CloudModel:
    """The simulated cloud: latency per operation and the server-side budget."""

    list_latency: float = 0.2
    write_latency: float = 1.0
    qps: float = 1.0
    burst: int = 10
    whole_table: bool = False
    replace: bool = False
    """The cloud repoints a route in one call (AWS's ReplaceRoute)."""
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
    controller_flags: tuple[str, ...] = ()
    """Extra ``routectl run`` flags for every profile (e.g. a shorter resync for a soak)."""
    pool_blocks: int = 0
    """Node IPAM scenarios: the pod CIDR pool's /24 blocks (0: the scenario's default)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """What one job measured (times are simulated seconds)."""

    job: Job
    cloud_calls: dict[str, int]
    throttled: int
    latencies: list[float]
    converge_seconds: float
    ready_latencies: list[float] = dataclasses.field(default_factory=list)
    """From a Node getting its pod CIDR to its NetworkUnavailable=False being written."""
    ready_after_route: list[float] = dataclasses.field(default_factory=list)
    """From a Node's route existing to its NetworkUnavailable=False being written."""
    wrongful_deletes: int
    cpu_seconds: float
    peak_rss_bytes: int
    call_times: list[float]
    batched_writes: int = 0
    invariants: dict[str, int] = dataclasses.field(default_factory=dict)
    faults: list[str] = dataclasses.field(default_factory=list)
    replicas_started: int = 1
    late_rss_growth_bytes: int = 0
    """RSS at the end minus RSS a third into the run: a leak shows as steady growth."""
    registrations: int = 0
    """Nodes that registered without a pod CIDR during the run."""
    cidr_latencies: list[float] = dataclasses.field(default_factory=list)
    """From a Node registering to its pod CIDR being set."""
    join_latencies: list[float] = dataclasses.field(default_factory=list)
    """From a Node registering to its NetworkUnavailable=False being written."""
    api_writes: dict[str, int] = dataclasses.field(default_factory=dict)
    """Write requests the API server received from the controllers, by what they write."""
    events: dict[str, int] = dataclasses.field(default_factory=dict)
    """Event occurrences at the end, by ``"<type> <reason>"``."""

    def summary(self) -> dict[str, object]:
        """The per-profile object of ``routectl simulate --json``."""
        return {
            "simulated_seconds": float(self.job.duration),
            "cloud_calls": self.cloud_calls,
            "throttled": self.throttled,
            "route_latency_seconds": {
                "p50": percentile(self.latencies, 0.50),
                "p99": percentile(self.latencies, 0.99),
                "max": max(self.latencies, default=0.0),
            },
            "node_ready_seconds": {
                "p50": percentile(self.ready_latencies, 0.50),
                "p99": percentile(self.ready_latencies, 0.99),
                "max": max(self.ready_latencies, default=0.0),
                "after_route_max": max(self.ready_after_route, default=0.0),
            },
            "node_join_seconds": {
                "registered": self.registrations,
                "ready": len(self.join_latencies),
                "cidr_p50": percentile(self.cidr_latencies, 0.50),
                "cidr_p99": percentile(self.cidr_latencies, 0.99),
                "ready_p50": percentile(self.join_latencies, 0.50),
                "ready_p99": percentile(self.join_latencies, 0.99),
                "ready_max": max(self.join_latencies, default=0.0),
            },
            "api_writes": self.api_writes,
            "events": self.events,
            "converge_seconds": self.converge_seconds,
            "wrongful_deletes": self.wrongful_deletes,
            "cpu_seconds": self.cpu_seconds,
            "peak_rss_bytes": self.peak_rss_bytes,
            "invariants": self.invariants,
        }


def run_job(job: Job) -> Result:
    """Run ``job`` to completion on a fresh virtual-clock loop (blocking)."""
    quiet = logging.getLogger("routectl")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    loop = SimLoop()
    try:
        return loop.run_until_complete(_simulate(job, cast("MeteredLoop", loop)))
    finally:
        loop.close()
        quiet.setLevel(level)


async def _simulate(job: Job, loop: MeteredLoop) -> Result:
    model = job.cloud
    by_address = job.scenario == "address-change"
    chaos = job.scenario in ELECTED
    cloud = FakeCloud(
        CloudSettings(
            list_latency=model.list_latency,
            write_latency=model.write_latency,
            qps=model.qps,
            burst=model.burst,
            seed=job.seed,
            enable_node_addresses=by_address,
            whole_table=model.whole_table,
            replace=model.replace,
            list_lag=5.0 if chaos else 0.0,
        )
    )
    recorder = Recorder(cluster=CLUSTER, cluster_cidr=CLUSTER_CIDR, routes_by_address=by_address)
    cloud.listeners.append(recorder.on_change)
    failures: list[object] = []
    loop.set_exception_handler(lambda _, context: failures.append(context))
    reuse = ReuseWatch(routes=lambda: cloud.routes(CLUSTER))
    async with FakeApiServer(history_limit=20_000) as server:
        server.watch_nodes(recorder.node_written)
        if job.scenario in IPAM_SCENARIOS:  # elsewhere the workload's script allocates
            server.watch_nodes(reuse.node_written)
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
            settings = _settings(job, kubeconfig=str(kubeconfig), elected=chaos)
            pool = Pool(settings=settings, cloud=cloud, server=server, elected=chaos)
            for _ in range(2 if chaos else 1):
                await pool.start()
            if chaos:
                pool.supervise(size=2)
            companions = await start_companions(job, kubeconfig=str(kubeconfig))
            faults: list[str] = []
            rss: list[int] = []
            try:
                peak = await _drive(
                    sim, job, peak, pool=pool, quiet=_quiet(settings), faults=faults, rss=rss
                )
            finally:
                crashed = await stop_companions(companions)
                await pool.stop()
        writes = api_writes((r.method, r.path) for r in server.requests)
        events = event_occurrences(server.events())
    expected = recorder.expected()
    routed = {
        (r.target_node, canonical(r.destination_cidr))
        for r in cloud.routes(CLUSTER)
        if not r.blackhole and is_responsible(r.destination_cidr, (ip_network(CLUSTER_CIDR),))
    }
    converged = routed == expected
    return Result(
        job=job,
        cloud_calls={op: cloud.count(op) for op in ("list", "create", "delete", "replace")},
        throttled=cloud.count(outcome="throttled"),
        latencies=recorder.latencies,
        ready_latencies=recorder.ready_latencies,
        ready_after_route=recorder.ready_after_route,
        converge_seconds=max(0.0, recorder.last_cloud_change - recorder.last_workload_change)
        if converged
        else -1.0,
        wrongful_deletes=recorder.wrongful_deletes,
        cpu_seconds=round(loop.cpu["controller"], 3),
        peak_rss_bytes=max(0, peak - baseline),
        call_times=[c.time for c in cloud.calls],
        batched_writes=cloud.batches,
        faults=faults,
        replicas_started=pool.started,
        late_rss_growth_bytes=rss[-1] - rss[len(rss) // 3] if rss else 0,
        registrations=recorder.registrations,
        cidr_latencies=recorder.cidr_latencies,
        join_latencies=recorder.join_latencies,
        api_writes=writes,
        events=events,
        invariants={
            "wrongful_deletes": recorder.wrongful_deletes,
            "foreign_routes_touched": recorder.foreign_touched,
            "budget_overruns": cloud.count(outcome="throttled"),
            "concurrent_writers": pool.invariants.concurrent_writers,
            # Only a chaos run keeps a quiet period long enough to demand convergence.
            "unconverged_after_faults": len(expected ^ routed) if chaos else 0,
            "unhandled_exceptions": pool.invariants.unhandled_exceptions + len(failures) + crashed,
            "cidr_reused_while_routed": reuse.reused_while_routed,
        },
    )


def _settings(job: Job, *, kubeconfig: str, elected: bool) -> Settings:
    flags = profile_flags(job.profile, budget_qps=job.cloud.qps, budget_burst=job.cloud.burst)
    flags += scenario_flags(job.scenario, nodes=job.nodes, pool_blocks=job.pool_blocks)
    if elected:
        flags.append("--leader-elect=true")
    settings = parse_run_flags([*flags, *job.controller_flags])
    return dataclasses.replace(settings, kubeconfig=kubeconfig)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Companion:
    """Something a profile runs beside routectl (KCM's allocator): its task, and its end."""

    task: asyncio.Task[None]
    close: Callable[[], Awaitable[None]]


async def _kcm(job: Job, *, kubeconfig: str) -> Companion:
    loop = asyncio.get_running_loop()
    pool = pod_cidr_pool(job.scenario, nodes=job.nodes, pool_blocks=job.pool_blocks)
    allocator, task = await start_kcm(
        kubeconfig=kubeconfig,
        cluster_cidr=ip_network(pool),
        node_mask=POD_MASK,
        wall_clock=lambda: EPOCH + datetime.timedelta(seconds=loop.time()),
        seed=job.seed,
    )
    return Companion(task=task, close=allocator.kube.aclose)


COMPANIONS: dict[str, Callable[..., Awaitable[Companion]]] = {"kcm": _kcm}
"""How each companion a profile may name (before a ``+``) is started."""


async def start_companions(job: Job, *, kubeconfig: str) -> list[Companion]:
    """Start the companions ``job``'s profile names, metered apart from the controller."""
    token = COMPONENT.set("companions")
    try:
        names, _ = split_profile(job.profile)
        return [await COMPANIONS[name](job, kubeconfig=kubeconfig) for name in names]
    finally:
        COMPONENT.reset(token)


async def stop_companions(companions: Iterable[Companion]) -> int:
    """Stop every companion; how many had crashed before."""
    crashed = 0
    for companion in companions:
        task = companion.task
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        elif not task.cancelled() and task.exception() is not None:
            crashed += 1
        await companion.close()
    return crashed


def _quiet(settings: Settings) -> float:
    """How long a chaos run keeps still at the end: one backoff cap plus one resync."""
    resync = (
        settings.route_resync_period * 1.25
        if settings.watch_mode
        else settings.route_reconciliation_period
    )
    return settings.retry_backoff_cap + resync + 60.0


async def _drive(
    sim: Sim, job: Job, peak: int, *, pool: Pool, quiet: float, faults: list[str], rss: list[int]
) -> int:
    """Run the workload and the heartbeats for the job's duration; return the peak RSS."""
    scenario: Coroutine[Any, Any, object]
    if job.scenario in ELECTED:
        scenario = run_chaos(
            sim,
            pool,
            seed=job.seed,
            until=sim.now() + max(0.0, job.duration - quiet),
            injected=faults,
            only=burst_failover if job.scenario == "burst-failover" else None,
        )
    else:
        scenario = DRIVERS[job.scenario](sim, job.nodes)
    tasks = [asyncio.create_task(scenario), asyncio.create_task(sim.heartbeats())]
    try:
        end = sim.now() + job.duration
        while (left := end - sim.now()) > 0:
            await asyncio.sleep(min(60.0, left))
            rss.append(rss_bytes())
            peak = max(peak, rss[-1])
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return peak


PERIODIC_COST = 1.3
"""How much more a profile that lists and syncs every 10 s costs the simulator than one that
syncs on changes (an idle hour of 5,000 Nodes: about 29 s of CPU against 22 s)."""


def _expected_cost(job: Job) -> float:
    """A job's relative cost, to start the longest first: Nodes times simulated seconds."""
    periodic = split_profile(job.profile)[1] == "upstream-periodic"
    return job.nodes * job.duration * (PERIODIC_COST if periodic else 1.0)


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
        # The longest first, so that the last to finish is not a long one started late.
        order = sorted(range(len(jobs)), key=lambda i: -_expected_cost(jobs[i]))
        futures = {pool.submit(run_job, jobs[i]): i for i in order}
        done: dict[int, Result] = {}
        for future in concurrent.futures.as_completed(futures):
            result = future.result()
            done[futures[future]] = result
            with contextlib.suppress(Exception):
                on_done(result)
    return [done[i] for i in range(len(jobs))]

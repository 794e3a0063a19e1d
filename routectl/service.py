"""``routectl run`` and ``routectl plan``: the wiring of informer, queue, worker and lease.

Every long-lived task has an owner (one TaskGroup), so a crash in one stops the process
and Kubernetes restarts the pod. The informer runs on every replica (standbys stay warm);
only the leader runs the worker and the timers. Losing the lease cancels the worker at
once and the process exits 1; SIGTERM stops claiming syncs, lets the one in flight finish
within the grace period, releases the lease and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import signal
import socket
import sys
import uuid
from collections.abc import Mapping

from routectl.config import Settings
from routectl.controller import Controller
from routectl.informer import Informer, NodeStore
from routectl.kube import KubeClient, parse_node
from routectl.lease import ElectionSettings, LeaderElector, LeadershipLostError
from routectl.logs import configure_logging
from routectl.metrics import Metrics
from routectl.probes import ProbeServer
from routectl.provider import (
    CallPolicy,
    RateLimitedProvider,
    RouteProvider,
    batch_capable,
    load_factory,
)
from routectl.queue import CoalescingQueue
from routectl.reconcile import Plan, plan
from routectl.worker import run_worker

logger = logging.getLogger("routectl")

EXIT_OK = 0
EXIT_LOST_LEADERSHIP = 1
UNLIMITED = 1e9


def build_provider(settings: Settings, metrics: Metrics) -> RateLimitedProvider:
    """Load the configured plugin and put it behind the rate limiter."""
    factory = load_factory(settings.provider)
    inner = factory(cluster_name=settings.cluster_name, options=dict(settings.provider_options))
    return gate(inner, settings, metrics)


def gate(inner: RouteProvider, settings: Settings, metrics: Metrics) -> RateLimitedProvider:
    """Put ``inner`` behind the token bucket, concurrency limit, timeout and retries."""
    unlimited = settings.cloud_qps <= 0
    policy = CallPolicy(
        qps=UNLIMITED if unlimited else settings.cloud_qps,
        burst=int(UNLIMITED) if unlimited else settings.cloud_burst,
        concurrency=settings.max_concurrent_route_operations,
        timeout=settings.cloud_call_timeout,
        max_attempts=settings.cloud_max_attempts,
    )
    return RateLimitedProvider(inner, policy=policy, observer=metrics)


def default_identity() -> str:
    """``<pod or host name>_<uuid>``, like client-go's recommended identity."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4()}"


class Service:
    """One routectl process: informer, probes, and, while leading, the worker and timers."""

    def __init__(
        self,
        settings: Settings,
        *,
        kube: KubeClient,
        provider: RouteProvider,
        metrics: Metrics,
        identity: str,
    ) -> None:
        self.settings = settings
        self.kube = kube
        self.metrics = metrics
        self.store = NodeStore()
        min_interval = settings.min_sync_interval
        if settings.batch_writes and batch_capable(provider):
            min_interval = max(min_interval, settings.batch_write_interval)
        self.queue = CoalescingQueue(batch_window=settings.batch_window, min_interval=min_interval)
        self.controller = Controller(
            settings=settings, store=self.store, provider=provider, kube=kube, metrics=metrics
        )
        self.informer = Informer(
            kube=kube,
            store=self.store,
            on_change=lambda old, new: self.controller.observe(old, new, self.queue),
            on_relist=lambda reason: metrics.relists.labels(reason=reason).inc(),
        )
        self.elector = LeaderElector(
            kube=kube,
            settings=ElectionSettings(
                namespace=settings.leader_elect_resource_namespace,
                name=settings.leader_elect_resource_name,
                identity=identity,
                lease_duration=settings.leader_elect_lease_duration,
                renew_deadline=settings.leader_elect_renew_deadline,
                retry_period=settings.leader_elect_retry_period,
            ),
        )
        self.leading = False
        self.worker_alive = False
        self.worker_stopped = asyncio.Event()
        self.stopping = asyncio.Event()

    def ready(self) -> tuple[bool, str]:
        """Ready: the informer listed and is healthy, and a leader's worker is running.

        With ``--configure-cloud-routes=false`` nothing runs, and the process is ready as it
        is (like the CCM, it simply does not start the route controller).
        """
        if not self.settings.configure_cloud_routes:
            return True, "route configuration is off (--configure-cloud-routes=false)"
        if not self.informer.synced.is_set():
            return False, "informer has not listed Nodes yet"
        if not self.informer.healthy:
            return False, f"informer failing: {self.informer.last_error}"
        if self.leading and not self.worker_alive:
            return False, "leading but the worker is not running"
        return True, "ok"

    async def run(self) -> int:
        """Run until SIGTERM (0) or until leadership is lost (1)."""
        if not self.settings.configure_cloud_routes:
            logger.info("Will not configure cloud provider routes, --configure-cloud-routes: false")
            await self.stopping.wait()
            return EXIT_OK
        logger.info("Starting route controller")
        lost: BaseException | None = None
        try:
            async with asyncio.TaskGroup() as group:
                informer = group.create_task(self.informer.run())
                leader = group.create_task(self._leader())
                await self.stopping.wait()
                await self._shutdown(leader)
                informer.cancel()
        except* LeadershipLostError as group:
            lost = group.exceptions[0]
        if lost is not None:
            logger.error("Leadership lost, exiting: %s", lost)
            return EXIT_LOST_LEADERSHIP
        return EXIT_OK

    async def _leader(self) -> None:
        if self.settings.leader_elect:
            await self.elector.acquire()
        await self.informer.synced.wait()
        self.leading = True
        self.metrics.leader.set(1)
        try:
            async with asyncio.TaskGroup() as group:
                if self.settings.leader_elect:
                    group.create_task(self.elector.hold())
                group.create_task(self._work())
                group.create_task(self._timer())
        finally:
            self.leading = False
            self.metrics.leader.set(0)

    async def _work(self) -> None:
        self.queue.request(trigger="periodic", fresh_listing=True)
        self.worker_alive = True
        self.worker_stopped.clear()
        try:
            await run_worker(self.controller, self.queue)
        finally:
            self.worker_alive = False
            self.worker_stopped.set()

    async def _timer(self) -> None:
        """Periodic mode: a non-sliding ticker. Watch mode: a slow, jittered resync."""
        loop = asyncio.get_running_loop()
        if not self.settings.watch_mode:
            period = self.settings.route_reconciliation_period
            start = loop.time()
            ticks = 0
            while True:
                ticks += 1
                await asyncio.sleep(max(0.0, start + ticks * period - loop.time()))
                self.queue.request(trigger="periodic", fresh_listing=True)
        jitter = random.Random()  # noqa: S311 -- jitter, not cryptography
        while True:
            await asyncio.sleep(self.settings.route_resync_period * jitter.uniform(1.0, 1.25))
            self.queue.request(trigger="periodic", fresh_listing=True)

    async def _shutdown(self, leader: asyncio.Task[None]) -> None:
        """Stop claiming, let the sync in flight finish within the grace period, release."""
        logger.info("Shutting down route controller")
        self.queue.close()
        grace = self.settings.graceful_shutdown_timeout
        if self.worker_alive:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    await self.worker_stopped.wait()
        leader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await leader
        await self.elector.release()


async def run(settings: Settings) -> int:
    """``routectl run``: serve until stopped; the exit code says how it ended."""
    configure_logging(fmt=settings.log_format, verbosity=settings.verbosity)
    metrics = Metrics.create()
    async with contextlib.AsyncExitStack() as stack:
        provider = build_provider(settings, metrics)  # bad provider or options: fail before I/O
        stack.push_async_callback(provider.aclose)
        kube = await KubeClient.connect(kubeconfig=settings.kubeconfig)
        stack.push_async_callback(kube.aclose)
        service = Service(
            settings, kube=kube, provider=provider, metrics=metrics, identity=default_identity()
        )
        probes = ProbeServer(registry=metrics.registry, ready=service.ready)
        stack.push_async_callback(probes.aclose)
        await probes.start(settings.metrics_bind_address)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, service.stopping.set)
            stack.callback(loop.remove_signal_handler, signum)
        return await service.run()
    raise AssertionError("unreachable")  # pragma: no cover -- the stack does not swallow


async def plan_once(settings: Settings, *, output: str) -> int:
    """``routectl plan``: read Nodes and routes, print the plan, change nothing."""
    provider = build_provider(settings, Metrics.create())
    try:
        kube = await KubeClient.connect(kubeconfig=settings.kubeconfig)
    except BaseException:
        await provider.aclose()
        raise
    try:
        listing = await kube.list_nodes()
        nodes = [parse_node(item) for item in listing.items]
        routes = await provider.list_routes()
    finally:
        await provider.aclose()
        await kube.aclose()
    result = plan(nodes=nodes, routes=routes, cluster_cidrs=settings.cluster_cidrs)
    if output == "json":
        json.dump(plan_as_json(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(plan_as_table(result))
    return EXIT_OK


def plan_as_json(result: Plan) -> Mapping[str, object]:
    """The plan as plain JSON values (``routectl plan -o json``)."""
    return {
        "creates": [
            {
                "node": c.route.target_node,
                "cidr": c.route.destination_cidr,
                "name_hint": c.name_hint,
                "after_deleting": [r.name or r.destination_cidr for r in c.replaces],
            }
            for c in result.creates
        ],
        "deletes": [
            {
                "name": r.name,
                "node": r.target_node,
                "cidr": r.destination_cidr,
                "blackhole": r.blackhole,
            }
            for r in result.deletes
        ],
        "problems": [
            {"node": p.node, "reason": p.reason, "message": p.message} for p in result.problems
        ],
        "owned_routes": result.owned_routes,
    }


def plan_as_table(result: Plan) -> str:
    """The plan as a text table (``routectl plan``)."""
    rows = [("action", "node", "CIDR", "route name", "note")]
    rows += [
        ("delete", r.target_node or "-", r.destination_cidr, r.name, "blackhole" * r.blackhole)
        for r in result.deletes
    ]
    replaced = "after deleting the route it replaces"
    rows += [
        ("create", c.route.target_node, c.route.destination_cidr, "", replaced * bool(c.replaces))
        for c in result.creates
    ]
    rows += [
        ("problem", p.node or "-", "", "", f"{p.reason}: {p.message}") for p in result.problems
    ]
    if result.empty and not result.problems:
        rows.append(("-", "", "", "", "the cloud matches the cluster"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    title = f"routectl plan: {len(result.creates)} to create, {len(result.deletes)} to delete"
    lines = [
        title,
        *("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows),
    ]
    return "\n".join(lines) + "\n"

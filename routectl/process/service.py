"""One routectl process at run time: the informer, and, while leading, the worker and timers.

Every long-lived task has an owner (one TaskGroup), so a crash in one stops the process
and Kubernetes restarts the pod. The informer runs on every replica (standbys stay warm);
only the leader runs the worker and the timers. Losing the lease cancels the worker at
once and the process exits 1; SIGTERM stops claiming syncs, lets the one in flight finish
within the grace period, releases the lease and exits 0. The service is built by
:func:`routectl.process.wiring.build_service`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random

from routectl.cloud.gate import CloudGate
from routectl.config import Settings
from routectl.errors import LeadershipLostError
from routectl.kube.informer import Informer
from routectl.observe.metrics import Metrics
from routectl.process.election import LeaderElector
from routectl.sync.controller import Controller
from routectl.sync.queue import CoalescingQueue
from routectl.sync.worker import SyncHealth, run_worker

logger = logging.getLogger("routectl")

EXIT_OK = 0
EXIT_LOST_LEADERSHIP = 1


class Service:
    """One routectl process: informer, probes, and, while leading, the worker and timers."""

    def __init__(
        self,
        *,
        settings: Settings,
        informer: Informer,
        queue: CoalescingQueue,
        controller: Controller,
        elector: LeaderElector,
        provider: CloudGate,
        metrics: Metrics,
        rng: random.Random,
    ) -> None:
        self.settings = settings
        self.informer = informer
        self.store = informer.store
        self.queue = queue
        self.controller = controller
        self.elector = elector
        self.provider = provider
        self.metrics = metrics
        self._rng = rng
        self.health = SyncHealth()
        self.leading = False
        self.worker_alive = False
        self.worker_stopped = asyncio.Event()
        self.stopping = asyncio.Event()

    def ready(self) -> tuple[bool, str]:
        """Ready: the informer listed and is healthy, and a leader's worker is running (and
        node IPAM, when on, has not stopped for another allocator).

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
        if self.leading and not self.health.healthy:
            failed = self.health.failures
            return False, f"the last {failed} route syncs failed: {self.health.last_error}"
        ipam = self.controller.ipam
        if ipam is not None and ipam.stopped is not None:
            return False, f"node IPAM stopped: {ipam.stopped}"
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
            lost = _first_leaf(group)  # nested task groups: say the cause, not the group
        if lost is not None:
            logger.error("Leadership lost, exiting: %s", lost)
            return EXIT_LOST_LEADERSHIP
        return EXIT_OK

    async def _leader(self) -> None:
        if self.settings.leader_elect:
            await self.elector.acquire()
            # The burst is ours unless a predecessor may still have it counted.
            self.provider.budget.start_quiet_since(self.elector.quiet_since)
        # The first ListRoutes goes out beside the first Node list, not after it.
        self.controller.listing.prefetch()
        try:
            await self.informer.synced.wait()
        except BaseException:
            self.controller.listing.cancel()
            raise
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
            await run_worker(
                queue=self.queue,
                sync=self.controller.sync,
                settings=self.settings,
                metrics=self.metrics,
                rng=self._rng,
                health=self.health,
            )
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
        while True:
            await asyncio.sleep(self.settings.route_resync_period * self._rng.uniform(1.0, 1.25))
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


def _first_leaf(error: BaseException) -> BaseException:
    """The first error that is not an exception group, however deeply nested."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error

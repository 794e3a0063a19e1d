"""The controller replicas of one simulation: started, killed, restarted, and watched.

Each replica is routectl's real :class:`~routectl.process.service.Service` with its own API client
and its own gate to the cloud, started in the ``"controller"`` context so its CPU is
metered apart. Every cloud write passes :class:`_Fenced`, which counts a write sent by a
replica the Lease in the API server does not name as its holder at that moment: the "two
writers at once" invariant. A replica that exits (it lost its lease) or is killed is
replaced after a pause, as a Deployment would.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from collections.abc import Collection, Sequence

from routectl.config import Settings
from routectl.kube import KubeClient
from routectl.model import Route
from routectl.observe.metrics import Metrics
from routectl.process.service import EXIT_LOST_LEADERSHIP, EXIT_OK, Service
from routectl.process.wiring import Sources, build_service
from routectl.provider import BatchResult
from routectl.testing import FakeCloud, FakeProvider
from routectl_sim.apiserver import FakeApiServer
from routectl_sim.measure import COMPONENT

RESTART_DELAY = 10.0


@dataclasses.dataclass
class Replica:
    """One running controller process."""

    identity: str
    service: Service
    kube: KubeClient
    task: asyncio.Task[int]


@dataclasses.dataclass
class Invariants:
    """Counters of things that must never happen."""

    concurrent_writers: int = 0
    unhandled_exceptions: int = 0


class _Fenced:
    """A provider that reports writes made without sole leadership."""

    def __init__(self, inner: FakeProvider, pool: Pool, identity: str) -> None:
        self._inner = inner
        self._pool = pool
        self._identity = identity

    @property
    def supports_batch(self) -> bool:
        """As the wrapped provider."""
        return self._inner.supports_batch

    @property
    def supports_replace(self) -> bool:
        """As the wrapped provider."""
        return self._inner.supports_replace

    async def replace_route(self, old: Route, new: Route, *, name_hint: str) -> None:
        """Replace, checking leadership first."""
        self._check()
        await self._inner.replace_route(old, new, name_hint=name_hint)

    def _check(self) -> None:
        """A write must come from the replica the Lease names, at the moment it is sent."""
        if self._pool.elected and self._pool.holder() != self._identity:
            self._pool.invariants.concurrent_writers += 1

    async def list_routes(self) -> Collection[Route]:
        """List (reads are always allowed)."""
        return await self._inner.list_routes()

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Create, checking leadership first."""
        self._check()
        await self._inner.create_route(route, name_hint=name_hint)

    async def delete_route(self, route: Route) -> None:
        """Delete, checking leadership first."""
        self._check()
        await self._inner.delete_route(route)

    async def apply_routes(
        self, *, deletes: Sequence[Route], creates: Sequence[tuple[Route, str]]
    ) -> BatchResult:
        """A batch write, checking leadership first."""
        self._check()
        return await self._inner.apply_routes(deletes=deletes, creates=creates)

    async def aclose(self) -> None:
        """Close the wrapped provider."""
        await self._inner.aclose()


class Pool:
    """The replicas of one simulation."""

    def __init__(
        self, *, settings: Settings, cloud: FakeCloud, server: FakeApiServer, elected: bool
    ) -> None:
        self.settings = settings
        self.cloud = cloud
        self.server = server
        self.elected = elected
        self.replicas: list[Replica] = []
        self.invariants = Invariants()
        self.started = 0
        self._supervisor: asyncio.Task[None] | None = None

    async def start(self) -> Replica:
        """Start one more replica."""
        self.started += 1
        identity = f"replica-{self.started}"
        token = COMPONENT.set("controller")
        try:
            kube = await KubeClient.connect(kubeconfig=self.settings.kubeconfig)
            metrics = Metrics.create()
            inner = _Fenced(
                FakeProvider.over(self.cloud, self.settings.cluster_name), self, identity
            )
            service = build_service(
                self.settings,
                kube=kube,
                provider=inner,
                metrics=metrics,
                identity=identity,
                sources=_sources(identity),
            )
            task = asyncio.create_task(service.run())
        finally:
            COMPONENT.reset(token)
        replica = Replica(identity=identity, service=service, kube=kube, task=task)
        self.replicas.append(replica)
        return replica

    def supervise(self, *, size: int) -> None:
        """Keep ``size`` replicas running: replace any that exits, after a pause."""
        self._supervisor = asyncio.create_task(self._keep(size))

    async def _keep(self, size: int) -> None:
        while True:
            await asyncio.sleep(1.0)
            for replica in [r for r in self.replicas if r.task.done()]:
                await self._retire(replica)
            while len(self.replicas) < size:
                await asyncio.sleep(RESTART_DELAY)
                await self.start()

    async def _retire(self, replica: Replica) -> None:
        self.replicas.remove(replica)
        if not replica.task.cancelled():
            error = replica.task.exception()
            if error is not None or replica.task.result() not in (EXIT_OK, EXIT_LOST_LEADERSHIP):
                self.invariants.unhandled_exceptions += 1
        await replica.kube.aclose()

    def holder(self) -> str:
        """Who the Lease in the API server names as its holder now ("" when nobody)."""
        s = self.settings
        lease = self.server.get_lease(
            s.leader_elect_resource_namespace, s.leader_elect_resource_name
        )
        spec = (lease or {}).get("spec") or {}
        return str(spec.get("holderIdentity") or "")

    async def kill_leader(self) -> None:
        """Kill the leading replica without a goodbye (no lease release): a node crash."""
        for replica in self.replicas:
            if replica.service.leading:
                replica.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await replica.task
                return

    async def restart_leader(self) -> None:
        """Stop the leading replica gracefully (it releases the Lease); the supervisor
        starts another after a pause."""
        for replica in self.replicas:
            if replica.service.leading:
                replica.service.stopping.set()
                await asyncio.gather(replica.task, return_exceptions=True)
                return

    async def stop(self) -> None:
        """Stop every replica gracefully."""
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        for replica in list(self.replicas):
            replica.service.stopping.set()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(replica.task, return_exceptions=True)
            await self._retire(replica)


def _sources(identity: str) -> Sources:
    """A replica's randomness, seeded by its name so a run can be repeated."""
    return dataclasses.replace(Sources.system(), rng=random.Random(identity))  # noqa: S311

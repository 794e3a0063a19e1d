"""Node IPAM inside the sync: pod CIDRs for Nodes without them, then routed at once.

:class:`NodeIpam` is the I/O edge of the pure allocator (:mod:`routectl.ipam`). The
controller calls :meth:`NodeIpam.step` once per sync, after the listing and before the
plan, and it:

1. on the first sync of a leadership, rebuilds the allocator from the API: the Node
   store (the informer has synced), the claim Leases, ServiceCIDRs, the listing;
2. judges the quarantine by a fresh listing, and frees reusable blocks (claim deleted
   first);
3. plans (oldest Node first, lowest free block) and, per Node, creates the claims, then
   patches ``spec.podCIDR(s)``, a bounded number at a time; a claim someone else holds
   makes that block foreign and the Node is planned again; a crash between claim and patch
   resumes to the same CIDR;
4. waits (briefly) for the informer's echo of each patch, so the route planner sees the
   new pod CIDRs in this same sync, with no extra ListRoutes;
5. tells (:mod:`routectl.ipam_report`): ``CIDRNotAvailable`` once per Node per wait,
   findings once, 80 %/95 % pool warnings once per crossing, metrics;
6. asks for a sync when a quarantined block may become reusable while Nodes wait (at once,
   on a fresh listing, when a block past its delay only waits for one: the Node gets that
   block instead of a ``CIDRNotAvailable``).

Every write goes through the fenced writer, as a child of the sync. A write that fails is
returned to the controller, which fails the sync (retried with backoff); a reservation
survives it, so the retry writes the same CIDR.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any

from routectl.cidr import Network, canonical
from routectl.config import Settings
from routectl.errors import KubeError
from routectl.informer import NodeStore
from routectl.ipam import Allocation, Allocator, Pools, rebuild
from routectl.ipam.objects import CIDR_ASSIGNMENT_FAILED, node_patch, service_cidrs
from routectl.ipam_claims import ClaimLeases, IpamReader
from routectl.ipam_metrics import IpamMetrics
from routectl.ipam_report import USAGE_EVERY, IpamReport
from routectl.listing import Listing
from routectl.model import NodeView
from routectl.status import IpamWriter, NodeStatus

logger = logging.getLogger("routectl.ipam")
CONCURRENCY = 32
"""Nodes whose claims and patch are in flight at once."""
ECHO_WAIT = 5.0
"""How long a sync waits for the informer to show the pod CIDRs it wrote."""
ROUNDS = 3
"""Plans per sync (a claim held elsewhere makes the Node plan again)."""
HTTP_NOT_FOUND = 404


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Assigned:
    """What a step wrote: Nodes now showing their new pod CIDRs, and failed writes."""

    names: frozenset[str] = frozenset()
    cidrs: frozenset[str] = frozenset()
    errors: tuple[KubeError, ...] = ()


def pools_of(settings: Settings) -> Pools:
    """The pools, masks and static exclusions ``settings`` configure."""
    return Pools.build(
        cluster_cidrs=settings.cluster_cidrs,
        additional=settings.additional_cluster_cidrs,
        masks=settings.node_masks,
        exclusions=(*settings.service_cluster_ip_range, *settings.pod_cidr_exclude),
    )


class NodeIpam:
    """Allocates pod CIDRs in the sync, through the fence."""

    def __init__(
        self,
        *,
        settings: Settings,
        reader: IpamReader,
        writer: IpamWriter,
        store: NodeStore,
        status: NodeStatus,
        metrics: IpamMetrics,
        clock: Callable[[], float],
        wall_clock: Callable[[], Any],
        request_sync: Callable[[bool], None],
    ) -> None:
        self.settings = settings
        self.pools = pools_of(settings)
        self.state: Allocator | None = None
        self._reader, self._writer, self._store = reader, writer, store
        self._status, self._metrics = status, metrics
        self._clock, self._wall_clock, self._request = clock, wall_clock, request_sync
        self._claims = ClaimLeases(
            reader=reader,
            writer=writer,
            namespace=settings.leader_elect_resource_namespace,
            enabled=settings.pod_cidr_claims == "lease",
        )
        self._failed: set[str] = set()
        self._since: dict[str, float] = {}
        self._echoes: dict[str, tuple[tuple[str, ...], asyncio.Event]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._report = IpamReport(
            store=store,
            status=status,
            writer=writer,
            metrics=metrics,
            event_type=settings.ipam_event_type,
            wall_clock=wall_clock,
        )

    # -- fed by the informer ------------------------------------------------------------------

    def note(self, old: NodeView | None, new: NodeView | None) -> bool:
        """A Node changed (the informer's callback): keep the allocator current.

        True when the change is the echo of a patch a sync in flight waits for: that sync
        routes the Node, so the change needs no sync of its own.
        """
        now = self._clock()
        if new is not None and not new.pod_cidrs:
            self._since.setdefault(new.name, now)
        elif new is None and old is not None:
            self._since.pop(old.name, None)
        echo = self._echoes.get(new.name) if new is not None else None
        own = new is not None and echo is not None and tuple(new.pod_cidrs) == echo[0]
        if echo is not None and own:
            echo[1].set()
        if self.state is not None:
            self.state.observe(old, new, now=now)
        return own

    @property
    def route_cidrs(self) -> tuple[Network, ...]:
        """The ranges whose routes are routectl's: every active and draining pool."""
        if self.state is None:
            return self.settings.route_cidrs
        return tuple(p.network for p in self.state.pools.all)

    def routes_deleted(self, destinations: Collection[str]) -> None:
        """The sync deleted these routes: their blocks' quarantine starts now."""
        if self.state is not None and destinations:
            now = self._clock()
            self.state.quarantined.deleted(destinations, at=now)
            self._wake(self.state, now)

    # -- one step of a sync -------------------------------------------------------------------

    async def step(self, listing: Listing) -> Assigned:
        """Rebuild if needed, free what may be reused, allocate, tell; see the module doc."""
        now = self._clock()
        routes = (
            frozenset(canonical(r.destination_cidr) for r in listing.routes)
            if listing.fresh or self.state is None
            else None
        )
        if self.state is None:
            self.state = await self._rebuild(routes or frozenset(), now)
        elif routes is not None:
            self.state.quarantined.listed(routes, at=now)
        errors = await self._reuse(self.state, now)
        assigned, failed = await self._allocate(self.state, now)
        hold = self.state.quarantined.awaits_listing(now)
        await self._report.tell(self.state, now, hold=hold)
        self._wake(self.state, now)
        return Assigned(
            names=frozenset(assigned),
            cidrs=frozenset(str(c) for name in assigned for c in self.state.held(name)),
            errors=(*errors, *failed),
        )

    async def _rebuild(self, routes: frozenset[str], now: float) -> Allocator:
        claims = await self._claims.load()
        rebuilt = rebuild(
            pools=self.pools,
            nodes=self._store.values(),
            claims=claims,
            routes=routes,
            now=now,
            reuse_delay=self.settings.pod_cidr_reuse_delay,
            exclusions={"servicecidrs": await self._service_cidrs()},
        )
        self._metrics.claims.labels(state="orphaned").set(len(rebuilt.orphans))
        state = rebuilt.allocator
        drains = ",".join(str(p.network) for p in state.pools.draining)
        logger.info(
            "Node IPAM rebuilt from %d Nodes, %d claims and %d routes: %d pending, "
            "%d quarantined%s",
            len(self._store),
            len(claims),
            len(routes),
            len(state.pending),
            len(state.quarantined),
            f", draining pools {drains}" if drains else "",
        )
        return state

    async def _service_cidrs(self) -> list[Network]:
        try:
            objects = await self._reader.list_service_cidrs()
        except KubeError as exc:
            logger.warning("ServiceCIDRs not read (excluding only the flags' ranges): %s", exc)
            return []
        return service_cidrs(objects)

    async def _reuse(self, state: Allocator, now: float) -> list[KubeError]:
        """Free the blocks whose quarantine is over; their claims go first."""
        errors: list[KubeError] = []
        for network in state.quarantined.reusable(now):
            error = await self._claims.release(network)
            if error is not None:
                errors.append(error)
            else:
                state.free(network)
        return errors

    async def _allocate(self, state: Allocator, now: float) -> tuple[list[str], list[KubeError]]:
        assigned: list[str] = []
        errors: list[KubeError] = []
        limit = asyncio.Semaphore(CONCURRENCY)
        for _ in range(ROUNDS):
            decision = state.plan()
            todo = [a for a in decision.allocations if self._live(a)]
            if not todo:
                break
            again = False

            async def one(a: Allocation) -> None:
                nonlocal again
                async with limit:
                    outcome = await self._write(state, a)
                if outcome == "planned-again":
                    again = True
                elif isinstance(outcome, KubeError):
                    errors.append(outcome)
                elif outcome == "written":
                    assigned.append(a.node)

            async with asyncio.TaskGroup() as group:
                for allocation in todo:
                    group.create_task(one(allocation))
            if not again:
                break
        await self._await_echoes(assigned)
        for name in assigned:
            since = self._since.pop(name, None)
            if since is not None:
                self._metrics.allocation_seconds.observe(now - since)
        shown = [n for n in assigned if (v := self._store.get(n)) is not None and v.pod_cidrs]
        return shown, errors

    def _live(self, a: Allocation) -> bool:
        node = self._store.get(a.node)
        return node is not None and node.uid == a.uid and not node.pod_cidrs

    async def _write(self, state: Allocator, a: Allocation) -> str | KubeError:
        """Claim each CIDR, then patch the Node: ``written``, ``planned-again``, ``left``."""
        if self._claims.enabled:
            for network in a.cidrs:
                held = await self._claims.take(state, a, network)
                if isinstance(held, KubeError):
                    return held
                if not held:
                    state.unreserve(a.node)
                    return "planned-again"
        texts = tuple(str(c) for c in a.cidrs)
        self._echoes[a.node] = (texts, asyncio.Event())
        try:
            await self._writer.patch_node(a.node, node_patch(a.cidrs))
        except KubeError as exc:
            self._echoes.pop(a.node, None)
            self._metrics.allocations.labels(result="failed").inc()
            if exc.status == HTTP_NOT_FOUND:
                return "left"  # the Node is gone: its delete releases the reservation
            logger.error("Failed to update node %s PodCIDR %s: %s", a.node, texts, exc)  # noqa: TRY400
            if a.node not in self._failed and (node := self._store.get(a.node)) is not None:
                self._failed.add(a.node)
                await self._report.event(node, CIDR_ASSIGNMENT_FAILED, str(exc))
            return exc
        self._metrics.allocations.labels(result="allocated").inc()
        self._failed.discard(a.node)
        logger.info("Set node %s PodCIDR to %s", a.node, list(texts))
        return "written"

    async def _await_echoes(self, names: Sequence[str]) -> None:
        events = [self._echoes[n][1] for n in names if n in self._echoes]
        try:
            async with asyncio.timeout(ECHO_WAIT):
                for event in events:
                    await event.wait()
        except TimeoutError:
            logger.warning("The informer has not shown every new pod CIDR yet; routing follows")
        for name in names:
            self._echoes.pop(name, None)

    def _wake(self, state: Allocator, now: float) -> None:
        """While Nodes wait, ask for a sync when a quarantined block may be reusable: at
        once, on a fresh listing, when a block only waits for one."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        upcoming = state.quarantined.next_reuse() if self._report.short else None
        if upcoming is None:
            return
        if state.quarantined.awaits_listing(now):
            upcoming = (now, True)
        at, fresh = upcoming
        if at <= now and not fresh:  # past the delay, but the last listing still shows it
            at, fresh = now + max(USAGE_EVERY, self.settings.listing_max_age), True
        loop = asyncio.get_running_loop()
        self._timer = loop.call_at(max(at, now), self._request, fresh)

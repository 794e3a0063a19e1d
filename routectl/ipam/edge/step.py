"""Node IPAM inside the sync: pod CIDRs for Nodes without them, then routed at once.

:class:`NodeIpam` is the I/O edge of the pure allocator (:mod:`routectl.ipam.core`). The
controller calls :meth:`NodeIpam.step` once per sync, after the listing and before the
plan, and it:

1. on the first sync of a leadership, rebuilds the allocator from the API: the Node
   store (the informer has synced), the claim Leases, ServiceCIDRs, the listing;
2. judges the quarantine by a fresh listing, and frees reusable blocks (claim deleted
   first);
3. plans (oldest Node first, lowest free block) and has :mod:`routectl.ipam.edge.writer` create
   the claims, then patch ``spec.podCIDR(s)``, a bounded number at a time; a claim someone
   else holds makes that block foreign and the Node is planned again; a crash between claim
   and patch resumes to the same CIDR;
4. waits (briefly) for the informer's echo of each patch, so the route planner sees the
   new pod CIDRs in this same sync, with no extra ListRoutes;
5. tells (:mod:`routectl.ipam.edge.report`): ``CIDRNotAvailable`` once per Node per wait,
   findings once, 80 %/95 % pool warnings once per crossing, metrics;
6. asks for a sync when a quarantined block may become reusable while Nodes wait (at once,
   on a fresh listing, when a block past its delay only waits for one: the Node gets that
   block instead of a ``CIDRNotAvailable``).

Every write goes through the fenced writer, as a child of the sync. A write that fails is
returned to the controller, which fails the sync (retried with backoff); a reservation
survives it, so the retry writes the same CIDR.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection
from typing import Any, Protocol

from routectl.cidr import Network, canonical
from routectl.cloud.listing import Listing
from routectl.config import Settings
from routectl.errors import KubeError
from routectl.ipam.core import Allocator, Pools, PoolUsage, rebuild, usage
from routectl.ipam.core.objects import service_cidrs
from routectl.ipam.edge.leases import ClaimLeases, IpamReader
from routectl.ipam.edge.metrics import IpamMetrics
from routectl.ipam.edge.report import USAGE_EVERY, IpamReport
from routectl.ipam.edge.writer import CidrWriter
from routectl.kube.informer import NodeStore
from routectl.kube.node_status import IpamWriter, NodeStatus
from routectl.model import NodeView

logger = logging.getLogger("routectl.ipam")


class IpamApi(IpamReader, IpamWriter, Protocol):
    """What node IPAM reads and writes (the API client; writes fenced by the caller)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Wake:
    """While Nodes wait for a block: ask for a sync at ``at`` (the loop's time), ``fresh``
    when it must list the routes again (a quarantined block waits only for a listing)."""

    at: float
    fresh: bool


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Assigned:
    """What a step wrote: Nodes now showing their new pod CIDRs, and failed writes; and
    when to look again while Nodes wait (None: no need)."""

    names: frozenset[str] = frozenset()
    cidrs: frozenset[str] = frozenset()
    errors: tuple[KubeError, ...] = ()
    wake: Wake | None = None


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
    ) -> None:
        self.settings = settings
        self.pools = pools_of(settings)
        self.state: Allocator | None = None
        self._reader, self._writer, self._store = reader, writer, store
        self._status, self._metrics = status, metrics
        self._clock, self._wall_clock = clock, wall_clock
        self._claims = ClaimLeases(
            reader=reader,
            writer=writer,
            namespace=settings.leader_elect_resource_namespace,
            enabled=settings.pod_cidr_claims == "lease",
        )
        metrics.blocks.read_from(self._usage)
        self._report = IpamReport(
            store=store,
            status=status,
            writer=writer,
            metrics=metrics,
            event_type=settings.ipam_event_type,
            wall_clock=wall_clock,
        )
        self._cidrs = CidrWriter(
            store=store, writer=writer, claims=self._claims, metrics=metrics, report=self._report
        )

    # -- fed by the informer ------------------------------------------------------------------

    def note(self, old: NodeView | None, new: NodeView | None) -> bool:
        """A Node changed (the informer's callback): keep the allocator current.

        True when the change is the echo of a patch a sync in flight waits for: that sync
        routes the Node, so the change needs no sync of its own.
        """
        now = self._clock()
        own = self._cidrs.noticed(old, new, now=now)
        if self.state is not None:
            self.state.observe(old, new, now=now)
        return own

    def _usage(self) -> list[PoolUsage]:
        """The pools' usage now (read when Prometheus scrapes the block counts)."""
        return [] if self.state is None else usage(self.state, now=self._clock())

    @property
    def route_cidrs(self) -> tuple[Network, ...]:
        """The ranges whose routes are routectl's: every active and draining pool."""
        if self.state is None:
            return self.settings.route_cidrs
        return tuple(p.network for p in self.state.pools.all)

    def routes_deleted(self, destinations: Collection[str]) -> Wake | None:
        """The sync deleted these routes: their blocks' quarantine starts now. Returns when
        to look again while Nodes wait (None: no need)."""
        if self.state is None:
            return None
        now = self._clock()
        self.state.quarantined.deleted(destinations, at=now)
        return self._wake(self.state, now)

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
        assigned, failed = await self._cidrs.write(self.state, now)
        hold = self.state.quarantined.awaits_listing(now)
        await self._report.tell(self.state, now, hold=hold)
        return Assigned(
            names=frozenset(assigned),
            cidrs=frozenset(str(c) for name in assigned for c in self.state.held(name)),
            errors=(*errors, *failed),
            wake=self._wake(self.state, now),
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
        """Free the blocks whose quarantine is over (their claims go first)."""
        errors = []
        for network in state.quarantined.reusable(now):
            error = await self._claims.release(network)
            if error is not None:
                errors.append(error)
            else:
                state.free(network)
        return errors

    def _wake(self, state: Allocator, now: float) -> Wake | None:
        """While Nodes wait, when a quarantined block may be reusable: at once, on a fresh
        listing, when a block only waits for one."""
        upcoming = state.quarantined.next_reuse() if self._report.short else None
        if upcoming is None:
            return None
        if state.quarantined.awaits_listing(now):
            upcoming = (now, True)
        at, fresh = upcoming
        if at <= now and not fresh:  # past the delay, but the last listing still shows it
            at, fresh = now + max(USAGE_EVERY, self.settings.listing_max_age), True
        return Wake(at=max(at, now), fresh=fresh)

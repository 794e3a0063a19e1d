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

**One allocator only.** The Nodes' pod CIDRs found at the rebuild are adopted as they are
(whoever wrote them: the migration from KCM's allocator). After it, a pod CIDR inside
routectl's pools that routectl did not write (not the echo of its own patch, not its
reservation, and with claims on, no claim of that Node's) means another allocator runs
beside it (KCM's ``--allocate-node-cidrs=true``, say). Then routectl stops allocating for
the rest of the process, no write in flight goes out after it is noticed, and it says so
once: an ERROR line, a Warning Event (``OtherPodCIDRAllocator``) on the Node and on
routectl's Lease, ``routectl_ipam_other_allocator`` 1, and ``/readyz`` fails with the
reason (:attr:`NodeIpam.stopped`). Routes are still programmed. A CIDR another writer put on
a Node is taken in the allocator either way, so it is never handed out again. Detection,
not prevention: two allocators racing within one request can still pick the same block.

Every write goes through the fenced writer, as a child of the sync. A write that fails is
returned to the controller, which fails the sync (retried with backoff); a reservation
survives it, so the retry writes the same CIDR.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection
from typing import Any, Protocol

from routectl.cidr import Network, canonical, network_or_none
from routectl.cloud.listing import Listing
from routectl.config import Settings
from routectl.errors import KubeError
from routectl.ipam.core import Allocator, Pools, PoolUsage, rebuild, usage
from routectl.ipam.core.objects import OTHER_ALLOCATOR, service_cidrs
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
        self._suspects: dict[str, NodeView] = {}
        self.stopped: str | None = None
        """Why allocation stopped (another allocator writes pod CIDRs), or None."""
        self._report = IpamReport(
            store=store,
            status=status,
            writer=writer,
            metrics=metrics,
            event_type=settings.ipam_event_type,
            wall_clock=wall_clock,
        )
        self._cidrs = CidrWriter(
            store=store,
            writer=writer,
            claims=self._claims,
            metrics=metrics,
            report=self._report,
            halted=lambda: self.stopped is not None or bool(self._suspects),
        )
        metrics.other_allocator.set(0)

    # -- fed by the informer ------------------------------------------------------------------

    def note(self, old: NodeView | None, new: NodeView | None) -> bool:
        """A Node changed (the informer's callback): keep the allocator current.

        True when the change is the echo of a patch a sync in flight waits for: that sync
        routes the Node, so the change needs no sync of its own.
        """
        now = self._clock()
        own = self._cidrs.noticed(old, new, now=now)
        if self.state is not None:
            if not own and new is not None and self._not_ours(self.state, old, new):
                self._suspects[new.name] = new
            self.state.observe(old, new, now=now)
        return own

    def _usage(self) -> list[PoolUsage]:
        """The pools' usage now (read when Prometheus scrapes the block counts)."""
        return [] if self.state is None else usage(self.state, now=self._clock())

    def _not_ours(self, state: Allocator, old: NodeView | None, new: NodeView) -> bool:
        """``new`` shows pod CIDRs in a pool that this allocator did not reserve for it."""
        if self.stopped is not None or not new.pod_cidrs:
            return False
        if old is not None and old.uid == new.uid and old.pod_cidrs == new.pod_cidrs:
            return False
        networks = {n for c in new.pod_cidrs if (n := network_or_none(c)) is not None}
        if not any(state.pools.containing(n) is not None for n in networks):
            return False
        return networks != set(state.held(new.name))

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
        judged = await self._judge()
        if self.stopped is not None or judged is not None:
            return Assigned(errors=(judged,) if judged is not None else ())
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

    async def _judge(self) -> KubeError | None:
        """Stop allocating if a suspect's pod CIDRs are not this allocator's (no claim of
        that Node stands behind them); a failed claim read is returned (judged again)."""
        for name, node in list(self._suspects.items()):
            networks = [n for c in node.pod_cidrs if (n := network_or_none(c)) is not None]
            for network in networks:
                if self.state is None or self.state.pool_of(network) is None:
                    continue
                held = await self._claims.holds(node, network)
                if isinstance(held, KubeError):
                    return held
                if not held:
                    self._suspects.clear()
                    await self._stop(node, network)
                    return None
            self._suspects.pop(name, None)
        return None

    async def _stop(self, node: NodeView, network: Network) -> None:
        """Another allocator wrote ``network`` to ``node``: stop, and say so once."""
        message = (
            f"node {node.name} got pod CIDR {network}, in routectl's pools, from another "
            "allocator (kube-controller-manager's --allocate-node-cidrs=true?): routectl stops "
            "allocating pod CIDRs so that no CIDR is handed out twice; routes are still "
            "programmed. Turn the other allocator off, then restart routectl "
            "(or drop --routectl-allocate-node-cidrs to keep the other one)"
        )
        self.stopped = message  # the step returns no wake-up from now on: the queue drops it
        self._metrics.other_allocator.set(1)
        logger.error("Node IPAM stopped: %s", message)
        await self._status.node_event(node, reason=OTHER_ALLOCATOR, message=message)
        await self._status.controller_event(reason=OTHER_ALLOCATOR, message=message)

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

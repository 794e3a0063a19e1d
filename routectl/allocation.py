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
5. tells: ``CIDRNotAvailable`` once per Node per wait, findings once, 80 %/95 % pool
   warnings once per crossing, metrics;
6. asks for a sync when a quarantined block may become reusable while Nodes wait.

Every write goes through the fenced writer, as a child of the sync. A write that fails is
returned to the controller, which fails the sync (retried with backoff); a reservation
survives it, so the retry writes the same CIDR.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol

from routectl.cidr import Network, canonical, network_or_none
from routectl.config import Settings
from routectl.errors import KubeError
from routectl.informer import NodeStore
from routectl.ipam import Allocation, Allocator, Claim, Levels, Pools, rebuild, usage
from routectl.ipam.objects import (
    CIDR_ASSIGNMENT_FAILED,
    CIDR_NOT_AVAILABLE,
    CLAIM_SELECTOR,
    POOL_FILLING,
    claim_body,
    claim_name,
    node_patch,
    parse_claim,
    status_message,
)
from routectl.ipam_metrics import IpamMetrics
from routectl.kube import node_event
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
USAGE_EVERY = 10.0
HTTP_NOT_FOUND, HTTP_CONFLICT = 404, 409


class IpamReader(Protocol):
    """The reads node IPAM makes (not fenced)."""

    async def list_leases(self, namespace: str, *, label_selector: str) -> list[dict[str, Any]]: ...

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def list_service_cidrs(self) -> list[dict[str, Any]]: ...


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
        self._namespace = settings.leader_elect_resource_namespace
        self._claims: dict[str, Claim] = {}
        self._told: set[tuple[str, str, str]] = set()
        self._waiting: set[str] = set()
        self._failed: set[str] = set()
        self._since: dict[str, float] = {}
        self._echoes: dict[str, tuple[tuple[str, ...], asyncio.Event]] = {}
        self._levels = Levels()
        self._usage_at = -USAGE_EVERY
        self._timer: asyncio.TimerHandle | None = None

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
        await self._tell(self.state, now)
        self._wake(self.state, now)
        return Assigned(
            names=frozenset(assigned),
            cidrs=frozenset(str(c) for name in assigned for c in self.state.held(name)),
            errors=(*errors, *failed),
        )

    async def _rebuild(self, routes: frozenset[str], now: float) -> Allocator:
        claims: list[Claim] = []
        if self.settings.pod_cidr_claims == "lease":
            raw = await self._reader.list_leases(self._namespace, label_selector=CLAIM_SELECTOR)
            claims = [c for c in map(parse_claim, raw) if c is not None]
        rebuilt = rebuild(
            pools=self.pools,
            nodes=self._store.values(),
            claims=claims,
            routes=routes,
            now=now,
            reuse_delay=self.settings.pod_cidr_reuse_delay,
            exclusions={"servicecidrs": await self._service_cidrs()},
        )
        self._claims = {c.name: c for c in claims}
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
        found = []
        for obj in objects:
            spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
            for text in (spec or {}).get("cidrs") or []:
                network = network_or_none(str(text))
                if network is not None:
                    found.append(network)
        return found

    async def _reuse(self, state: Allocator, now: float) -> list[KubeError]:
        """Free the blocks whose quarantine is over; their claims go first."""
        errors: list[KubeError] = []
        for network in state.quarantined.reusable(now):
            claim = next((c for c in self._claims.values() if c.network == network), None)
            if claim is not None or self.settings.pod_cidr_claims == "lease":
                name = claim.name if claim is not None else claim_name(network)
                try:
                    await self._writer.delete_lease(self._namespace, name)
                except KubeError as exc:
                    if exc.status != HTTP_NOT_FOUND:
                        errors.append(exc)
                        continue
                self._claims.pop(name, None)
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
        if self.settings.pod_cidr_claims == "lease":
            for network in a.cidrs:
                held = await self._claim(state, a, network)
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
                await self._event(node, CIDR_ASSIGNMENT_FAILED, str(exc))
            return exc
        self._metrics.allocations.labels(result="allocated").inc()
        self._failed.discard(a.node)
        logger.info("Set node %s PodCIDR to %s", a.node, list(texts))
        return "written"

    async def _claim(self, state: Allocator, a: Allocation, network: Network) -> bool | KubeError:
        """Make sure ``a.node`` holds the claim of ``network``; False if someone else does."""
        pool = state.pool_of(network)
        claim = Claim(network=network, node=a.node, uid=a.uid, pool=pool.network if pool else None)
        known = self._claims.get(claim.name)
        if known is not None and known.uid == a.uid:
            return True
        try:
            await self._writer.create_lease(
                self._namespace, claim_body(claim, namespace=self._namespace)
            )
        except KubeError as exc:
            if exc.status != HTTP_CONFLICT:
                return exc
            try:
                raw = await self._reader.get_lease(self._namespace, claim.name)
            except KubeError as read_error:
                return read_error
            theirs = parse_claim(raw) if raw is not None else None
            if theirs is not None and theirs.uid == a.uid:
                self._claims[claim.name] = theirs
                return True
            holder = theirs.node if theirs is not None else "unknown"
            logger.warning("Pod CIDR %s is claimed by %s elsewhere; not using it", network, holder)
            state.claimed_elsewhere(network, holder)
            return False
        self._claims[claim.name] = claim
        return True

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

    # -- telling ------------------------------------------------------------------------------

    async def _tell(self, state: Allocator, now: float) -> None:
        decision = state.plan()
        waiting = {w.node: w for w in decision.waiting}
        self._metrics.pending.set(len(state.pending))
        self._metrics.waiting.set(len(waiting))
        self._metrics.conflicts.set(state.conflicts)
        for name in self._waiting - set(waiting):
            self._waiting.discard(name)
        for name, why in waiting.items():
            node = self._store.get(name)
            if name in self._waiting or node is None:
                continue
            self._waiting.add(name)
            logger.warning("No pod CIDR for node %s: %s", name, why.message)
            await self._event(node, CIDR_NOT_AVAILABLE, why.message)
            error = await self._status.write_condition(name, created=False)
            if error is not None:
                logger.warning("Could not mark node %s NetworkUnavailable: %s", name, error)
        for findings in list(state.findings.values()):
            for f in findings:
                key = (f.node, f.reason, f.message)
                if key in self._told:
                    continue
                self._told.add(key)
                self._metrics.findings.labels(reason=f.reason).inc()
                logger.warning("%s: %s", f.reason, f.message)
                node = self._store.get(f.node)
                if f.warning and node is not None:
                    await self._status.node_event(node, reason=f.reason, message=f.message)
        if waiting or now - self._usage_at >= USAGE_EVERY:
            self._usage_at = now
            await self._usage(state)

    async def _usage(self, state: Allocator) -> None:
        usages = usage(state)
        for each in usages:
            labels = {"pool": str(each.pool.network), "family": f"IPv{each.pool.network.version}"}
            for name in ("free", "used", "quarantined", "excluded", "foreign"):
                self._metrics.blocks.labels(**labels, state=name).set(getattr(each, name))
        for each, level in self._levels.crossed(usages):
            logger.warning("%s", each.message(level))
            await self._status.controller_event(reason=POOL_FILLING, message=each.message(level))

    async def _event(self, node: NodeView, reason: str, detail: str) -> None:
        body = node_event(
            node=node,
            reason=reason,
            message=status_message(node.name, reason, detail),
            event_type=self.settings.ipam_event_type,
            now=self._wall_clock(),
            component="cidrAllocator",
        )
        try:
            await self._writer.create_event(body)
        except KubeError as exc:
            logger.warning("Could not record event %s: %s", reason, exc)

    def _wake(self, state: Allocator, now: float) -> None:
        """While Nodes wait, ask for a sync when a quarantined block may be reusable."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        upcoming = state.quarantined.next_reuse() if self._waiting else None
        if upcoming is None:
            return
        at, fresh = upcoming
        if at <= now and not fresh:  # past the delay, but the last listing still shows it
            at, fresh = now + max(USAGE_EVERY, self.settings.listing_max_age), True
        loop = asyncio.get_running_loop()
        self._timer = loop.call_at(max(at, now), self._request, fresh)

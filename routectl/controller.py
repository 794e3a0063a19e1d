"""The route controller: one sync, top-down.

A sync (:meth:`Controller.sync`):

1. takes the Node changes since the last sync (:mod:`routectl.changes`);
2. gets the routes: a fresh listing, or the cached one (:mod:`routectl.listing`), even an
   old one: a new Node's route is never held back by a ListRoutes; a sync that planned on
   an old listing asks for a fresh one behind its writes, and a failed sync throws the
   cached listing away;
   with ``--allocate-node-cidrs``, node IPAM's step (:mod:`routectl.allocation`) then gives
   pod CIDRs to the Nodes without them, which this same sync routes;
3. plans with the pure planner, over the whole cluster or only the changes' scope
   (:mod:`routectl.reconcile`, :mod:`routectl.scope`); a plan that would delete a route
   whose cloud name we do not know yet plans again on a fresh listing;
4. reports input problems once (:mod:`routectl.status`);
5. withholds mass deletes (:mod:`routectl.guard`);
6. applies the plan, per route or batched (:mod:`routectl.apply`), remembering its own
   writes in the cached listing, and writes each Node's NetworkUnavailable where it must
   change the moment that Node's own routes are settled (:mod:`routectl.readiness`).

A sync that wrote asks for a fresh listing :data:`VERIFY_AFTER` seconds later; that listing
confirms each write the cloud acknowledged, and one it does not show is counted
(``routectl_unconfirmed_writes_total``), said, and written again by the plan on it.

Anything that failed makes the sync raise :class:`~routectl.errors.SyncFailedError` (an
exception group of every failed call and write), and the changes go back for the next
sync; the worker (:mod:`routectl.worker`) decides when that is.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence

from routectl.allocation import NodeIpam
from routectl.apply import Applied, CreateDone, apply_batch, apply_routes
from routectl.changes import Changes, Dirty
from routectl.cidr import canonical
from routectl.config import Settings
from routectl.errors import ProviderError, RoutectlError, SyncFailedError
from routectl.guard import Verdict, guard
from routectl.informer import NodeStore
from routectl.listing import Listing, ListingCache
from routectl.metrics import Metrics
from routectl.model import NodeView, Route
from routectl.provider import RouteProvider, batch_capable
from routectl.queue import Batch
from routectl.readiness import ConditionStream
from routectl.reconcile import Plan, plan
from routectl.scope import scope
from routectl.status import NodeStatus

logger = logging.getLogger(__name__)
VERIFY_AFTER = 5.0
"""Seconds after a sync that wrote until a fresh listing confirms its writes (one listing,
whatever the number of writes; a write acknowledged but not carried out is caught then)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Planned:
    """A plan and the Nodes it covers: all of them (``full``) or a change's scope."""

    plan: Plan
    nodes: Sequence[NodeView]
    full: bool


class Controller:
    """Syncs the cloud's routes with the Nodes in a :class:`NodeStore`."""

    def __init__(
        self,
        *,
        settings: Settings,
        store: NodeStore,
        changes: Changes,
        listing: ListingCache,
        provider: RouteProvider,
        status: NodeStatus,
        metrics: Metrics,
        clock: Callable[[], float],
        request_fresh: Callable[[], None],
        ipam: NodeIpam | None = None,
    ) -> None:
        self.settings = settings
        self.ipam = ipam
        """Node IPAM (``--allocate-node-cidrs``): pod CIDRs allocated before planning."""
        self.request_fresh = request_fresh
        """Ask for a sync on a fresh listing (after one planned on a stale listing)."""
        self.store = store
        self.changes = changes
        self.listing = listing
        self.provider = provider
        self.status = status
        self.metrics = metrics
        self.clock = clock
        self.syncs = 0
        self.last: Planned | None = None
        self._guard_tripped = False
        self._again: asyncio.TimerHandle | None = None
        self._verify: asyncio.TimerHandle | None = None
        self._unconfirmed: dict[tuple[str, str], str] = {}
        """(target Node, canonical CIDR) -> "create"/"delete": writes the cloud acknowledged
        that no listing has shown yet."""

    async def sync(self, batch: Batch) -> None:
        """Run one sync; raises SyncFailedError (or a provider/kube error) if anything failed."""
        started, outcome = self.clock(), "error"
        trigger = "node_change" if batch.triggers - {"periodic"} else "periodic"
        dirty = self.changes.take()
        try:
            fresh = batch.fresh_listing or not self.settings.watch_mode
            changed = await self._reconcile(dirty, fresh=fresh)
            outcome = "changed" if changed else "noop"
        except BaseException:
            self.changes.restore(dirty)
            raise
        finally:
            self.syncs += 1
            self.metrics.syncs.labels(trigger=trigger, outcome=outcome).inc()
            self.metrics.sync_duration.observe(self.clock() - started)

    async def _reconcile(self, dirty: Dirty, *, fresh: bool) -> bool:
        try:
            listing = await self.listing.get(fresh=fresh or self.changes.needs_full)
        except ProviderError as exc:
            await self.status.routes_blocked(self.changes.waiting(), exc)
            raise
        if listing.fresh:
            self._confirm(listing.routes)
        dirty, allocation_errors = await self._allocate(listing, dirty)
        work = self._plan(listing, dirty)
        if self.listing.must_relist(work.plan):
            work = self._plan(await self.listing.get(fresh=True), dirty)
        self.last = work
        await self.status.report_problems(work.plan, work.nodes, full=work.full)
        verdict = await self._guard(work.plan)
        try:
            applied = await self._carry_out(work, verdict.plan)
        except BaseException:
            # A full sync that failed may have left work anywhere: the next one is full too,
            # on a fresh listing (a failure may mean our view of the cloud is wrong).
            self.changes.needs_full |= work.full
            self.listing.invalidate()
            raise
        self.changes.needs_full &= not work.full
        self._to_confirm(applied)
        if verdict.tripped:
            self._look_again()
        if listing.stale:
            # The writes went out on an old listing; now look again, behind them.
            self.request_fresh()
        if allocation_errors:
            raise SyncFailedError(
                f"{len(allocation_errors)} pod CIDR write(s) failed; first: {allocation_errors[0]}",
                allocation_errors,
            )
        return applied.changed

    async def _allocate(self, listing: Listing, dirty: Dirty) -> tuple[Dirty, list[RoutectlError]]:
        """Node IPAM's step: pod CIDRs for the Nodes without them, planned in this sync."""
        if self.ipam is None:
            return dirty, []
        assigned = await self.ipam.step(listing)
        merged = Dirty(dirty.names | assigned.names, dirty.cidrs | assigned.cidrs)
        return merged, list(assigned.errors)

    def _plan(self, listing: Listing, dirty: Dirty) -> Planned:
        """Plan over every Node, or only over what the changes can affect."""
        started = self.clock()
        full = listing.fresh or not dirty.worth_scoping(len(self.store))
        nodes: Sequence[NodeView] = self.store.values()
        routes = listing.routes
        if not full:
            nodes, routes = scope(
                changed=dirty.names,
                nodes=self.store.mapping(),
                claims=self.changes.claims,
                routes=listing.index,
                changed_cidrs=dirty.cidrs,
            )
        cidrs = self.ipam.route_cidrs if self.ipam else self.settings.cluster_cidrs
        result = plan(nodes=nodes, routes=routes, cluster_cidrs=cidrs)
        duration = self.metrics.plan_duration.labels(scope="full" if full else "changes")
        duration.observe(self.clock() - started)
        return Planned(plan=result, nodes=nodes, full=full)

    async def _guard(self, result: Plan) -> Verdict:
        s = self.settings
        verdict = guard(
            result,
            owned=self.listing.owned,
            nodes=len(self.store),
            threshold=s.mass_delete_threshold,
            allow=s.allow_mass_delete,
        )
        if verdict.tripped:
            self.metrics.mass_delete_blocked.inc()
            logger.error(verdict.message)
            if not self._guard_tripped:
                await self.status.controller_event(
                    reason="MassDeleteRefused", message=verdict.message
                )
        self._guard_tripped = verdict.tripped
        return verdict

    def _look_again(self) -> None:
        """The guard withheld deletes: plan again on a fresh listing at the backoff cap (a
        garbled listing that tripped it heals then; one listing per cap while it holds),
        without holding back the syncs that Node changes ask for meanwhile."""
        if self._again is None:
            self._again = asyncio.get_running_loop().call_later(
                self.settings.retry_backoff_cap, self._again_due
            )

    def _to_confirm(self, applied: Applied) -> None:
        """Remember this sync's acknowledged writes, and list again soon to confirm them."""
        for c in applied.created:
            self._unconfirmed[_key(c.route)] = "create"
        for route in applied.deleted:
            self._unconfirmed[_key(route)] = "delete"
        if applied.changed and self._verify is None:
            self._verify = asyncio.get_running_loop().call_later(VERIFY_AFTER, self._verify_due)

    def _verify_due(self) -> None:
        self._verify = None
        self.request_fresh()

    def _confirm(self, routes: Sequence[Route]) -> None:
        """A fresh listing: every acknowledged write it does not show is counted and said
        (the plan on this listing writes it again, and the Node's condition follows)."""
        if not self._unconfirmed:
            return
        listed = {_key(r) for r in routes if not r.blackhole}
        for (node, cidr), operation in sorted(self._unconfirmed.items()):
            shown = (node, cidr) in listed
            if shown == (operation == "create"):
                continue
            self.metrics.unconfirmed_writes.labels(operation=operation).inc()
            logger.warning(
                "The cloud acknowledged the %s of the route to %s via node %s, but the listing "
                "after it %s; writing it again",
                operation,
                cidr,
                node,
                "does not show it" if operation == "create" else "still shows it",
                extra={"node": node, "cidr": cidr},
            )
        self._unconfirmed.clear()

    def _again_due(self) -> None:
        self._again = None
        self.request_fresh()

    async def _carry_out(self, work: Planned, result: Plan) -> Applied:
        """Apply ``result``, each Node's condition written as soon as its routes are settled;
        raise SyncFailedError if any call or write failed."""
        async with asyncio.TaskGroup() as group:
            stream = ConditionStream(
                status=self.status, nodes=work.nodes, plan=result, group=group, on_ready=self._ready
            )
            stream.open()
            applied = await self._apply(result, stream.create_done)
            self.listing.remember(
                deleted=applied.deleted, created=[c.route for c in applied.created]
            )
            if self.ipam is not None:
                self.ipam.routes_deleted([r.destination_cidr for r in applied.deleted])
        errors: list[RoutectlError] = [*applied.errors, *stream.errors]
        if errors:
            raise SyncFailedError(_summary(applied, errors), errors)
        return applied

    async def _apply(self, result: Plan, done: CreateDone) -> Applied:
        if not result.empty and self.settings.batch_writes and batch_capable(self.provider):
            return await apply_batch(result, provider=self.provider, on_create_done=done)
        return await apply_routes(result, provider=self.provider, on_create_done=done)

    def _ready(self, name: str) -> None:
        """``name`` has all its routes: observe how long it waited for them."""
        for seconds in self.changes.routed([name], now=self.clock()):
            self.metrics.route_latency.observe(seconds)


def _key(route: Route) -> tuple[str, str]:
    try:
        return route.target_node, canonical(route.destination_cidr)
    except ValueError:
        return route.target_node, route.destination_cidr


def _summary(applied: Applied, errors: Sequence[RoutectlError]) -> str:
    kube = len(errors) - len(applied.errors)
    return (
        f"{len(applied.errors)} cloud call(s) and {kube} Node write(s) failed; first: {errors[0]}"
    )

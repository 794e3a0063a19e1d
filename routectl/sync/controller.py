"""The route controller: one sync, top-down.

A sync (:meth:`Controller.sync`):

1. takes the Node changes since the last sync (:mod:`routectl.sync.changes`);
2. gets the routes: a fresh listing, or the cached one (:mod:`routectl.cloud.listing`), even an
   old one: a new Node's route is never held back by a ListRoutes; a sync that planned on
   an old listing asks for a fresh one behind its writes, and a failed sync throws the
   cached listing away;
   with ``--routectl-allocate-node-cidrs``, node IPAM's step
   (:mod:`routectl.ipam.edge.step`) then gives pod CIDRs to the Nodes without them,
   which this same sync routes;
3. plans with the pure planner, over the whole cluster or only the changes' scope
   (:mod:`routectl.plan.reconcile`, :mod:`routectl.plan.scope`); a plan that would delete a route
   whose cloud name we do not know yet plans again on a fresh listing;
4. reports input problems once (:mod:`routectl.kube.node_status`);
5. withholds mass deletes (:mod:`routectl.plan.guard`);
6. applies the plan, per route or batched (:mod:`routectl.sync.apply`), remembering its own
   writes in the cached listing, and writes each Node's NetworkUnavailable where it must
   change the moment that Node's own routes are settled (:mod:`routectl.sync.condition_stream`);
7. while it writes (watch mode, per-route writes, no node IPAM), takes on the Node changes
   that arrive meanwhile: each is planned over its scope against the cached listing and
   written at once, beside the sync's own writes, when it races none of them
   (:mod:`routectl.sync.sidework`: only creates, other Nodes, other destinations); a change it
   cannot take waits for the next sync, which the change has asked for already. A Node of
   a burst is then ready one write after it arrives, not after the writes in flight.

A sync that wrote (completely or not) asks for a fresh listing a few seconds later (a delayed
request on the queue; :mod:`routectl.sync.verify` says when, and keeps what it checks): each
acknowledged write that listing does not show is counted
(``routectl_unconfirmed_writes_total``), said (WARNING the first time, DEBUG after), and
written again by the plan on it; it stays in doubt, and its Node unrouted, until a listing
shows it.

Anything that failed makes the sync raise :class:`~routectl.errors.SyncFailedError` (an
exception group of every failed call and write), and the changes go back for the next
sync; the worker (:mod:`routectl.sync.worker`) decides when that is.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from routectl.cloud.listing import Listing, ListingCache
from routectl.config import Settings
from routectl.errors import ProviderError, RoutectlError, SyncFailedError
from routectl.kube.decode import collector_paused
from routectl.kube.informer import NodeStore
from routectl.kube.node_status import NodeStatus
from routectl.model import NodeView, Route
from routectl.observe.metrics import Metrics
from routectl.plan.guard import Verdict, guard
from routectl.plan.reconcile import Plan, plan
from routectl.plan.scope import scope
from routectl.provider import RouteProvider, batch_capable
from routectl.sync.apply import Applied, CreateDone, apply_batch, apply_routes
from routectl.sync.changes import Changes, Dirty
from routectl.sync.condition_stream import ConditionStream
from routectl.sync.queue import Batch, CoalescingQueue
from routectl.sync.sidework import Claims
from routectl.sync.verify import WriteChecks

if TYPE_CHECKING:  # node IPAM is off by default: not imported unless it is on
    from routectl.ipam.edge.step import NodeIpam, Wake

logger = logging.getLogger("routectl.controller")

VERIFY = "verify-writes"
"""The key of the confirming listing on the queue."""
LOOK_AGAIN = "look-again"
"""The key of the guard's second look on the queue."""
IPAM_WAKE = "ipam-wake"
"""The key of node IPAM's wake-up on the queue."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AtRest:
    """What a full sync that found nothing to do saw: the routes (by the listing cache's
    version) and the Nodes (by the store's). A sync that sees the same, with no change
    waiting, would plan the same nothing, so it plans nothing: in periodic mode a cluster at
    rest costs a ListRoutes and the cache's comparison every period, not a plan of every
    Node."""

    routes_version: int
    nodes_version: int

    def holds(
        self, listing: Listing, dirty: Dirty, *, routes_version: int, nodes_version: int
    ) -> bool:
        """True if ``listing`` is fresh, the routes and the Nodes are as they were, and no
        change waits."""
        return (
            listing.fresh
            and not listing.stale
            and not dirty.names
            and not dirty.cidrs
            and routes_version == self.routes_version
            and nodes_version == self.nodes_version
        )


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
        queue: CoalescingQueue,
        ipam: NodeIpam | None = None,
    ) -> None:
        self.settings = settings
        self.ipam = ipam
        """Node IPAM (``--routectl-allocate-node-cidrs``): pod CIDRs allocated before planning."""
        self.queue = queue
        """Where the syncs a sync asks for go: at once, or later (the guard's second look,
        node IPAM's wake-up): time is scheduled on the queue, never on a timer of its own."""
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
        self.checks = WriteChecks()
        """The acknowledged writes to check, and those in doubt (:mod:`routectl.sync.verify`)."""
        self._side_taken: list[Dirty] = []
        self.side_plans = 0
        """Side plans accepted and written beside a running sync (for tests and metrics)."""
        self._rest: AtRest | None = None
        """What the last sync saw when it found nothing to do (None: it did something)."""
        self.skipped = 0
        """Syncs that planned nothing: the cloud and the Nodes were as a sync at rest left
        them (for tests)."""

    async def sync(self, batch: Batch) -> None:
        """Run one sync; raises SyncFailedError (or a provider/kube error) if anything failed."""
        started, outcome = self.clock(), "error"
        trigger = "node_change" if batch.triggers - {"periodic"} else "periodic"
        dirty = self.changes.take()
        self._side_taken = []
        self.queue.arrived.clear()  # what asked for this sync is in ``dirty`` already
        try:
            fresh = batch.fresh_listing or not self.settings.watch_mode
            changed = await self._reconcile(dirty, fresh=fresh)
            outcome = "changed" if changed else "noop"
        except BaseException:
            # Side plans' changes go back too: planning them again costs a plan, no call.
            for taken in (dirty, *self._side_taken):
                self.changes.restore(taken)
            raise
        finally:
            self._side_taken = []
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
        if self._rest is not None and self._rest.holds(
            listing, dirty, routes_version=self.listing.version, nodes_version=self.store.version
        ):
            self.skipped += 1
            logger.debug(
                "Sync: the %d routes listed and the %d Nodes are as the last sync left them, "
                "which found nothing to do; nothing to plan",
                len(listing.routes),
                len(self.store),
            )
            return False
        self._rest = None
        dirty, allocation_errors = await self._allocate(listing, dirty)
        work = self._plan(listing, dirty)
        if self.listing.must_relist(work.plan):
            work = self._plan(await self.listing.get(fresh=True), dirty)
        self.last = work
        await self.status.report_problems(
            work.plan, [*work.nodes, *self.store.unknown_views()], full=work.full
        )
        verdict = await self._guard(work.plan)
        result = work.plan
        logger.debug(
            "Sync plan: %d of %d Nodes (%s), %d routes listed (%s), %d owned; %d to create, "
            "%d to delete, %d problems%s",
            len(work.nodes),
            len(self.store),
            "full" if work.full else "changed Nodes only",
            len(listing.routes),
            "fresh" if listing.fresh else "cached",
            self.listing.owned,
            len(result.creates),
            len(result.deletes),
            len(result.problems),
            "; the mass-delete guard withholds the deletes" if verdict.tripped else "",
        )
        try:
            applied, conditions = await self._carry_out(work, verdict.plan)
        except BaseException:
            # A full sync that failed may have left work anywhere: the next one is full too,
            # on a fresh listing (a failure may mean our view of the cloud is wrong).
            self.changes.needs_full |= work.full
            self.listing.invalidate()
            raise
        self.changes.needs_full &= not work.full
        logger.debug(
            "Sync applied: %d created, %d deleted, %d failed",
            len(applied.created),
            len(applied.deleted),
            len(applied.failed),
        )
        if verdict.tripped:
            # Plan again on a fresh listing at the backoff cap (a garbled listing that
            # tripped the guard heals then; one listing per cap while it holds), without
            # holding back the syncs that Node changes ask for meanwhile.
            self.queue.request_after(
                self.settings.retry_backoff_cap,
                key=LOOK_AGAIN,
                fresh_listing=True,
                replace=False,
            )
        if listing.stale:
            # The writes went out on an old listing; now look again, behind them.
            self.queue.request(trigger="periodic", fresh_listing=True)
        if allocation_errors:
            raise SyncFailedError(
                f"{len(allocation_errors)} pod CIDR write(s) failed; first: {allocation_errors[0]}",
                allocation_errors,
            )
        quiet = not (applied.changed or conditions or verdict.tripped or work.plan.problems)
        if quiet and work.full and listing.fresh and not listing.stale:
            self._rest = self._at_rest(work.plan)
        return applied.changed

    def _at_rest(self, result: Plan) -> AtRest | None:
        """What a full sync on a fresh listing that found nothing to do saw, so that the
        next one can tell nothing changed: None when something may still change without a
        Node or a route changing (node IPAM, unknown Nodes, writes in doubt)."""
        if (
            not result.empty
            or self.ipam is not None
            or self.store.unknown
            or self.checks.doubted_creates()
            or self.changes.needs_full
        ):
            return None
        return AtRest(routes_version=self.listing.version, nodes_version=self.store.version)

    async def _allocate(self, listing: Listing, dirty: Dirty) -> tuple[Dirty, list[RoutectlError]]:
        """Node IPAM's step: pod CIDRs for the Nodes without them, planned in this sync."""
        if self.ipam is None:
            return dirty, []
        assigned = await self.ipam.step(listing)
        self._wake_ipam(assigned.wake)
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
        with collector_paused():  # a full plan of a large cluster allocates, frees no cycle
            result = plan(
                nodes=nodes, routes=routes, cluster_cidrs=cidrs, unknown=self.store.unknown
            )
        if full and self.ipam is None:  # the listing's routes and CIDRs: counted already
            self.listing.counted(result.owned_routes)
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

    def _to_confirm(self, applied: Applied) -> None:
        """Remember this sync's acknowledged writes, and ask for the listing that checks them
        (:class:`~routectl.sync.verify.WriteChecks` says when)."""
        delay = self.checks.acknowledged(applied, cap=self.settings.retry_backoff_cap)
        if delay is not None:
            self.queue.request_after(delay, key=VERIFY, fresh_listing=True, replace=False)

    def _confirm(self, routes: Sequence[Route]) -> None:
        """A fresh listing: every acknowledged write it does not show is counted and said
        (the plan on this listing writes it again, and the Node's condition follows)."""
        for miss in self.checks.confirm(
            routes, exists=lambda name: self.store.get(name) is not None
        ):
            self.metrics.unconfirmed_writes.labels(operation=miss.operation).inc()
            logger.log(
                logging.WARNING if miss.times == 1 else logging.DEBUG,
                "The cloud acknowledged the %s of the route to %s via node %s, but the listing "
                "after it %s; writing it again%s",
                miss.operation,
                miss.cidr,
                miss.node,
                "does not show it" if miss.operation == "create" else "still shows it",
                "" if miss.times == 1 else f" (missing {miss.times} times in a row)",
                extra={"node": miss.node, "cidr": miss.cidr},
            )

    def _wake_ipam(self, wake: Wake | None) -> None:
        """Node IPAM's wake-up while Nodes wait for a block: one delayed request, replaced."""
        if wake is None:
            self.queue.cancel(IPAM_WAKE)
        else:
            delay = max(0.0, wake.at - self.clock())
            self.queue.request_after(delay, key=IPAM_WAKE, fresh_listing=wake.fresh)

    async def _carry_out(self, work: Planned, result: Plan) -> tuple[Applied, int]:
        """Apply ``result``, each Node's condition written as soon as its routes are settled,
        taking on side plans meanwhile; raise SyncFailedError if any call or write failed.
        Returns what was applied and how many conditions were written."""
        sides: list[tuple[Applied, ConditionStream]] = []
        stream: ConditionStream | None = None
        try:
            async with asyncio.TaskGroup() as group:
                stream = ConditionStream(
                    status=self.status,
                    nodes=work.nodes,
                    plan=result,
                    group=group,
                    clock=self.clock,
                    doubted=self.checks.doubted_creates(),
                )
                stream.open()
                taker = None
                if self._takes_side_work():
                    claims = Claims(plan=result, nodes=work.nodes)
                    taker = group.create_task(self._take_side_work(claims, group, sides))
                try:
                    applied = await self._apply(result, stream.create_done)
                finally:
                    if taker is not None:
                        taker.cancel()  # it only waits and plans; the side writes go on
                self.listing.remember(
                    deleted=applied.deleted, created=[c.route for c in applied.created]
                )
                if self.ipam is not None:
                    deleted = [r.destination_cidr for r in applied.deleted]
                    if deleted:
                        self._wake_ipam(self.ipam.routes_deleted(deleted))
        finally:
            for each in (stream, *(s for _, s in sides)):
                if each is not None:
                    self._routed(each)
        for side, side_stream in sides:
            applied.created.extend(side.created)
            applied.failed.extend(side.failed)
            applied.errors.extend(side.errors)
            stream.errors.extend(side_stream.errors)
        self._to_confirm(applied)  # a sync that failed in part is verified too
        errors: list[RoutectlError] = [*applied.errors, *stream.errors]
        if errors:
            raise SyncFailedError(_summary(applied, errors), errors)
        return applied, stream.writes + sum(side.writes for _, side in sides)

    def _takes_side_work(self) -> bool:
        """Side plans need scoped planning (watch mode), per-route writes (a batch writes
        a whole table) and no allocation step (node IPAM plans CIDRs in the sync)."""
        s = self.settings
        batched = s.batch_writes and batch_capable(self.provider)
        return s.watch_mode and self.ipam is None and not batched

    async def _take_side_work(
        self,
        claims: Claims,
        group: asyncio.TaskGroup,
        sides: list[tuple[Applied, ConditionStream]],
    ) -> None:
        """Until cancelled: plan the changes that arrive and start writing each side plan
        that races nothing claimed; give the others back for the next sync."""
        more = self.queue.arrived  # set by every request the informer makes meanwhile
        while True:
            await more.wait()
            more.clear()
            if self.changes.needs_full:
                continue
            dirty = self.changes.take()
            if not dirty.names:
                self.changes.restore(dirty)
                continue
            listing = await self.listing.get(fresh=False)
            nodes, routes = scope(
                changed=dirty.names,
                nodes=self.store.mapping(),
                claims=self.changes.claims,
                routes=listing.index,
                changed_cidrs=dirty.cidrs,
            )
            result = plan(
                nodes=nodes,
                routes=routes,
                cluster_cidrs=self.settings.cluster_cidrs,
                unknown=self.store.unknown,
            )
            if not claims.admit(result, nodes):
                self.changes.restore(dirty)  # the next sync's, which is queued already
                continue
            self._side_taken.append(dirty)
            self.side_plans += 1
            group.create_task(self._side_write(result, nodes, group, sides))

    async def _side_write(
        self,
        result: Plan,
        nodes: Sequence[NodeView],
        group: asyncio.TaskGroup,
        sides: list[tuple[Applied, ConditionStream]],
    ) -> None:
        """Write one side plan (creates only), conditions streamed as for the sync's own."""
        await self.status.report_problems(result, [*nodes, *self.store.unknown_views()], full=False)
        stream = ConditionStream(
            status=self.status,
            nodes=nodes,
            plan=result,
            group=group,
            clock=self.clock,
            doubted=self.checks.doubted_creates(),
        )
        stream.open()
        applied = await apply_routes(
            result, provider=self.provider, on_create_done=stream.create_done
        )
        self.listing.remember(deleted=(), created=[c.route for c in applied.created])
        sides.append((applied, stream))

    async def _apply(self, result: Plan, done: CreateDone) -> Applied:
        if not result.empty and self.settings.batch_writes and batch_capable(self.provider):
            return await apply_batch(result, provider=self.provider, on_create_done=done)
        return await apply_routes(result, provider=self.provider, on_create_done=done)

    def _routed(self, stream: ConditionStream) -> None:
        """The Nodes that got all their routes, and when: observe how long they waited (a
        Node whose routes were listed already waited for no create of routectl's, unless
        one was planned for it before: see :mod:`routectl.sync.changes`)."""
        samples = self.changes.found_routed(stream.found, now=stream.found_at)
        for at, together in itertools.groupby(stream.ready, key=operator.itemgetter(1)):
            samples.extend(self.changes.routed([name for name, _ in together], now=at))
        self.changes.tried(stream.planned)  # those still waiting wait for a create
        for seconds in samples:
            self.metrics.route_latency.observe(seconds)


def _summary(applied: Applied, errors: Sequence[RoutectlError]) -> str:
    kube = len(errors) - len(applied.errors)
    return (
        f"{len(applied.errors)} cloud call(s) and {kube} Node write(s) failed; first: {errors[0]}"
    )

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
   change the moment that Node's own routes are settled (:mod:`routectl.readiness`);
7. while it writes (watch mode, per-route writes, no node IPAM), takes on the Node changes
   that arrive meanwhile: each is planned over its scope against the cached listing and
   written at once, beside the sync's own writes, when it races none of them
   (:mod:`routectl.sidework`: only creates, other Nodes, other destinations); a change it
   cannot take waits for the next sync, which the change has asked for already. A Node of
   a burst is then ready one write after it arrives, not after the writes in flight.

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
from routectl.config import Settings
from routectl.errors import ProviderError, RoutectlError, SyncFailedError
from routectl.guard import Verdict, guard
from routectl.informer import NodeStore
from routectl.listing import Listing, ListingCache
from routectl.metrics import Metrics
from routectl.model import NodeView
from routectl.provider import RouteProvider, batch_capable
from routectl.queue import Batch
from routectl.readiness import ConditionStream
from routectl.reconcile import Plan, plan
from routectl.scope import scope
from routectl.sidework import Claims
from routectl.status import NodeStatus

logger = logging.getLogger(__name__)


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
        self._more: asyncio.Event | None = None
        """Set by :meth:`nudge` while a sync runs: changes arrived it may take on."""
        self._side_taken: list[Dirty] = []
        self.side_plans = 0
        """Side plans accepted and written beside a running sync (for tests and metrics)."""

    def nudge(self) -> None:
        """A Node change was noted (informer callback): a sync writing may take it on."""
        if self._more is not None:
            self._more.set()

    async def sync(self, batch: Batch) -> None:
        """Run one sync; raises SyncFailedError (or a provider/kube error) if anything failed."""
        started, outcome = self.clock(), "error"
        trigger = "node_change" if batch.triggers - {"periodic"} else "periodic"
        dirty = self.changes.take()
        self._more, self._side_taken = asyncio.Event(), []
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
            self._more, self._side_taken = None, []
            self.syncs += 1
            self.metrics.syncs.labels(trigger=trigger, outcome=outcome).inc()
            self.metrics.sync_duration.observe(self.clock() - started)

    async def _reconcile(self, dirty: Dirty, *, fresh: bool) -> bool:
        try:
            listing = await self.listing.get(fresh=fresh or self.changes.needs_full)
        except ProviderError as exc:
            await self.status.routes_blocked(self.changes.waiting(), exc)
            raise
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

    def _again_due(self) -> None:
        self._again = None
        self.request_fresh()

    async def _carry_out(self, work: Planned, result: Plan) -> Applied:
        """Apply ``result``, each Node's condition written as soon as its routes are settled,
        taking on side plans meanwhile; raise SyncFailedError if any call or write failed."""
        sides: list[tuple[Applied, ConditionStream]] = []
        async with asyncio.TaskGroup() as group:
            stream = ConditionStream(
                status=self.status, nodes=work.nodes, plan=result, group=group, on_ready=self._ready
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
                self.ipam.routes_deleted([r.destination_cidr for r in applied.deleted])
        for side, side_stream in sides:
            applied.created.extend(side.created)
            applied.failed.extend(side.failed)
            applied.errors.extend(side.errors)
            stream.errors.extend(side_stream.errors)
        errors: list[RoutectlError] = [*applied.errors, *stream.errors]
        if errors:
            raise SyncFailedError(_summary(applied, errors), errors)
        return applied

    def _takes_side_work(self) -> bool:
        """Side plans need scoped planning (watch mode), per-route writes (a batch writes
        a whole table) and no allocation step (node IPAM plans CIDRs in the sync)."""
        s = self.settings
        batched = s.batch_writes and batch_capable(self.provider)
        return s.watch_mode and self.ipam is None and not batched and self._more is not None

    async def _take_side_work(
        self,
        claims: Claims,
        group: asyncio.TaskGroup,
        sides: list[tuple[Applied, ConditionStream]],
    ) -> None:
        """Until cancelled: plan the changes that arrive and start writing each side plan
        that races nothing claimed; give the others back for the next sync."""
        more = self._more
        assert more is not None  # noqa: S101 -- checked by _takes_side_work
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
            result = plan(nodes=nodes, routes=routes, cluster_cidrs=self.settings.cluster_cidrs)
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
        await self.status.report_problems(result, nodes, full=False)
        stream = ConditionStream(
            status=self.status, nodes=nodes, plan=result, group=group, on_ready=self._ready
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

    def _ready(self, name: str) -> None:
        """``name`` has all its routes: observe how long it waited for them."""
        for seconds in self.changes.routed([name], now=self.clock()):
            self.metrics.route_latency.observe(seconds)


def _summary(applied: Applied, errors: Sequence[RoutectlError]) -> str:
    kube = len(errors) - len(applied.errors)
    return (
        f"{len(applied.errors)} cloud call(s) and {kube} Node write(s) failed; first: {errors[0]}"
    )

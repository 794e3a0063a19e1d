"""The route controller: one sync plans against the cloud and applies the plan.

A sync (:meth:`Controller.sync`) lists routes once (or reuses a listing younger than
``listing_max_age``, kept current with our own successful writes), plans with the pure
planner, applies the plan through the rate-limited provider (a create that replaces a route
waits for that delete; everything else runs concurrently), records ``FailedToCreateRoute``
Events, and writes NetworkUnavailable only where :func:`desired_condition` says so.
Anything that failed makes the sync fail, and the worker (:mod:`routectl.worker`) requeues
it with backoff (upstream's watch mode forgets failures until the next event; this does not).

The mass-delete guard withholds every delete of a sync that would delete more than
``mass_delete_threshold`` of the routes it owns, and says so (log, Event, metric).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
from collections.abc import Collection, Sequence
from typing import Any, Protocol

from routectl.changes import INCREMENTAL_MIN, INCREMENTAL_SHARE, Changes, Dirty
from routectl.config import Settings
from routectl.errors import (
    KubeError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RoutectlError,
)
from routectl.informer import NodeStore
from routectl.kube import condition_patch, go_duration, lease_event, node_event
from routectl.metrics import Metrics
from routectl.model import NodeView, Route
from routectl.provider import BatchResult, BatchRouteProvider, RouteProvider, batch_capable
from routectl.queue import Batch, CoalescingQueue
from routectl.reconcile import (
    Plan,
    RouteCreate,
    RouteIndex,
    desired_condition,
    needs_sync,
    plan,
    routes_created,
    scope,
)

logger = logging.getLogger(__name__)

MASS_DELETE_MIN = 5
"""The guard never trips for this many deletes or fewer (a small cluster losing a node)."""


class KubeWriter(Protocol):
    """The API writes a sync makes."""

    async def patch_node_status(self, name: str, patch: dict[str, Any]) -> None: ...

    async def create_event(self, event: dict[str, Any]) -> None: ...


class SyncFailedError(RoutectlError):
    """Some part of a sync failed; the sync is retried. ``retry_after`` is the cloud's hint."""

    def __init__(
        self, message: str, *, retry_after: float | None = None, terminal: bool = False
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.terminal = terminal


@dataclasses.dataclass(slots=True, kw_only=True)
class _Applied:
    created: list[RouteCreate] = dataclasses.field(default_factory=list)
    failed: list[tuple[RouteCreate, BaseException]] = dataclasses.field(default_factory=list)
    deleted: list[Route] = dataclasses.field(default_factory=list)
    errors: list[ProviderError] = dataclasses.field(default_factory=list)


class Controller:
    """Syncs the cloud's routes with the Nodes in a :class:`NodeStore`."""

    def __init__(
        self,
        *,
        settings: Settings,
        store: NodeStore,
        provider: RouteProvider,
        kube: KubeWriter,
        metrics: Metrics,
    ) -> None:
        self.settings = settings
        self.store = store
        self.provider = provider
        self.kube = kube
        self.metrics = metrics
        self.syncs = 0
        self.last_plan: Plan | None = None
        self._listing: list[Route] | None = None
        self._index = RouteIndex()
        self._listed_at = 0.0
        self._synthetic: set[Route] = set()
        self._waiting: dict[str, float] = {}
        self._problems: frozenset[tuple[str, str, str]] = frozenset()
        self._guard_tripped = False
        self._listed_now = False
        self._owned = 0
        self.changes = Changes()
        self.last_plan_full = True

    def observe(self, old: NodeView | None, new: NodeView | None, queue: CoalescingQueue) -> None:
        """Informer callback: request a sync for routing-relevant changes (watch mode)."""
        self.changes.note(old, new)
        if new is None and old is not None:
            self._waiting.pop(old.name, None)
        elif new is not None and new.pod_cidrs and (old is None or old.pod_cidrs != new.pod_cidrs):
            self._waiting.setdefault(new.name, asyncio.get_running_loop().time())
        if self.settings.watch_mode and needs_sync(old, new):
            queue.request(trigger="node_change")

    async def sync(self, batch: Batch) -> None:
        """Run one sync; raises SyncFailedError (or a provider/kube error) if anything failed."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        trigger = "node_change" if batch.triggers - {"periodic"} else "periodic"
        outcome = "error"
        try:
            changed = await self._sync(fresh=batch.fresh_listing or not self.settings.watch_mode)
            outcome = "changed" if changed else "noop"
        finally:
            self.syncs += 1
            self.metrics.syncs.labels(trigger=trigger, outcome=outcome).inc()
            self.metrics.sync_duration.observe(loop.time() - started)

    async def _sync(self, *, fresh: bool) -> bool:
        dirty = self.changes.take()
        try:
            return await self._sync_changes(fresh=fresh, dirty=dirty)
        except BaseException:
            self.changes.restore(dirty)
            raise

    async def _sync_changes(self, *, fresh: bool, dirty: Dirty) -> bool:
        routes = await self._routes(fresh=fresh or self.changes.needs_full)
        full = self._listed_now or len(dirty.names) > max(
            INCREMENTAL_MIN, INCREMENTAL_SHARE * len(self.store)
        )
        clock = asyncio.get_running_loop().time
        started = clock()
        nodes, routes = self._scoped(routes, dirty, full=full)
        result = plan(nodes=nodes, routes=routes, cluster_cidrs=self.settings.cluster_cidrs)
        self.metrics.plan_duration.labels(scope="full" if full else "changes").observe(
            clock() - started
        )
        if self._synthetic.intersection(result.deletes):
            # A route we created is to be deleted, but we lack the cloud's name for it.
            full = True
            nodes, routes = self.store.values(), await self._routes(fresh=True)
            result = plan(nodes=nodes, routes=routes, cluster_cidrs=self.settings.cluster_cidrs)
        self.last_plan = result
        self.last_plan_full = full
        await self._report_problems(result, nodes, full=full)
        if full:
            self._owned = result.owned_routes
        result = await self._guard(result)
        try:
            changed = await self._carry_out(result, nodes)
        except BaseException:
            # A full sync that failed may have left work anywhere: the next one is full too.
            self.changes.needs_full = self.changes.needs_full or full
            raise
        if full:
            self.changes.needs_full = False
        return changed

    def _scoped(
        self, routes: list[Route], dirty: Dirty, *, full: bool
    ) -> tuple[Sequence[NodeView], list[Route]]:
        """All Nodes and routes, or only those the changes since the last sync can affect."""
        if full:
            return self.store.values(), routes
        return scope(
            changed=dirty.names,
            nodes=self.store.mapping(),
            claims=self.changes.claims,
            routes=self._index,
            changed_cidrs=dirty.cidrs,
        )

    async def _carry_out(self, result: Plan, nodes: Sequence[NodeView]) -> bool:
        applied = await self._apply(result)
        self._remember(applied)
        self._owned += len(applied.created) - len(applied.deleted)
        failed = [create for create, _ in applied.failed]
        condition_errors = await self._write_conditions(nodes, result, failed)
        self._observe_latency(nodes, result, failed)
        if applied.errors or condition_errors:
            raise _failure(applied.errors, condition_errors)
        return bool(applied.created or applied.deleted)

    async def _routes(self, *, fresh: bool) -> list[Route]:
        now = asyncio.get_running_loop().time()
        max_age = self.settings.listing_max_age
        self._listed_now = False
        if fresh or self._listing is None or max_age <= 0 or now - self._listed_at > max_age:
            self._listed_now = True
            self._listing = list(await self.provider.list_routes())
            self._index = RouteIndex(self._listing)
            self._listed_at = now
            self._synthetic.clear()
        return list(self._listing)

    def _remember(self, applied: _Applied) -> None:
        """Keep the cached listing current with our own successful writes."""
        if self._listing is None:
            return
        if applied.deleted:
            gone = {id(route) for route in applied.deleted}
            self._listing = [r for r in self._listing if id(r) not in gone]
            for route in applied.deleted:
                self._index.remove(route)
        for create in applied.created:
            # Marked as carrying node addresses: should a later plan want to replace it,
            # the sync lists afresh first (it is synthetic), so the cloud's view decides.
            route = dataclasses.replace(create.route, enable_node_addresses=True)
            self._listing.append(route)
            self._index.add(route)
            self._synthetic.add(route)

    async def _guard(self, result: Plan) -> Plan:
        """Withhold every delete if too many of our routes would go at once."""
        owned = max(self._owned, result.owned_routes)  # a scoped plan sees only some routes
        limit = max(MASS_DELETE_MIN, self.settings.mass_delete_threshold * owned)
        tripped = len(result.deletes) > limit and not self.settings.allow_mass_delete
        if tripped:
            self.metrics.mass_delete_blocked.inc()
            message = (
                f"Refusing to delete {len(result.deletes)} of {owned} routes this "
                f"cluster owns (more than {100 * self.settings.mass_delete_threshold:.0f}%); "
                "creating only. Check the Nodes and --cluster-cidr, then pass "
                "--allow-mass-delete if the deletes are intended."
            )
            logger.error(message)
            if not self._guard_tripped:
                await self._controller_event(reason="MassDeleteRefused", message=message)
            result = dataclasses.replace(
                result, deletes=(), creates=tuple(c for c in result.creates if not c.replaces)
            )
        self._guard_tripped = tripped
        return result

    async def _apply(self, result: Plan) -> _Applied:
        if not result.empty and self.settings.batch_writes and batch_capable(self.provider):
            return await self._apply_batch(self.provider, result)
        applied = _Applied()
        deletes = {route: asyncio.ensure_future(self._delete(route)) for route in result.deletes}

        async def create(c: RouteCreate) -> None:
            for replaced in c.replaces:
                if replaced in deletes and await deletes[replaced] is not None:
                    applied.failed.append(
                        (c, ProviderError("the route it replaces was not deleted"))
                    )
                    return
            started = asyncio.get_running_loop().time()
            logger.info(
                "Creating route for node %s %s with hint %s",
                c.route.target_node,
                c.route.destination_cidr,
                c.name_hint,
            )
            try:
                await self.provider.create_route(c.route, name_hint=c.name_hint)
            except ProviderError as exc:
                applied.failed.append((c, exc))
                applied.errors.append(exc)
                await self._failed_create_event(c, exc, asyncio.get_running_loop().time() - started)
            else:
                applied.created.append(c)

        await asyncio.gather(*(create(c) for c in result.creates))
        for route, task in deletes.items():
            error = await task
            if error is None:
                applied.deleted.append(route)
            else:
                applied.errors.append(error)
        return applied

    async def _apply_batch(self, provider: BatchRouteProvider, result: Plan) -> _Applied:
        """One write for the whole plan: deletes first, then creates, per-route results."""
        applied = _Applied()
        deletes, creates = list(result.deletes), list(result.creates)
        logger.info("Writing %d deletes and %d creates in one batch", len(deletes), len(creates))
        started = asyncio.get_running_loop().time()
        try:
            outcome = await provider.apply_routes(
                deletes=deletes, creates=[(c.route, c.name_hint) for c in creates]
            )
        except ProviderError as exc:
            outcome = BatchResult(
                failed_deletes=dict.fromkeys(range(len(deletes)), exc),
                failed_creates=dict.fromkeys(range(len(creates)), exc),
            )
        elapsed = asyncio.get_running_loop().time() - started
        for index, route in enumerate(deletes):
            if index in outcome.failed_deletes:
                applied.errors.append(outcome.failed_deletes[index])
            else:
                applied.deleted.append(route)
        for index, create in enumerate(creates):
            error = outcome.failed_creates.get(index)
            if error is None:
                applied.created.append(create)
                continue
            applied.failed.append((create, error))
            applied.errors.append(error)
            await self._failed_create_event(create, error, elapsed)
        return applied

    async def _delete(self, route: Route) -> ProviderError | None:
        logger.info("Deleting route %s %s", route.name, route.destination_cidr)
        started = asyncio.get_running_loop().time()
        try:
            await self.provider.delete_route(route)
        except ProviderError as exc:
            elapsed = go_duration(asyncio.get_running_loop().time() - started)
            logger.error(  # noqa: TRY400 -- upstream's log line, the traceback adds nothing
                "Could not delete route %s %s after %s: %s",
                route.name,
                route.destination_cidr,
                elapsed,
                exc,
            )
            return exc
        return None

    async def _failed_create_event(
        self, c: RouteCreate, exc: ProviderError, elapsed: float
    ) -> None:
        node = self.store.get(c.route.target_node)
        message = (
            f"Could not create route {c.name_hint} {c.route.destination_cidr} for node "
            f"{c.route.target_node} after {go_duration(elapsed)}: {exc}"
        )
        logger.error(message)
        if node is not None:
            await self._event(node, reason="FailedToCreateRoute", message=message)

    async def _event(self, node: NodeView, *, reason: str, message: str) -> None:
        await self._record(
            node_event(
                node=node, reason=reason, message=message, event_type="Warning", now=_utcnow()
            )
        )

    async def _controller_event(self, *, reason: str, message: str) -> None:
        """An Event about routectl itself, on its Lease (in routectl's namespace)."""
        s = self.settings
        lease = (s.leader_elect_resource_namespace, s.leader_elect_resource_name)
        await self._record(lease_event(lease, reason=reason, message=message, now=_utcnow()))

    async def _record(self, body: dict[str, Any]) -> None:
        try:
            await self.kube.create_event(body)
        except KubeError as exc:
            logger.warning("Could not record event %s: %s", body["reason"], exc)

    async def _write_conditions(
        self, nodes: Sequence[NodeView], result: Plan, failed: Collection[RouteCreate]
    ) -> list[KubeError]:
        outcome = routes_created(nodes=nodes, plan=result, failed=failed)
        writes = []
        for name, created in outcome.items():
            current = self.store.get(name)
            if current is None:
                continue
            condition = desired_condition(current.network_unavailable, routes_created=created)
            if condition is not None:
                logger.info(
                    "Patching node status %s with %s previous condition was:%s",
                    name,
                    created,
                    current.network_unavailable,
                )
                writes.append(self._patch(name, condition_patch(condition, now=_utcnow())))
        results = await asyncio.gather(*writes)
        return [error for error in results if error is not None]

    async def _patch(self, name: str, patch: dict[str, Any]) -> KubeError | None:
        try:
            await self.kube.patch_node_status(name, patch)
        except KubeError as exc:
            if exc.status == 404:  # noqa: PLR2004 -- the Node is gone; nothing to mark
                return None
            logger.error("Error updating node %s: %s", name, exc)  # noqa: TRY400
            return exc
        return None

    async def _report_problems(
        self, result: Plan, nodes: Sequence[NodeView], *, full: bool
    ) -> None:
        """Log and record each problem once, when it first appears."""
        current = frozenset((p.node, p.reason, p.message) for p in result.problems)
        if not full:  # a scoped plan sees only some problems; forget none of the others
            current |= self._problems
        by_name = {node.name: node for node in nodes}
        for node_name, reason, message in sorted(current - self._problems):
            self.metrics.problems.labels(reason=reason).inc()
            logger.warning("%s: %s", reason, message)
            if node_name in by_name:
                await self._event(by_name[node_name], reason=reason, message=message)
        self._problems = current

    def _observe_latency(
        self, nodes: Sequence[NodeView], result: Plan, failed: Collection[RouteCreate]
    ) -> None:
        now = asyncio.get_running_loop().time()
        for name, created in routes_created(nodes=nodes, plan=result, failed=failed).items():
            since = self._waiting.pop(name, None) if created else None
            if since is not None:
                self.metrics.route_latency.observe(now - since)


def _failure(
    provider_errors: Sequence[ProviderError], kube_errors: Sequence[KubeError]
) -> SyncFailedError:
    hints = [e.retry_after for e in provider_errors if isinstance(e, ProviderThrottledError)]
    first = next(iter([*provider_errors, *kube_errors]))
    return SyncFailedError(
        f"{len(provider_errors)} cloud call(s) and {len(kube_errors)} Node write(s) failed; "
        f"first: {first}",
        retry_after=max((h for h in hints if h), default=None),
        terminal=not kube_errors
        and all(isinstance(e, ProviderTerminalError) for e in provider_errors),
    )


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)

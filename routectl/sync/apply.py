"""Carrying out a plan through the provider: per route, or in one batched write.

* Per route (:func:`apply_routes`): every delete and create runs concurrently, in one task
  group owned by the caller's sync (cancelling the sync cancels them all), except that a
  create which replaces a route waits for that delete and is not attempted if it failed
  (:class:`~routectl.errors.CreateSkippedError`). Where the provider can replace a route in
  one call (:class:`~routectl.provider.ReplaceRouteProvider`), a create that replaces
  exactly one route is one replace instead of a delete and a create; a replace that finds
  the old route gone creates the new one.
* Batched (:func:`apply_batch`): one ``apply_routes`` call for the whole plan, deletes
  first; the provider reports which routes failed. A failure of the whole call fails every
  route of it.

Both log one INFO line per outcome, with upstream's texts: ``Deleted route <name> <cidr>
after <dur>``, ``Created route for node <node> <cidr> with hint <uid> after <dur>``, and
``Replaced route <name> <cidr> of node <old> with node <new> after <dur>`` for a one-call
replace (a batch's routes each get a line with the batch's duration); failures are ERROR
(a failed create also gets upstream's ``FailedToCreateRoute`` Event, from the caller).

Both return :class:`Applied`: what was created, deleted, and what failed with which
error. Every create's outcome is reported through ``on_create_done`` the moment it is
known (``None`` on success), so a Node can be marked ready before the rest of the batch
is done. Only :class:`~routectl.errors.ProviderError` is an outcome; anything else
propagates.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable

from routectl.errors import (
    CreateSkippedError,
    ProviderError,
    RouteNotFoundError,
    WriteFencedError,
)
from routectl.kube import go_duration
from routectl.model import Route
from routectl.plan.reconcile import Plan, RouteCreate
from routectl.provider import (
    BatchResult,
    BatchRouteProvider,
    ReplaceRouteProvider,
    RouteProvider,
    replace_capable,
)

logger = logging.getLogger("routectl.controller")

CreateDone = Callable[[RouteCreate, ProviderError | None, float], Awaitable[None]]
"""Told (create, its error or None, seconds it took) as soon as a create is settled."""


@dataclasses.dataclass(slots=True, kw_only=True)
class Applied:
    """What applying a plan did."""

    created: list[RouteCreate] = dataclasses.field(default_factory=list)
    deleted: list[Route] = dataclasses.field(default_factory=list)
    failed: list[tuple[RouteCreate, ProviderError]] = dataclasses.field(default_factory=list)
    errors: list[ProviderError] = dataclasses.field(default_factory=list)
    """Every cloud error, once (a create skipped for its failed delete adds none)."""

    @property
    def changed(self) -> bool:
        """True if a route was created or deleted."""
        return bool(self.created or self.deleted)


def _fields(route: Route) -> dict[str, str]:
    """The log fields of a line about ``route``."""
    return {
        "node": route.target_node,
        "cidr": str(route.destination_cidr),
        "route": route.name,
    }


def _log_created(c: RouteCreate, elapsed: float) -> None:
    route = c.route
    logger.info(
        "Created route for node %s %s with hint %s after %s",
        route.target_node,
        route.destination_cidr,
        c.name_hint,
        go_duration(elapsed),
        extra=_fields(route),
    )


def _log_deleted(route: Route, elapsed: float) -> None:
    logger.info(
        "Deleted route %s %s after %s",
        route.name,
        route.destination_cidr,
        go_duration(elapsed),
        extra=_fields(route),
    )


def _log_create(c: RouteCreate) -> None:
    route = c.route
    logger.info(
        "Creating route for node %s %s with hint %s",
        route.target_node,
        route.destination_cidr,
        c.name_hint,
        extra=_fields(route),
    )


async def apply_routes(
    plan: Plan, *, provider: RouteProvider, on_create_done: CreateDone
) -> Applied:
    """Carry out ``plan`` one call per route, concurrently, deletes before their creates."""
    applied = Applied()
    clock = asyncio.get_running_loop().time
    replacer = provider if replace_capable(provider) else None
    replaced = {c.replaces[0] for c in plan.creates if replacer and len(c.replaces) == 1}

    async def delete(route: Route) -> bool:
        started = clock()
        logger.info(
            "Deleting route %s %s", route.name, route.destination_cidr, extra=_fields(route)
        )
        try:
            await provider.delete_route(route)
        except ProviderError as exc:
            if isinstance(exc, WriteFencedError):  # not sent: the sync says why, once
                logger.debug("Not deleting route %s: %s", route.destination_cidr, exc)
                applied.errors.append(exc)
                return False
            logger.error(  # noqa: TRY400 -- upstream's log line, the traceback adds nothing
                "Could not delete route %s %s after %s: %s",
                route.name,
                route.destination_cidr,
                go_duration(clock() - started),
                exc,
                extra=_fields(route),
            )
            applied.errors.append(exc)
            return False
        applied.deleted.append(route)
        _log_deleted(route, clock() - started)
        return True

    async def create(c: RouteCreate, waits_for: list[asyncio.Task[bool]]) -> None:
        for task in waits_for:
            if not await task:
                skipped = CreateSkippedError("the route it replaces was not deleted")
                applied.failed.append((c, skipped))
                await on_create_done(c, skipped, 0.0)
                return
        started = clock()
        _log_create(c)
        try:
            if replacer is not None and len(c.replaces) == 1:
                replaced_old = await _replace(replacer, c, applied)
            else:
                await provider.create_route(c.route, name_hint=c.name_hint)
                replaced_old = None
        except ProviderError as exc:
            applied.failed.append((c, exc))
            applied.errors.append(exc)
            await on_create_done(c, exc, clock() - started)
        else:
            applied.created.append(c)
            elapsed = clock() - started
            if replaced_old is None:
                _log_created(c, elapsed)
            else:
                logger.info(
                    "Replaced route %s %s of node %s with node %s after %s",
                    replaced_old.name,
                    c.route.destination_cidr,
                    replaced_old.target_node or "(none)",
                    c.route.target_node,
                    go_duration(elapsed),
                    extra=_fields(c.route),
                )
            await on_create_done(c, None, elapsed)

    async with asyncio.TaskGroup() as group:
        deletes = {r: group.create_task(delete(r)) for r in plan.deletes if r not in replaced}
        for c in plan.creates:
            group.create_task(create(c, [deletes[r] for r in c.replaces if r in deletes]))
    return applied


async def _replace(
    provider: ReplaceRouteProvider, c: RouteCreate, applied: Applied
) -> Route | None:
    """Repoint the one route ``c`` replaces (returned); create ``c`` if that route is gone
    already (None)."""
    (old,) = c.replaces
    try:
        await provider.replace_route(old, c.route, name_hint=c.name_hint)
    except RouteNotFoundError:
        await provider.create_route(c.route, name_hint=c.name_hint)
        return None
    applied.deleted.append(old)
    return old


async def apply_batch(
    plan: Plan, *, provider: BatchRouteProvider, on_create_done: CreateDone
) -> Applied:
    """Carry out ``plan`` in one batched write: deletes first, then creates."""
    applied = Applied()
    deletes, creates = list(plan.deletes), list(plan.creates)
    logger.info("Writing %d deletes and %d creates in one batch", len(deletes), len(creates))
    clock = asyncio.get_running_loop().time
    started = clock()
    try:
        outcome = await provider.apply_routes(
            deletes=deletes, creates=[(c.route, c.name_hint) for c in creates]
        )
    except ProviderError as exc:
        outcome = BatchResult(
            failed_deletes=dict.fromkeys(range(len(deletes)), exc),
            failed_creates=dict.fromkeys(range(len(creates)), exc),
        )
    elapsed = clock() - started
    for index, route in enumerate(deletes):
        if index in outcome.failed_deletes:
            applied.errors.append(outcome.failed_deletes[index])
            logger.error(
                "Could not delete route %s %s after %s: %s",
                route.name,
                route.destination_cidr,
                go_duration(elapsed),
                outcome.failed_deletes[index],
                extra=_fields(route),
            )
        else:
            applied.deleted.append(route)
            _log_deleted(route, elapsed)
    for index, create in enumerate(creates):
        error = outcome.failed_creates.get(index)
        if error is None:
            applied.created.append(create)
            _log_created(create, elapsed)
        else:
            applied.failed.append((create, error))
            applied.errors.append(error)
        await on_create_done(create, error, elapsed)
    return applied

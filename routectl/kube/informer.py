"""The Node informer: list, then watch, forever; a local store of what routing needs.

* The first full list fills :class:`NodeStore` and sets ``synced``; nobody plans before.
* The watch starts from the list's resourceVersion, with bookmarks, and a server timeout
  drawn from [5, 10) minutes like client-go's reflector; any end, clean or cut mid-stream,
  resumes from the last resourceVersion applied (bookmarks included), so no event is
  applied twice and the store never travels back in time.
* An expired resourceVersion (an ERROR event with a 410 Status, or an HTTP 410) relists and
  reports every difference, so Nodes deleted meanwhile come out as deletes.
* Any other failure (a cut connection, 5xx, 403 from missing RBAC, an unreachable server)
  backs off exponentially and resumes; ``healthy`` is False meanwhile, for readiness.
* Failures in a row share one backoff streak, as client-go's reflector's backoff manager
  does: a relist does not end it (a relist followed by another 410, or by a watch that ends
  at once with no event, must not spin), only ``reset_after`` seconds (injected clock)
  without a failure do. A 410 that a relist does not cure is said once per streak at
  WARNING, with its cause, and makes the informer unhealthy until a watch holds.
* Every change is handed to ``on_change(old, new)`` synchronously; callbacks must be cheap.
  A list's changes (the first list: every Node) go to ``on_changes`` at once, if given (one
  call, in the order ``on_change`` would have heard them), so its callee can do once what a
  change asks of it (one sync request for 65,000 Nodes, one clock reading).
* Nodes arrive decoded into only what routing reads (:mod:`routectl.kube.decode`); a
  watch event that changes none of it (a kubelet heartbeat) builds nothing and leaves the
  store as it was.
"""

from __future__ import annotations

import asyncio
import logging
import random
import types
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Protocol

from routectl.errors import (
    ImpossibleObjectError,
    InvalidObjectError,
    KubeError,
    ResourceVersionGoneError,
)
from routectl.kube import NodeEvent, NodeViews, same, view_of
from routectl.kube.decode import collector_paused
from routectl.model import NodeView
from routectl.ratelimit import backoff_delay

logger = logging.getLogger("routectl.informer")

NodeHandler = Callable[[NodeView | None, NodeView | None], None]
NodeChanges = Sequence[tuple[NodeView | None, NodeView | None]]
ChangesHandler = Callable[[NodeChanges], None]


class NodeSource(Protocol):
    """Where Nodes come from: the API client's list and watch (a fake in unit tests)."""

    async def list_node_views(self) -> NodeViews: ...

    def watch_node_events(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[NodeEvent]: ...


WATCH_TIMEOUT_RANGE = (300, 600)
SHORT_WATCH = 1.0
"""A watch ending sooner than this with no event is a failure (client-go's "very short watch")."""


class NodeStore:
    """The Nodes as last seen, by name; each write says what changed.

    Beside them, the Nodes that exist but were never seen readable (``spec: null``...):
    *unknown*, by name, with why. A readable view of one, or its deletion, ends that.
    :attr:`version` counts the writes that changed anything (a heartbeat changes nothing).
    """

    def __init__(self) -> None:
        self._nodes: dict[str, NodeView] = {}
        self._unknown: dict[str, ImpossibleObjectError] = {}
        self.version = 0
        """Goes up with every write that changes a Node or the unknown ones: equal versions
        mean the same Nodes."""

    @property
    def unknown(self) -> Mapping[str, str]:
        """Unknown Nodes by name: why each cannot be read (for the planner)."""
        return {name: str(exc) for name, exc in self._unknown.items()}

    def unknown_views(self) -> list[NodeView]:
        """Unknown Nodes as views with nothing but their name and UID (for Events)."""
        return [view for name in sorted(self._unknown) if (view := self.unknown_view(name))]

    def unknown_view(self, name: str) -> NodeView | None:
        """The unknown Node ``name`` as a view with nothing but its name and UID, if it is
        unknown."""
        exc = self._unknown.get(name)
        return None if exc is None else NodeView(name=name, uid=exc.uid, pod_cidrs=(), addresses=())

    def mark_unknown(self, exc: ImpossibleObjectError) -> bool:
        """Note the Node ``exc`` names as unknown; True when it was not already."""
        previous = self._unknown.get(exc.name)
        if previous is None or str(previous) != str(exc):
            self.version += 1
        self._unknown[exc.name] = exc
        return previous is None

    def set_unknown(self, found: Iterable[ImpossibleObjectError]) -> None:
        """Make the unknown Nodes exactly ``found`` (a full list's)."""
        before = self.unknown
        self._unknown = {exc.name: exc for exc in found if exc.name not in self._nodes}
        if self.unknown != before:
            self.version += 1

    def __len__(self) -> int:
        return len(self._nodes)

    def get(self, name: str) -> NodeView | None:
        """The Node called ``name``, if known."""
        return self._nodes.get(name)

    def values(self) -> list[NodeView]:
        """Every known Node."""
        return list(self._nodes.values())

    def mapping(self) -> Mapping[str, NodeView]:
        """A read-only view of the Nodes by name."""
        return types.MappingProxyType(self._nodes)

    def upsert(self, node: NodeView) -> NodeView | None:
        """Store ``node``; return what was stored under its name before."""
        old = self._nodes.get(node.name)
        self._nodes[node.name] = node
        if self._unknown.pop(node.name, None) is not None or old != node:
            self.version += 1
        return old

    def remove(self, name: str) -> NodeView | None:
        """Forget ``name``; return what was stored."""
        unknown = self._unknown.pop(name, None)
        old = self._nodes.pop(name, None)
        if unknown is not None or old is not None:
            self.version += 1
        return old

    def replace(self, nodes: Iterable[NodeView]) -> list[tuple[NodeView | None, NodeView | None]]:
        """Make the store hold exactly ``nodes``; return every (old, new) that differs."""
        fresh = {node.name: node for node in nodes}
        changes: list[tuple[NodeView | None, NodeView | None]] = [
            (old, None) for name, old in self._nodes.items() if name not in fresh
        ]
        known = self._nodes.get
        for name, node in fresh.items():
            old = known(name)
            if old is None or old != node:  # a new Node is no comparison (the first list)
                changes.append((old, node))
        self._nodes = fresh
        if changes:
            self.version += 1
        return changes


def _skip(problem: str) -> None:
    logger.warning("Skipping a Node that cannot be read: %s", problem)


def _impossible(exc: ImpossibleObjectError, known: NodeStore) -> NodeView | None:
    """A Node the API server never serves keeps the view last known of it (its routes
    stay), with a WARNING saying why; one never known is *unknown* (the planner leaves
    routes to it alone, and its sync says so at WARNING) until it can be read."""
    last = known.get(exc.name)
    if last is not None:
        logger.warning(
            "%s; keeping what routectl last knew of it (its routes stay)",
            exc,
            extra={"node": exc.name},
        )
    elif known.mark_unknown(exc):
        # The sync's UnknownNode WARNING (and Event) says it to the operator, once.
        logger.info(
            "%s; routectl never saw it readable, so it is unknown until it can be read",
            exc,
            extra={"node": exc.name},
        )
    else:
        logger.debug("%s; still unknown", exc, extra={"node": exc.name})
    return last


class Informer:
    """Keeps a :class:`NodeStore` in step with the API server."""

    def __init__(
        self,
        *,
        kube: NodeSource,
        store: NodeStore,
        on_change: NodeHandler,
        on_changes: ChangesHandler | None = None,
        on_relist: Callable[[str], None],
        rng: random.Random,
        clock: Callable[[], float],
        backoff_base: float = 1.0,
        backoff_cap: float = 30.0,
        reset_after: float = 120.0,
    ) -> None:
        self.kube = kube
        self.store = store
        self.synced = asyncio.Event()
        self.healthy = False
        self.last_error = ""
        self._on_change = on_change
        self._on_changes = on_changes
        self._on_relist = on_relist
        self._backoff = (backoff_base, backoff_cap)
        self._reset_after = reset_after
        self._rng = rng
        self._clock = clock
        self._failures = 0
        self._failed_at = 0.0
        self._said: set[str] = set()
        self.resource_version: str | None = None
        """The last resourceVersion applied (list or watch event); None: list next."""

    async def run(self) -> None:
        """List and watch until cancelled."""
        while True:
            try:
                if self.resource_version is None:
                    self.resource_version = await self._list()
                if not await self._watch():
                    await asyncio.sleep(self._short_watch())
            except ResourceVersionGoneError as exc:
                self._on_relist("expired")
                self.resource_version = None
                await asyncio.sleep(self._expired(exc))
            except KubeError as exc:
                self.healthy = False
                self.last_error = str(exc)
                delay = self._next_delay()
                logger.warning("Node informer: %s; retrying in %.1fs", exc, delay)
                await asyncio.sleep(delay)

    def _next_delay(self) -> float:
        """One more failure in the streak (a new streak after a quiet ``reset_after``): the
        jittered wait before the next try."""
        now = self._clock()
        if self._failures and now - self._failed_at >= self._reset_after:
            self._failures = 0
            self._said.clear()
        self._failures += 1
        self._failed_at = now
        base, cap = self._backoff
        return backoff_delay(failures=self._failures, base=base, cap=cap) * self._rng.uniform(
            0.8, 1.2
        )

    def _expired(self, exc: KubeError) -> float:
        """A 410: relist after the streak's delay; say so once when relisting did not help."""
        delay = self._next_delay()
        if self._failures == 1:
            logger.info("Node watch expired (410); listing again")
            return delay
        self.healthy = False
        self.last_error = f"the Node watch keeps expiring right after each relist: {exc}"
        if "expired" not in self._said:
            self._said.add("expired")
            logger.warning(
                "Node informer: the watch expired again soon after a relist (%s); "
                "relisting with backoff (next in %.1fs, doubling up to %gs)",
                exc,
                delay,
                self._backoff[1],
            )
        else:
            logger.debug("Node watch expired again (410); relisting in %.1fs", delay)
        return delay

    def _short_watch(self) -> float:
        """A watch that ended at once: resume after the streak's delay (said once)."""
        delay = self._next_delay()
        if self._failures > 1 and "short" not in self._said:
            self._said.add("short")
            logger.warning(
                "Node informer: watches end at once with no event; resuming with backoff "
                "(next in %.1fs, doubling up to %gs)",
                delay,
                self._backoff[1],
            )
        else:
            logger.debug("Node watch ended at once; resuming in %.1fs", delay)
        return delay

    async def _list(self) -> str:
        listing = await self.kube.list_node_views()
        for problem in listing.skipped:
            _skip(problem)
        kept = [_impossible(exc, self.store) for exc in listing.impossible]
        views = [*listing.nodes, *(view for view in kept if view is not None)]
        first = not self.synced.is_set()
        with collector_paused():  # tens of thousands of records, no garbage
            changes = self.store.replace(views)
            self.store.set_unknown(listing.impossible)
            if self._on_changes is not None:
                self._on_changes(changes)
            else:
                for old, new in changes:
                    self._on_change(old, new)
        self.healthy = True
        self.synced.set()
        if not first:
            logger.info("Relisted %d Nodes, %d changed meanwhile", len(views), len(changes))
        return listing.resource_version

    async def _watch(self) -> bool:
        """Watch from :attr:`resource_version`, moving it on with every event applied, so a
        watch cut mid-stream resumes after the last event, never before it (replaying old
        events would bring deleted Nodes back for a while). False: the watch ended at once
        with no event (client-go's "very short watch"), a failure of the streak."""
        timeout = self._rng.randrange(*WATCH_TIMEOUT_RANGE)
        started, events = self._clock(), 0
        async for event in self.kube.watch_node_events(
            resource_version=self.resource_version or "", timeout_seconds=timeout
        ):
            self.healthy = True
            events += 1
            self.resource_version = self._handle(event) or self.resource_version
        return bool(events) or self._clock() - started >= SHORT_WATCH

    def _handle(self, event: NodeEvent) -> str | None:
        """Apply one watch event to the store; return its resourceVersion."""
        kind = event.type
        if kind in ("ADDED", "MODIFIED"):
            view = self._view(event)
            if view is not None:
                old = self.store.upsert(view)
                if old != view:
                    self._on_change(old, view)
        elif kind == "DELETED":
            unknown = self.store.unknown_view(event.name)
            old = self.store.remove(event.name) or unknown
            if old is not None:  # an unknown Node's routes are stale now: plan them
                self._on_change(old, None)
        return event.resource_version or None

    def _view(self, event: NodeEvent) -> NodeView | None:
        """The event's Node, or None when it changes nothing routing reads (built nothing
        then) or cannot be read (said)."""
        record = event.record
        if event.impossible is not None:
            _impossible(event.impossible, self.store)
            return None  # what routectl last knew of it stands
        if record is None:
            if event.problem:
                _skip(event.problem)
            return event.view
        old = self.store.get(event.name)
        if old is not None and same(old, record):
            return None
        try:
            return view_of(record)
        except ImpossibleObjectError as exc:
            _impossible(exc, self.store)
            return None
        except InvalidObjectError as exc:
            _skip(str(exc))
            return None

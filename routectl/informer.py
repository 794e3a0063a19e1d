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
"""

from __future__ import annotations

import asyncio
import logging
import random
import types
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, Protocol

from routectl.errors import (
    ImpossibleObjectError,
    InvalidObjectError,
    KubeError,
    ResourceVersionGoneError,
)
from routectl.kube import NodeListing, parse_node
from routectl.model import NodeView
from routectl.ratelimit import backoff_delay

logger = logging.getLogger(__name__)

NodeHandler = Callable[[NodeView | None, NodeView | None], None]


class NodeSource(Protocol):
    """Where Nodes come from: the API client's list and watch (a fake in unit tests)."""

    async def list_nodes(self) -> NodeListing: ...

    def watch_nodes(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[dict[str, Any]]: ...


WATCH_TIMEOUT_RANGE = (300, 600)
SHORT_WATCH = 1.0
"""A watch ending sooner than this with no event is a failure (client-go's "very short watch")."""


class NodeStore:
    """The Nodes as last seen, by name; each write says what changed."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeView] = {}

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
        return old

    def remove(self, name: str) -> NodeView | None:
        """Forget ``name``; return what was stored."""
        return self._nodes.pop(name, None)

    def replace(self, nodes: Iterable[NodeView]) -> list[tuple[NodeView | None, NodeView | None]]:
        """Make the store hold exactly ``nodes``; return every (old, new) that differs."""
        fresh = {node.name: node for node in nodes}
        changes: list[tuple[NodeView | None, NodeView | None]] = [
            (old, None) for name, old in self._nodes.items() if name not in fresh
        ]
        changes.extend(
            (self._nodes.get(name), node)
            for name, node in fresh.items()
            if self._nodes.get(name) != node
        )
        self._nodes = fresh
        return changes


def _parse(raw: Any, known: NodeStore | None = None) -> NodeView | None:
    """The Node as routectl sees it; one the API server never serves keeps the view last
    known of it (its routes stay), with a WARNING saying why."""
    try:
        return parse_node(raw)
    except ImpossibleObjectError as exc:
        last = known.get(exc.name) if known is not None else None
        if last is not None:
            logger.warning(
                "%s; keeping what routectl last knew of it (its routes stay)",
                exc,
                extra={"node": exc.name},
            )
        else:
            logger.warning(
                "%s; skipping it until it can be read (routectl never knew it)",
                exc,
                extra={"node": exc.name},
            )
        return last
    except InvalidObjectError as exc:
        logger.warning("Skipping a Node that cannot be read: %s", exc)
        return None


class Informer:
    """Keeps a :class:`NodeStore` in step with the API server."""

    def __init__(
        self,
        *,
        kube: NodeSource,
        store: NodeStore,
        on_change: NodeHandler,
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
        listing = await self.kube.list_nodes()
        views = [view for raw in listing.items if (view := _parse(raw, self.store)) is not None]
        first = not self.synced.is_set()
        changes = self.store.replace(views)
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
        async for event in self.kube.watch_nodes(
            resource_version=self.resource_version or "", timeout_seconds=timeout
        ):
            self.healthy = True
            events += 1
            self.resource_version = self._handle(event) or self.resource_version
        return bool(events) or self._clock() - started >= SHORT_WATCH

    def _handle(self, event: dict[str, Any]) -> str | None:
        """Apply one watch event to the store; return its resourceVersion."""
        kind, obj = event.get("type"), event.get("object") or {}
        metadata = obj.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        version = metadata.get("resourceVersion")
        if kind in ("ADDED", "MODIFIED"):
            view = _parse(obj, self.store)
            if view is not None:
                old = self.store.upsert(view)
                if old != view:
                    self._on_change(old, view)
        elif kind == "DELETED":
            name = str(metadata.get("name", ""))
            old = self.store.remove(name)
            if old is not None:
                self._on_change(old, None)
        return str(version) if version else None

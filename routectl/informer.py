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
* Every change is handed to ``on_change(old, new)`` synchronously; callbacks must be cheap.
"""

from __future__ import annotations

import asyncio
import logging
import random
import types
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, Protocol

from routectl.errors import InvalidObjectError, KubeError, ResourceVersionGoneError
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


def _parse(raw: Any) -> NodeView | None:
    try:
        return parse_node(raw)
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
        backoff_base: float = 1.0,
        backoff_cap: float = 30.0,
    ) -> None:
        self.kube = kube
        self.store = store
        self.synced = asyncio.Event()
        self.healthy = False
        self.last_error = ""
        self._on_change = on_change
        self._on_relist = on_relist
        self._backoff = (backoff_base, backoff_cap)
        self._rng = rng
        self.resource_version: str | None = None
        """The last resourceVersion applied (list or watch event); None: list next."""

    async def run(self) -> None:
        """List and watch until cancelled."""
        failures = 0
        while True:
            try:
                if self.resource_version is None:
                    self.resource_version = await self._list()
                await self._watch()
                failures = 0
            except ResourceVersionGoneError:
                logger.info("Node watch expired (410); listing again")
                self._on_relist("expired")
                self.resource_version = None
                await asyncio.sleep(self._backoff[0])
            except KubeError as exc:
                failures += 1
                self.healthy = False
                self.last_error = str(exc)
                delay = backoff_delay(
                    failures=failures, base=self._backoff[0], cap=self._backoff[1]
                )
                logger.warning("Node informer: %s; retrying in %.1fs", exc, delay)
                await asyncio.sleep(delay * self._rng.uniform(0.8, 1.2))

    async def _list(self) -> str:
        listing = await self.kube.list_nodes()
        views = [view for view in map(_parse, listing.items) if view is not None]
        first = not self.synced.is_set()
        changes = self.store.replace(views)
        for old, new in changes:
            self._on_change(old, new)
        self.healthy = True
        self.synced.set()
        if not first:
            logger.info("Relisted %d Nodes, %d changed meanwhile", len(views), len(changes))
        return listing.resource_version

    async def _watch(self) -> None:
        """Watch from :attr:`resource_version`, moving it on with every event applied, so a
        watch cut mid-stream resumes after the last event, never before it (replaying old
        events would bring deleted Nodes back for a while)."""
        timeout = self._rng.randrange(*WATCH_TIMEOUT_RANGE)
        async for event in self.kube.watch_nodes(
            resource_version=self.resource_version or "", timeout_seconds=timeout
        ):
            self.healthy = True
            self.resource_version = self._handle(event) or self.resource_version

    def _handle(self, event: dict[str, Any]) -> str | None:
        """Apply one watch event to the store; return its resourceVersion."""
        kind, obj = event.get("type"), event.get("object") or {}
        metadata = obj.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        version = metadata.get("resourceVersion")
        if kind in ("ADDED", "MODIFIED"):
            view = _parse(obj)
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

"""What node IPAM tells: Events, log lines and metrics, each once per transition.

Promises: ``CIDRNotAvailable`` once per Node per wait (not per retry; a Node that waits again
after getting a CIDR is told again), and not while a fresh listing may still free a block
for it (the Node is told only if it still waits after that listing); each finding once;
pool warnings at 80 % and 95 % once per crossing, looked for at most every
:data:`USAGE_EVERY` seconds (at every sync while Nodes wait); the block counts themselves are
taken at scrape time (:class:`~routectl.ipam.edge.metrics.BlockCounts`). A failure to
record an Event is a log line; it never fails the sync.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from routectl.errors import KubeError
from routectl.ipam.core import Allocator, Levels, usage
from routectl.ipam.core.objects import CIDR_NOT_AVAILABLE, POOL_FILLING, status_message
from routectl.ipam.edge.metrics import IpamMetrics
from routectl.kube import node_event
from routectl.kube.informer import NodeStore
from routectl.kube.node_status import IpamWriter, NodeStatus
from routectl.model import NodeView

__all__ = ["USAGE_EVERY", "IpamReport"]

logger = logging.getLogger("routectl.ipam")
USAGE_EVERY = 10.0
"""Seconds between two looks for pool warnings while no Node waits."""


class IpamReport:
    """Tells node IPAM's news, remembering what it told."""

    def __init__(
        self,
        *,
        store: NodeStore,
        status: NodeStatus,
        writer: IpamWriter,
        metrics: IpamMetrics,
        event_type: str,
        wall_clock: Callable[[], Any],
    ) -> None:
        self._store, self._status, self._writer = store, status, writer
        self._metrics, self._event_type, self._wall_clock = metrics, event_type, wall_clock
        self._told: set[tuple[str, str, str]] = set()
        self._levels = Levels()
        self.counted_at = -USAGE_EVERY
        """When the pools' usage was last looked at for warnings."""
        self.waiting: set[str] = set()
        """Nodes told they wait for a pod CIDR (and not served since)."""
        self.short = False
        """At the last sync some Node waited for a block (told or not)."""

    async def tell(self, state: Allocator, now: float, *, hold: bool = False) -> None:
        """Say what changed since the last sync: Nodes newly waiting, new findings, usage.
        With ``hold`` (a listing may free blocks) Nodes newly waiting are not told yet."""
        decision = state.plan()
        waiting = {w.node: w for w in decision.waiting}
        self.short = bool(waiting)
        self._metrics.pending.set(len(state.pending))
        self._metrics.waiting.set(len(waiting))
        self._metrics.conflicts.set(state.conflicts)
        for name in self.waiting - set(waiting):
            self.waiting.discard(name)
        for name, why in waiting.items():
            node = self._store.get(name)
            if name in self.waiting or node is None or hold:
                continue
            self.waiting.add(name)
            logger.warning("No pod CIDR for node %s: %s", name, why.message)
            await self.event(node, CIDR_NOT_AVAILABLE, why.message)
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
        if waiting or now - self.counted_at >= USAGE_EVERY:
            await self._usage(state, now)

    async def _usage(self, state: Allocator, now: float) -> None:
        self.counted_at = now
        for each, level in self._levels.crossed(usage(state, now=now)):
            logger.warning("%s", each.message(level))
            await self._status.controller_event(reason=POOL_FILLING, message=each.message(level))

    async def event(self, node: NodeView, reason: str, detail: str) -> None:
        """Record KCM's Event ``reason`` on ``node`` (a failure to record is logged only)."""
        body = node_event(
            node=node,
            reason=reason,
            message=status_message(node.name, reason, detail),
            event_type=self._event_type,
            now=self._wall_clock(),
            component="cidrAllocator",
        )
        try:
            await self._writer.create_event(body)
        except KubeError as exc:
            logger.warning("Could not record event %s: %s", reason, exc)

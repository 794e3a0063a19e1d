"""Node IPAM's writes: claim each CIDR, patch the Node, wait for the informer's echo.

:class:`CidrWriter` carries out what the allocator plans, a bounded number of Nodes at a
time. Promises: per Node the claims (when on) are created before the Node patch; nothing
is claimed or patched while ``halted`` (another allocator may be at work); a claim
someone else holds makes that block foreign and the Node is planned again (a few rounds a
sync); a patch for a Node that is gone is no error; a failed patch is logged, told once per
failure streak (``CIDRAssignmentFailed``) and returned, the reservation kept, so the retry
writes the same CIDR. The sync waits (briefly) for the informer to show each new pod CIDR,
so the route planner routes it in the same sync.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from http import HTTPStatus

from routectl.errors import KubeError
from routectl.ipam.core import Allocation, Allocator
from routectl.ipam.core.objects import CIDR_ASSIGNMENT_FAILED, node_patch
from routectl.ipam.edge.leases import ClaimLeases
from routectl.ipam.edge.metrics import IpamMetrics
from routectl.ipam.edge.report import IpamReport
from routectl.kube.informer import NodeStore
from routectl.kube.node_status import IpamWriter
from routectl.model import NodeView

__all__ = ["CidrWriter"]

logger = logging.getLogger("routectl.ipam")
CONCURRENCY = 32
"""Nodes whose claims and patch are in flight at once."""
ECHO_WAIT = 5.0
"""How long a sync waits for the informer to show the pod CIDRs it wrote."""
ROUNDS = 3
"""Plans per sync (a claim held elsewhere makes the Node plan again)."""


class CidrWriter:
    """Claims and patches the allocations of a plan; knows which patches await their echo."""

    def __init__(
        self,
        *,
        store: NodeStore,
        writer: IpamWriter,
        claims: ClaimLeases,
        metrics: IpamMetrics,
        report: IpamReport,
        halted: Callable[[], bool] = lambda: False,
    ) -> None:
        self._store, self._writer, self._claims = store, writer, claims
        self._halted = halted
        self._metrics, self._report = metrics, report
        self._failed: set[str] = set()
        self._since: dict[str, float] = {}
        self._echoes: dict[str, tuple[tuple[str, ...], asyncio.Event]] = {}

    def noticed(self, old: NodeView | None, new: NodeView | None, *, now: float) -> bool:
        """A Node changed: note since when it waits for a CIDR; True when the change is the
        echo of a patch a sync in flight waits for."""
        if new is not None and not new.pod_cidrs:
            self._since.setdefault(new.name, now)
        elif new is None and old is not None:
            self._since.pop(old.name, None)
        echo = self._echoes.get(new.name) if new is not None else None
        own = new is not None and echo is not None and tuple(new.pod_cidrs) == echo[0]
        if echo is not None and own:
            echo[1].set()
        return own

    async def write(self, state: Allocator, now: float) -> tuple[list[str], list[KubeError]]:
        """Write what ``state`` plans, a few rounds (a claim held elsewhere plans again):
        the Nodes the informer now shows with their new pod CIDRs, and the failed writes."""
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
                    outcome = await self._claim_and_patch(state, a)
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

    async def _claim_and_patch(self, state: Allocator, a: Allocation) -> str | KubeError:
        """Claim each CIDR, then patch the Node: ``written``, ``planned-again``, ``left``
        (``left`` too when writes are halted: another allocator may be at work)."""
        if self._halted():
            return "left"
        if self._claims.enabled:
            for network in a.cidrs:
                held = await self._claims.take(state, a, network)
                if isinstance(held, KubeError):
                    return held
                if not held:
                    state.unreserve(a.node)
                    return "planned-again"
        if self._halted():
            return "left"
        texts = tuple(str(c) for c in a.cidrs)
        self._echoes[a.node] = (texts, asyncio.Event())
        try:
            await self._writer.patch_node(a.node, node_patch(a.cidrs))
        except KubeError as exc:
            self._echoes.pop(a.node, None)
            self._metrics.allocations.labels(result="failed").inc()
            if exc.status == HTTPStatus.NOT_FOUND:
                return "left"  # the Node is gone: its delete releases the reservation
            logger.error("Failed to update node %s PodCIDR %s: %s", a.node, texts, exc)  # noqa: TRY400
            if a.node not in self._failed and (node := self._store.get(a.node)) is not None:
                self._failed.add(a.node)
                await self._report.event(node, CIDR_ASSIGNMENT_FAILED, str(exc))
            return exc
        self._metrics.allocations.labels(result="allocated").inc()
        self._failed.discard(a.node)
        logger.info("Set node %s PodCIDR to %s", a.node, list(texts))
        return "written"

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

"""What a sync tells Kubernetes: NetworkUnavailable conditions, Events, problems.

* :meth:`NodeStatus.write_condition` patches ``nodes/<name>/status`` only where
  :func:`~routectl.plan.reconcile.desired_condition` says so (status or reason differ); a Node
  that is gone (404) needs nothing. It returns the write's error, so the sync can fail and
  be retried. :mod:`routectl.sync.condition_stream` calls it per Node, as soon as the
  Node's routes are settled.
* :meth:`NodeStatus.create_failed` logs and records upstream's ``FailedToCreateRoute``
  Warning on the Node.
* :meth:`NodeStatus.report_problems` logs, counts and records each input problem once,
  when it first appears (a scoped plan forgets none of those it cannot see).
* An Event that cannot be written is logged, never fatal.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus
from typing import Any, Protocol, TypeVar, cast

from routectl.cloud.fence import Fence
from routectl.errors import KubeError, KubeWriteFencedError, ProviderError, WriteFencedError
from routectl.kube import condition_patch, go_duration, lease_event, node_event
from routectl.model import Condition, NodeView
from routectl.observe.logctx import v
from routectl.plan.reconcile import Plan, RouteCreate, desired_condition

logger = logging.getLogger("routectl.controller")
T = TypeVar("T")
MAX_BLOCKED_EVENTS = 50
"""At most this many Nodes are told, per failed listing, that their routes wait."""


class KubeWriter(Protocol):
    """The API writes a sync makes (what they answer is not used)."""

    async def patch_node_status(self, name: str, patch: dict[str, Any]) -> object: ...

    async def create_event(self, event: dict[str, Any]) -> object: ...


class IpamWriter(KubeWriter, Protocol):
    """The writes node IPAM adds (:mod:`routectl.ipam.edge.step`): the Node's pod CIDRs and
    claim Leases."""

    async def patch_node(self, name: str, patch: dict[str, Any]) -> dict[str, Any]: ...

    async def create_lease(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]: ...

    async def delete_lease(self, namespace: str, name: str) -> None: ...


class FencedWriter:
    """A :class:`KubeWriter` (and :class:`IpamWriter`) whose writes start only while the fence
    admits them.

    Each write runs with the client's timeout cut to what the lease still covers; a write
    the fence refuses raises :class:`~routectl.errors.KubeWriteFencedError` unsent.
    """

    def __init__(self, inner: KubeWriter, *, fence: Fence, timeout: float) -> None:
        self._inner = inner
        self._fence = fence
        self._timeout = timeout

    async def patch_node_status(self, name: str, patch: dict[str, Any]) -> None:
        """Patch ``nodes/<name>/status``, fenced."""
        what = f"patch status of node {name}"
        await self._fenced(what, lambda: self._inner.patch_node_status(name, patch))

    async def create_event(self, event: dict[str, Any]) -> None:
        """Create an Event, fenced."""
        await self._fenced("create event", lambda: self._inner.create_event(event))

    async def patch_node(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        """Patch ``nodes/<name>`` (its pod CIDRs), fenced; returns the Node."""
        return await self._fenced(f"patch node {name}", lambda: self._ipam.patch_node(name, patch))

    async def create_lease(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]:
        """Create a claim Lease, fenced."""
        what = f"create lease {namespace}/{lease['metadata']['name']}"
        return await self._fenced(what, lambda: self._ipam.create_lease(namespace, lease))

    async def delete_lease(self, namespace: str, name: str) -> None:
        """Delete a claim Lease, fenced."""
        what = f"delete lease {namespace}/{name}"
        await self._fenced(what, lambda: self._ipam.delete_lease(namespace, name))

    @property
    def _ipam(self) -> IpamWriter:
        return cast("IpamWriter", self._inner)

    async def _fenced(self, what: str, write: Callable[[], Awaitable[T]]) -> T:
        timeout = self._fence.admit(timeout=self._timeout, what=what, error=KubeWriteFencedError)
        try:
            async with asyncio.timeout(timeout):
                return await write()
        except TimeoutError:
            raise KubeError(f"{what}: no answer within {timeout:g}s") from None


_V2 = v(2)


class Nodes(Protocol):
    """The Nodes as last seen (the informer's store)."""

    def get(self, name: str) -> NodeView | None: ...


def go_condition(condition: Condition | None) -> str:
    """A condition as upstream's log line prints it (Go's ``%+v`` of a ``*NodeCondition``,
    the fields routectl keeps): ``&NodeCondition{Type:NetworkUnavailable,Status:False,...}``
    or ``<nil>``."""
    if condition is None:
        return "<nil>"
    return (
        f"&NodeCondition{{Type:NetworkUnavailable,Status:{condition.status},"
        f"Reason:{condition.reason},Message:{condition.message},}}"
    )


class NodeStatus:
    """Writes conditions and Events about the Nodes in ``nodes`` (the informer's store)."""

    def __init__(
        self,
        *,
        kube: KubeWriter,
        nodes: Nodes,
        lease: tuple[str, str],
        wall_clock: Callable[[], datetime.datetime],
        count_problem: Callable[[str], None],
    ) -> None:
        self._kube = kube
        self._nodes = nodes
        self._lease = lease
        self._now = wall_clock
        self._count_problem = count_problem
        self._problems: frozenset[tuple[str, str, str]] = frozenset()

    def needs_condition(self, name: str, *, created: bool) -> bool:
        """Whether :meth:`write_condition` would write (a Node whose condition is already
        set is said at V(2) here, and costs no task, no request)."""
        return self._wanted(name, created=created) is not None

    def _wanted(self, name: str, *, created: bool) -> tuple[NodeView, Condition] | None:
        current = self._nodes.get(name)
        if current is None:
            return None
        condition = desired_condition(current.network_unavailable, routes_created=created)
        if condition is None:
            if not logger.isEnabledFor(_V2):  # every Node of a large cluster at rest
                return None
            logger.log(
                _V2,
                "set node %s with NodeNetworkUnavailable=%s was canceled because it is already set",
                name,
                str(not created).lower(),
                extra={"node": name},
            )
            return None
        return current, condition

    async def write_condition(self, name: str, *, created: bool) -> KubeError | None:
        """Write NetworkUnavailable for ``name`` if status or reason must change.

        Returns the write's error (None when it succeeded or was not needed). The lines
        are upstream's: the patch at Info, "already set" at V(2).
        """
        wanted = self._wanted(name, created=created)
        if wanted is None:
            return None
        current, condition = wanted
        logger.info(
            "Patching node status %s with %s previous condition was:%s",
            name,
            str(created).lower(),
            go_condition(current.network_unavailable),
            extra={"node": name},
        )
        return await self._patch(name, condition_patch(condition, now=self._now()))

    async def _patch(self, name: str, patch: dict[str, Any]) -> KubeError | None:
        try:
            await self._kube.patch_node_status(name, patch)
        except KubeError as exc:
            if exc.status == HTTPStatus.NOT_FOUND:  # the Node is gone; nothing to mark
                return None
            logger.error("Error updating node %s: %s", name, exc, extra={"node": name})  # noqa: TRY400
            return exc
        return None

    async def create_failed(self, c: RouteCreate, exc: ProviderError, elapsed: float) -> None:
        """Log and record upstream's FailedToCreateRoute Warning on the route's Node; a
        create the fence refused was never sent (this replica's lease ran out): it is said
        once by the sync, not once per route."""
        if isinstance(exc, WriteFencedError):
            logger.debug("Not creating route %s: %s", c.route.destination_cidr, exc)
            return
        message = (
            f"Could not create route {c.name_hint} {c.route.destination_cidr} for node "
            f"{c.route.target_node} after {go_duration(elapsed)}: {exc}"
        )
        cidr = str(c.route.destination_cidr)
        logger.error(message, extra={"node": c.route.target_node, "cidr": cidr})
        node = self._nodes.get(c.route.target_node)
        if node is not None:
            await self.node_event(node, reason="FailedToCreateRoute", message=message)

    async def routes_blocked(self, names: Sequence[str], exc: ProviderError) -> None:
        """The routes could not even be listed: say so on each Node that waits for one."""
        for name in names[:MAX_BLOCKED_EVENTS]:
            node = self._nodes.get(name)
            if node is not None and node.pod_cidrs:
                message = (
                    f"Could not create route {node.uid} {','.join(node.pod_cidrs)} for node "
                    f"{name}: the cloud's routes could not be listed: {exc}"
                )
                await self.node_event(node, reason="FailedToCreateRoute", message=message)

    async def report_problems(self, plan: Plan, nodes: Sequence[NodeView], *, full: bool) -> None:
        """Log, count and record each of the plan's problems once, when it first appears."""
        current = frozenset((p.node, p.reason, p.message) for p in plan.problems)
        if not full:  # a scoped plan sees only some problems; forget none of the others
            current |= self._problems
        new = current - self._problems
        by_name = {node.name: node for node in nodes} if new else {}
        for node_name, reason, message in sorted(new):
            self._count_problem(reason)
            logger.warning("%s: %s", reason, message, extra={"node": node_name or None})
            if node_name in by_name:
                await self.node_event(by_name[node_name], reason=reason, message=message)
        self._problems = current

    async def node_event(self, node: NodeView, *, reason: str, message: str) -> None:
        """Record a Warning Event about ``node``."""
        await self._record(
            node_event(
                node=node, reason=reason, message=message, event_type="Warning", now=self._now()
            )
        )

    async def controller_event(self, *, reason: str, message: str) -> None:
        """Record a Warning Event about routectl itself, on its Lease."""
        await self._record(
            lease_event(self._lease, reason=reason, message=message, now=self._now())
        )

    async def _record(self, body: dict[str, Any]) -> None:
        try:
            await self._kube.create_event(body)
        except KubeError as exc:
            logger.warning("Could not record event %s: %s", body["reason"], exc)

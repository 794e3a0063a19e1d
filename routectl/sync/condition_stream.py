"""Readiness per Node, streamed: each Node's condition the moment its own routes are settled.

A sync's plan says which creates each Node waits for. :class:`ConditionStream` writes the
NetworkUnavailable condition of a Node that waits for none at once, and that of any other
Node when its last create is settled (created, failed, or skipped), not when the whole
batch ends (a create the cloud acknowledged before without carrying it out counts as not
routed when acknowledged again, until a listing shows it): a Node whose route took one
write is ready after that one write. Which
condition is written is upstream's rule (:func:`routectl.plan.reconcile.routes_created` for that
Node alone), and each Node is written at most once per sync, only if its status or reason
change, so a batch costs no more API writes than before. Failed creates get upstream's
``FailedToCreateRoute`` Event at once. Writes run as tasks of the caller's task group, so
they belong to the sync that planned them. Which Nodes got all their routes, and when, is
kept in :attr:`ConditionStream.ready` for the caller to read, apart from the Nodes whose
routes were all in place already when the sync began (:attr:`ConditionStream.found`: no create
of this sync routed them, at start every listed Node): nothing calls back up.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Collection, Sequence

from routectl.cidr import canonical
from routectl.errors import CreateSkippedError, KubeError, ProviderError
from routectl.kube.node_status import NodeStatus
from routectl.model import NodeView
from routectl.plan.reconcile import Plan, RouteCreate, routes_created


class ConditionStream:
    """Writes each Node's condition as soon as its creates in ``plan`` are settled."""

    def __init__(
        self,
        *,
        status: NodeStatus,
        nodes: Sequence[NodeView],
        plan: Plan,
        group: asyncio.TaskGroup,
        clock: Callable[[], float],
        doubted: Collection[tuple[str, str]] = (),
    ) -> None:
        self._status = status
        self._doubted = doubted
        """(Node, canonical CIDR) of creates the cloud acknowledged before and a listing then
        did not show: acknowledged again, they do not make the Node routed (a listing must
        show the route first)."""
        self._plan = plan
        self._group = group
        self._clock = clock
        self.ready: list[tuple[str, float]] = []
        """The Nodes that got all their routes by creates of this sync, and when (the
        clock's time)."""
        self.found: list[str] = []
        """The Nodes whose routes were all listed already (settled by :meth:`open`)."""
        self.found_at = 0.0
        """When :meth:`open` settled them (the clock's time)."""
        self.writes = 0
        """Condition writes started (a Node whose condition was already right is none)."""
        self._nodes = {node.name: node for node in nodes}
        self._pending = collections.Counter(c.route.target_node for c in plan.creates)
        self._failed: dict[str, list[RouteCreate]] = collections.defaultdict(list)
        self.errors: list[KubeError] = []

    @property
    def planned(self) -> Collection[str]:
        """The Nodes this sync's plan creates routes for."""
        return self._pending.keys()

    def open(self) -> None:
        """Write now for every Node that waits for no create (one pass over them all)."""
        pending = self._pending.get  # not [name]: Counter's __missing__ is Python code
        idle = [node for name, node in self._nodes.items() if not pending(name)]
        self.found_at = self._clock()
        for name, created in routes_created(nodes=idle, plan=self._plan).items():
            if created:
                self.found.append(name)
            self._write_if_needed(name, created=created)

    async def create_done(
        self, create: RouteCreate, error: ProviderError | None, elapsed: float
    ) -> None:
        """One create is settled; the Node's condition follows if it was its last."""
        name = create.route.target_node
        if error is None and (name, canonical(create.route.destination_cidr)) in self._doubted:
            self._failed[name].append(create)  # not routed until a listing shows it
        if error is not None:
            self._failed[name].append(create)
            if not isinstance(error, CreateSkippedError):
                await self._status.create_failed(create, error, elapsed)
        self._pending[name] -= 1
        if self._pending[name] == 0 and name in self._nodes:
            self._settle(name)

    def _settle(self, name: str) -> None:
        outcome = routes_created(
            nodes=[self._nodes[name]], plan=self._plan, failed=self._failed.get(name, ())
        )
        if name in outcome:
            self._settled(name, created=outcome[name])

    def _settled(self, name: str, *, created: bool) -> None:
        if created:
            self.ready.append((name, self._clock()))
        self._write_if_needed(name, created=created)

    def _write_if_needed(self, name: str, *, created: bool) -> None:
        # A condition already right (every Node of a cluster at rest) costs no task.
        if self._status.needs_condition(name, created=created):
            self.writes += 1
            self._group.create_task(self._write(name, created=created))

    async def _write(self, name: str, *, created: bool) -> None:
        error = await self._status.write_condition(name, created=created)
        if error is not None:
            self.errors.append(error)

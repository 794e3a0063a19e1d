"""What a simulation measures, and how.

* :class:`Recorder` follows the workload's desired state and the cloud's route changes:
  route latency (a Node gets its pod CIDR, or new addresses under a provider that routes
  by address → the route exists), wrongful deletes (a route deleted while its Node wanted
  it and it was right), and when the cloud last changed. Whoever sets a Node's pod CIDR
  (the workload's script, KCM, routectl), the recorder learns it from the API server's
  watch, and measures a registered Node's way: registration → pod CIDR → ready.
* :class:`ReuseWatch` counts pod CIDRs handed to a Node while the cloud still routes that
  CIDR to another Node, at the moment the API server commits the assignment (the runner
  asks it in the node IPAM scenarios only: elsewhere the workload's script allocates).
* :func:`api_writes` sorts the API server's write requests by what they write, and
  :func:`event_occurrences` counts Events by type and reason (repeats included).
* :class:`MeteredLoop` attributes CPU time to whoever runs each callback: every handle runs
  in a ``contextvars`` context, and tasks inherit the context they were created in, so
  setting :data:`COMPONENT` to ``"controller"`` before starting the controller charges its
  tasks and connections (and nothing of the fake API server's or the cloud's) to it.
* Memory is the process's resident set, sampled; the controller's share is the growth from
  just before it starts, an upper bound (the fake API server's watch history grows too).
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import dataclasses
import ipaddress
import os
import resource
import time
from collections.abc import Callable, Iterable
from typing import Any

from routectl.cidr import canonical
from routectl.kube import parse_node
from routectl.model import NodeAddress, Route
from routectl.plan.reconcile import is_responsible
from routectl.testing import RouteChange

COMPONENT: contextvars.ContextVar[str] = contextvars.ContextVar("component", default="simulator")


@dataclasses.dataclass
class Recorder:
    """Desired routes per the workload, and what the cloud did about them."""

    cluster: str
    cluster_cidr: str = "10.0.0.0/8"
    routes_by_address: bool = False
    """The cloud routes by node address: a route to old addresses is wrong, not wanted."""
    desired: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    addresses: dict[str, frozenset[NodeAddress]] = dataclasses.field(default_factory=dict)
    waiting: dict[tuple[str, str], float] = dataclasses.field(default_factory=dict)
    latencies: list[float] = dataclasses.field(default_factory=list)
    unready: dict[str, float] = dataclasses.field(default_factory=dict)
    """Nodes given a pod CIDR, not yet NetworkUnavailable=False: since when."""
    ready_latencies: list[float] = dataclasses.field(default_factory=list)
    routed_at: dict[str, float] = dataclasses.field(default_factory=dict)
    """Nodes waiting to be ready whose route exists: since when."""
    ready_after_route: list[float] = dataclasses.field(default_factory=list)
    """For each Node made ready: how long after its route its condition was written."""
    registering: dict[str, float] = dataclasses.field(default_factory=dict)
    """Nodes registered without a pod CIDR, not ready yet: since when."""
    registrations: int = 0
    cidr_latencies: list[float] = dataclasses.field(default_factory=list)
    """From a Node registering to its pod CIDR being set (by whoever allocates)."""
    join_latencies: list[float] = dataclasses.field(default_factory=list)
    """From a Node registering to its NetworkUnavailable=False being written."""
    wrongful_deletes: int = 0
    foreign_touched: int = 0
    last_fault: float = 0.0
    last_workload_change: float = 0.0
    last_cloud_change: float = 0.0

    def placed(self, node: str, cidr: str, addresses: frozenset[NodeAddress]) -> None:
        """A Node that starts with its route in place."""
        self.desired[node] = {cidr}
        self.addresses[node] = addresses

    def registered(self, node: str, now: float) -> None:
        """A kubelet registered ``node`` without a pod CIDR."""
        self.registering[node] = now
        self.registrations += 1
        self.last_workload_change = now

    def wanted(self, node: str, cidr: str, addresses: frozenset[NodeAddress], now: float) -> None:
        """A Node now needs a route to ``cidr`` (it just got its pod CIDR: not ready yet)."""
        self.placed(node, cidr, addresses)
        self.waiting[(node, cidr)] = now
        self.unready[node] = now
        self.last_workload_change = now
        if (since := self.registering.get(node)) is not None:
            self.cidr_latencies.append(now - since)

    def gone(self, node: str, now: float) -> None:
        """A Node left; its routes are no longer wanted."""
        for cidr in self.desired.pop(node, set()):
            self.waiting.pop((node, cidr), None)
        self.unready.pop(node, None)
        self.registering.pop(node, None)
        self.routed_at.pop(node, None)
        self.addresses.pop(node, None)
        self.last_workload_change = now

    def readdressed(
        self, node: str, cidr: str, addresses: frozenset[NodeAddress], now: float
    ) -> None:
        """A Node's addresses changed (matters to providers that route by address)."""
        self.addresses[node] = addresses
        self.waiting[(node, cidr)] = now
        self.last_workload_change = now

    def node_written(self, kind: str, node: dict[str, Any]) -> None:
        """FakeApiServer listener: a Node given a pod CIDR (by anyone) now wants a route; a
        Node marked NetworkUnavailable=False is ready now."""
        name = node.get("metadata", {}).get("name", "")
        if kind == "DELETED":
            return
        if name not in self.desired and (node.get("spec") or {}).get("podCIDRs"):
            self._learn(node)
        if name not in self.unready:
            return
        for condition in node.get("status", {}).get("conditions") or []:
            if condition.get("type") == "NetworkUnavailable" and condition.get("status") == "False":
                now = asyncio.get_running_loop().time()
                self.ready_latencies.append(now - self.unready.pop(name))
                if (routed := self.routed_at.pop(name, None)) is not None:
                    self.ready_after_route.append(now - routed)
                if (since := self.registering.pop(name, None)) is not None:
                    self.join_latencies.append(now - since)
                return

    def _learn(self, node: dict[str, Any]) -> None:
        """An allocator set the Node's pod CIDR (single stack: the first one is routed)."""
        view = parse_node(node)
        now = asyncio.get_running_loop().time()
        self.wanted(view.name, canonical(view.pod_cidrs[0]), frozenset(view.addresses), now)

    def faulted(self, now: float) -> None:
        """A fault was injected (chaos)."""
        self.last_fault = now

    def drifted(self, now: float) -> None:
        """The cloud was changed behind the controller's back."""
        self.last_workload_change = now

    def on_change(self, change: RouteChange) -> None:
        """FakeCloud listener: measure latency and judge deletes."""
        route = change.route
        if change.cluster != self.cluster or not is_responsible(
            route.destination_cidr, (ipaddress.ip_network(self.cluster_cidr),)
        ):
            self.foreign_touched += 1
            return
        key = (route.target_node, canonical(route.destination_cidr))
        self.last_cloud_change = change.time
        if change.operation == "create":
            since = self.waiting.pop(key, None)
            if since is not None:
                self.latencies.append(change.time - since)
            if route.target_node in self.unready:
                self.routed_at[route.target_node] = change.time
        elif self._was_right(route.target_node, key[1], route.target_node_addresses):
            self.wrongful_deletes += 1

    def _was_right(self, node: str, cidr: str, addresses: tuple[NodeAddress, ...]) -> bool:
        if cidr not in self.desired.get(node, set()):
            return False
        return not self.routes_by_address or frozenset(addresses) == self.addresses.get(node)

    def expected(self) -> set[tuple[str, str]]:
        """Every (node, canonical CIDR) the cloud should route."""
        return {(node, cidr) for node, cidrs in self.desired.items() for cidr in cidrs}


@dataclasses.dataclass
class ReuseWatch:
    """Pod CIDRs handed to a Node while a cloud route for them still points at another Node.

    A FakeApiServer listener: when a Node seen without pod CIDRs shows them, the cloud's
    table (``routes()``) is read at that very moment; each of the CIDRs routed to another
    Node counts once. Nodes created with a pod CIDR (the start of a scenario) are not
    allocations and are not judged.
    """

    routes: Callable[[], Iterable[Route]]
    bare: set[str] = dataclasses.field(default_factory=set)
    """Nodes last seen without pod CIDRs."""
    reused_while_routed: int = 0

    def node_written(self, kind: str, node: dict[str, Any]) -> None:
        """Judge an assignment the moment it is committed."""
        name = str((node.get("metadata") or {}).get("name", ""))
        cidrs = (node.get("spec") or {}).get("podCIDRs") or ()
        if kind == "DELETED":
            self.bare.discard(name)
            return
        if not cidrs:
            self.bare.add(name)
            return
        if name not in self.bare:
            return
        self.bare.discard(name)
        given = {canonical(str(c)) for c in cidrs}
        self.reused_while_routed += sum(
            1
            for r in self.routes()
            if r.target_node not in ("", name) and canonical(r.destination_cidr) in given
        )


WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def api_writes(requests: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Write requests by what they write: ``node_spec`` (pod CIDRs), ``node_status``
    (conditions), ``leases`` (claims, leader election), ``events``, ``other``."""
    counts = dict.fromkeys(("node_spec", "node_status", "leases", "events", "other"), 0)
    for method, path in requests:
        if method in WRITES:
            counts[_written(path)] += 1
    return counts


def _written(path: str) -> str:
    parts = path.strip("/").split("/")
    if parts[:3] == ["api", "v1", "nodes"]:
        return "node_status" if parts[-1] == "status" else "node_spec"
    if "leases" in parts:
        return "leases"
    if "events" in parts:
        return "events"
    return "other"


def event_occurrences(events: Iterable[dict[str, Any]]) -> dict[str, int]:
    """``"<type> <reason>"`` → occurrences (an aggregated Event counts ``count`` times)."""
    counts: collections.Counter[str] = collections.Counter()
    for event in events:
        counts[f"{event.get('type', '')} {event.get('reason', '')}"] += int(event.get("count") or 1)
    return dict(sorted(counts.items()))


class MeteredLoop(asyncio.SelectorEventLoop):
    """A selector loop that charges each callback's thread CPU time to its :data:`COMPONENT`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cpu: collections.defaultdict[str, float] = collections.defaultdict(float)

    def _metered(self, callback: Callable[..., object], *args: Any) -> None:
        started = time.thread_time()
        try:
            callback(*args)
        finally:
            self.cpu[COMPONENT.get()] += time.thread_time() - started

    def call_soon(  # type: ignore[override]
        self,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        """Schedule ``callback``, metered."""
        return super().call_soon(self._metered, callback, *args, context=context)

    def call_at(  # type: ignore[override]
        self,
        when: float,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        """Schedule ``callback`` at ``when``, metered."""
        return super().call_at(when, self._metered, callback, *args, context=context)

    def _add_reader(self, fd: Any, callback: Callable[..., object], *args: Any) -> Any:
        return super()._add_reader(fd, self._metered, callback, *args)  # type: ignore[misc]

    def _add_writer(self, fd: Any, callback: Callable[..., object], *args: Any) -> Any:
        return super()._add_writer(fd, self._metered, callback, *args)  # type: ignore[misc]


def rss_bytes() -> int:
    """The process's current resident set size."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:  # noqa: PTH123
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile of ``values`` (0.0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(share * len(ordered) + 0.5) - 1))
    return ordered[rank]

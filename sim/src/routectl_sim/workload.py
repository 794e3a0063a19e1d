"""Seeded cluster workloads: what happens to the Nodes (and the cloud) during a simulation.

Every scenario starts from Nodes whose routes are already in place (as a CCM left them)
and then drives changes through the fake API server exactly as kubelets and the IPAM
controller would: a Node registers without a pod CIDR and gets one a few seconds later;
kubelets post status every ``heartbeat`` seconds (conditions only, nothing routing needs).
In the node IPAM scenarios (``ipam-*``) Nodes register without a pod CIDR and the workload
never sets one: the profile's allocator does (KCM's, or routectl's own). The same seed
gives the same workload for every profile: no choice depends on what a controller did.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import functools
import itertools
import random
from collections.abc import Callable, Coroutine
from typing import Any

from routectl.cidr import canonical
from routectl.model import NodeAddress, Route
from routectl.testing import FakeCloud
from routectl_sim.apiserver import FakeApiServer
from routectl_sim.measure import Recorder

CLUSTER = "kubernetes"
EPOCH = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)
FOREIGN = (
    Route(target_node="another-cluster-node", destination_cidr="192.168.7.0/24", name="foreign-1"),
    Route(target_node="", destination_cidr="172.31.0.0/16", name="operator-static", blackhole=True),
)
"""Routes in the cluster's table that are not routectl's: outside the cluster CIDRs."""
MAX_SLOTS = 65536


def pod_cidr(slot: int) -> str:
    """The /24 of slot ``slot`` in 10.0.0.0/8."""
    return f"10.{slot // 256}.{slot % 256}.0/24"


def node_ip(slot: int, generation: int = 0) -> str:
    """The InternalIP of slot ``slot`` (a new one per generation)."""
    return f"172.{16 + generation % 16}.{slot // 256}.{slot % 256}"


def _stamp(loop_time: float) -> str:
    """The wall-clock time of ``loop_time`` as the API prints it (whole seconds)."""
    return _second(int(loop_time))


@functools.lru_cache(maxsize=1024)
def _second(second: int) -> str:
    return (EPOCH + datetime.timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclasses.dataclass
class Sim:
    """The simulated cluster: changes go to the API server and to the recorder together."""

    server: FakeApiServer
    cloud: FakeCloud
    recorder: Recorder
    rng: random.Random
    heartbeat: float
    names: dict[str, int] = dataclasses.field(default_factory=dict)
    generation: dict[str, int] = dataclasses.field(default_factory=dict)

    def now(self) -> float:
        """The virtual clock."""
        return asyncio.get_running_loop().time()

    def _addresses(self, name: str) -> list[dict[str, str]]:
        ip = node_ip(self.names[name], self.generation.get(name, 0))
        return [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]

    def _views(self, name: str) -> frozenset[NodeAddress]:
        return frozenset(
            NodeAddress(type=a["type"], address=a["address"]) for a in self._addresses(name)
        )

    def place(self, slot: int) -> None:
        """A Node whose route and condition are already in place (before the controller)."""
        name = f"node-{slot:05d}"
        self.names[name] = slot
        cidr = pod_cidr(slot)
        self.recorder.placed(name, canonical(cidr), self._views(name))  # before the watch sees it
        node = _node(name, cidr, self._addresses(name), _stamp(0))
        node["status"]["conditions"].append(
            {
                "type": "NetworkUnavailable",
                "status": "False",
                "reason": "RouteCreated",
                "message": "RouteController created a route",
                "lastHeartbeatTime": _stamp(0),
                "lastTransitionTime": _stamp(0),
            }
        )
        self.server.create_node(node)
        addresses = tuple(sorted(self._views(name), key=lambda a: a.type))
        self.cloud.add_route(
            CLUSTER,
            Route(
                target_node=name,
                destination_cidr=cidr,
                name=f"ccm-{name}",
                target_node_addresses=addresses,
            ),
        )

    def register(self, slot: int, name: str) -> None:
        """A kubelet registers a Node, still without a pod CIDR."""
        self.names[name] = slot
        self.recorder.registered(name, self.now())
        self.server.create_node(_node(name, None, self._addresses(name), _stamp(self.now())))

    def assign(self, name: str) -> None:
        """The IPAM controller (played by the workload) sets the Node's pod CIDR."""
        cidr = pod_cidr(self.names[name])
        self.recorder.wanted(name, canonical(cidr), self._views(name), self.now())
        self.server.patch_node(name, {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}})

    def delete(self, name: str) -> None:
        """The Node goes away (scale-down, replacement)."""
        self.server.delete_node(name)
        self.names.pop(name)
        self.recorder.gone(name, self.now())

    def readdress(self, name: str) -> None:
        """The Node comes back with another InternalIP (e.g. after a reboot)."""
        self.generation[name] = self.generation.get(name, 0) + 1
        self.server.patch_node_status(name, {"status": {"addresses": self._addresses(name)}})
        self.recorder.readdressed(
            name, canonical(pod_cidr(self.names[name])), self._views(name), self.now()
        )

    def drift(self, name: str) -> None:
        """Someone deletes the Node's route in the cloud behind the controller's back."""
        self.cloud.remove_route(CLUSTER, pod_cidr(self.names[name]))
        self.recorder.drifted(self.now())

    async def heartbeats(self) -> None:
        """Kubelets post status on every Node, one Node after another, forever."""
        while True:
            names = list(self.names)
            if not names:
                await asyncio.sleep(self.heartbeat)
                continue
            step = self.heartbeat / len(names)
            for name in names:
                await asyncio.sleep(step)
                if name in self.names:
                    ready = {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": _stamp(self.now()),
                        "lastTransitionTime": _stamp(0),
                    }
                    self.server.post_node_status(name, {"status": {"conditions": [ready]}})

    async def later(self, delay: float, action: Callable[[], None]) -> None:
        """Run ``action`` after ``delay`` seconds."""
        await asyncio.sleep(delay)
        action()


def _node(
    name: str, cidr: str | None, addresses: list[dict[str, str]], stamp: str
) -> dict[str, Any]:
    spec: dict[str, Any] = {"providerID": f"fake://{name}"}
    if cidr:
        spec |= {"podCIDR": cidr, "podCIDRs": [cidr]}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {
            "addresses": addresses,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": stamp,
                }
            ],
        },
    }


Scenario = Callable[[Sim, int], Coroutine[Any, Any, None]]
"""Drives a scenario's changes once the controller runs (:func:`setup` builds the start)."""


SETTLE = 60.0
"""Steady-state scenarios begin this long after the controllers start."""


def _spread(count: int, over: float, *, start: float = 0.0) -> list[float]:
    return [start + over * i / max(1, count) for i in range(count)]


async def join(sim: Sim, slot: int, name: str, *, rng: random.Random | None = None) -> None:
    """A Node registers, and gets its pod CIDR 2-5 s later (drawn from ``rng``)."""
    sim.register(slot, name)
    delay = (rng or sim.rng).uniform(2.0, 5.0)
    await sim.later(delay, lambda: sim.assign(name))


async def _scale_up(sim: Sim, nodes: int) -> None:
    tasks = []
    for slot, at in enumerate(_spread(nodes, 60.0)):
        await asyncio.sleep(max(0.0, at - sim.now()))
        tasks.append(asyncio.create_task(join(sim, slot, f"node-{slot:05d}")))
    await asyncio.gather(*tasks)


async def _scale_down(sim: Sim, nodes: int) -> None:
    victims = sim.rng.sample(sorted(sim.names), nodes // 2)
    for name, at in zip(victims, _spread(len(victims), 60.0), strict=True):
        await asyncio.sleep(max(0.0, at - sim.now()))
        sim.delete(name)


async def _rolling(sim: Sim, nodes: int) -> None:
    victims = sim.rng.sample(sorted(sim.names), max(1, nodes // 10))
    tasks = []
    for name, at in zip(victims, _spread(len(victims), 600.0), strict=True):
        await asyncio.sleep(max(0.0, at - sim.now()))
        slot = sim.names[name]
        sim.delete(name)  # the IPAM controller frees the CIDR; the replacement reuses it
        tasks.append(asyncio.create_task(join(sim, slot, f"{name}-r")))
    await asyncio.gather(*tasks)


async def _address_change(sim: Sim, nodes: int) -> None:
    """One Node's address changes every minute or so, once the controller has settled."""
    victims = sim.rng.sample(sorted(sim.names), max(1, nodes // 10))
    for name, at in zip(victims, _spread(len(victims), 600.0, start=SETTLE), strict=True):
        await asyncio.sleep(max(0.0, at - sim.now()))
        sim.readdress(name)


async def _drift(sim: Sim, nodes: int) -> None:
    await asyncio.sleep(60.0)
    for name in sim.rng.sample(sorted(sim.names), max(1, nodes // 20)):
        sim.drift(name)


async def _single_join(sim: Sim, nodes: int) -> None:
    slot = nodes
    while slot < MAX_SLOTS:
        await asyncio.sleep(300.0)
        await join(sim, slot, f"node-{slot:05d}")
        slot += 1


async def _idle(sim: Sim, nodes: int) -> None:
    """Nothing happens but kubelet heartbeats."""


async def _ipam_join(sim: Sim, nodes: int) -> None:
    """Nodes register without pod CIDRs at random times over the ten minutes after the
    controllers settled (random, so no join keeps step with a periodic controller)."""
    times = sorted(sim.rng.uniform(SETTLE, SETTLE + 600.0) for _ in range(nodes))
    for slot, at in enumerate(times):
        await asyncio.sleep(max(0.0, at - sim.now()))
        sim.register(slot, f"node-{slot:05d}")


WAVE_EVERY = (60.0, 120.0)
"""``ipam-churn``: seconds between two waves of replacements."""


async def _ipam_churn(sim: Sim, nodes: int) -> None:
    """From a settled start, every one to two minutes a tenth of the Nodes (at least one),
    picked at random, are deleted at once, and each replacement registers (without a pod
    CIDR) 0-10 s later, as a node-pool upgrade or a spot reclaim replaces machines: freed
    CIDRs are wanted again while their routes are being deleted."""
    slots = itertools.count(nodes)
    async with asyncio.TaskGroup() as group:
        await asyncio.sleep(SETTLE)
        while True:
            await asyncio.sleep(sim.rng.uniform(*WAVE_EVERY))
            for name in sim.rng.sample(sorted(sim.names), max(1, nodes // 10)):
                sim.delete(name)
                slot = next(slots)
                register = functools.partial(sim.register, slot, f"node-{slot:05d}")
                group.create_task(sim.later(sim.rng.uniform(0.0, 10.0), register))


FREE_AT = 300.0
"""When ``ipam-exhaustion`` frees capacity."""


async def _ipam_exhaustion(sim: Sim, nodes: int) -> None:
    """More Nodes than the pool has blocks register within a minute; at five minutes a
    tenth of the Nodes (among the older half, which surely got blocks) leave, so waiting
    Nodes may be served."""
    for slot, at in enumerate(_spread(nodes, 60.0)):
        await asyncio.sleep(max(0.0, at - sim.now()))
        sim.register(slot, f"node-{slot:05d}")
    await asyncio.sleep(max(0.0, FREE_AT - sim.now()))
    older = sorted(sim.names)[: nodes // 2]
    for name in sim.rng.sample(older, min(len(older), max(1, nodes // 10))):
        sim.delete(name)


DRIVERS: dict[str, Scenario] = {
    "idle": _idle,
    "scale-up": _scale_up,
    "scale-down": _scale_down,
    "rolling": _rolling,
    "address-change": _address_change,
    "drift": _drift,
    "single-join": _single_join,
    "ipam-join": _ipam_join,
    "ipam-churn": _ipam_churn,
    "ipam-exhaustion": _ipam_exhaustion,
}
EMPTY_AT_START = frozenset({"scale-up", "ipam-join", "ipam-exhaustion"})


def setup(sim: Sim, scenario: str, nodes: int) -> None:
    """The cluster before the controller starts: full, or empty for the scenarios that
    register every Node (:data:`EMPTY_AT_START`).

    The cloud also holds routes that are not routectl's (another cluster's table, and
    foreign routes in this one), which must never be touched.
    """
    for route in FOREIGN:
        sim.cloud.add_route(CLUSTER, route)
    sim.cloud.add_route("other-cluster", Route(target_node="x", destination_cidr="10.0.0.0/24"))
    if scenario not in EMPTY_AT_START:
        for slot in range(nodes):
            sim.place(slot)

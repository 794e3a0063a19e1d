"""KCM's node IPAM controller (the ``RangeAllocator`` of Kubernetes 1.36), for ``kcm+…`` profiles.

Today's stack is kube-controller-manager allocating pod CIDRs and the CCM's route
controller routing them; :class:`KcmAllocator` plays the first half over HTTP against the
fake API server, as ``shared/docs/node-ipam.md`` §1.4-1.7 describe it:

* it lists the Nodes and occupies every pod CIDR they hold in one :class:`CidrSet`, then
  watches; every Add and every Update (kubelet heartbeats included) queues the Node's name;
  a Delete releases the Node's CIDR **in the handler, at once** (no quarantine, whatever
  routes still point at the old Node);
* 30 workers take names from a client-go work queue with the default controller rate
  limiter: a Node gone or being deleted is left alone; one with pod CIDRs is occupied;
  otherwise it takes the next block from the cursor and patches
  ``{"spec":{"podCIDR","podCIDRs"}}``, up to three times back to back; a full pool records
  ``CIDRNotAvailable`` and the name is retried with backoff (each retry records it again);
  three failed patches record ``CIDRAssignmentFailed`` and release the block;
* Events (type Normal, source ``cidrAllocator``, ``Node <name> status is now: <reason>``)
  go through client-go's correlator, here :class:`~routectl.kube.events.EventRecorder` (a
  repeat raises ``count`` with a PATCH), in the background as the broadcaster sends them;
* requests are paced at KCM's ``--kube-api-qps=20 --kube-api-burst=30``.

Not modelled: dual stack, the service-range exclusion, leader election (one process), and
the correlator's spam filter (25 Events per Node, then one per 5 minutes: the retries of a
pending Node, at most one per 1000 s once backed off, never reach it).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import random
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from routectl.cidr import Network, network_or_none
from routectl.errors import KubeError, ResourceVersionGoneError
from routectl.ipam.core.objects import (
    CIDR_ASSIGNMENT_FAILED,
    CIDR_NOT_AVAILABLE,
    node_patch,
    status_message,
)
from routectl.kube import KubeClient, Pacing, node_event, parse_node
from routectl.kube.events import EventRecorder
from routectl_sim.cidrset import CidrOutOfRangeError, CidrSet, CidrSetFullError
from routectl_sim.workqueue import ControllerRateLimiter, WorkQueue

logger = logging.getLogger(__name__)
WORKERS = 30
"""``cidrUpdateWorkers``."""
PATCH_ATTEMPTS = 3
"""``cidrUpdateRetries``: back to back, no delay."""
PACING = Pacing(qps=20.0, burst=30)
"""KCM's default ``--kube-api-qps`` and ``--kube-api-burst``."""
WATCH_TIMEOUT_RANGE = (300, 600)

JsonObj = dict[str, Any]


def pod_cidrs(node: JsonObj) -> tuple[str, ...]:
    """``spec.podCIDRs`` (or the lone ``spec.podCIDR``) of a Node object."""
    spec = node.get("spec") or {}
    listed = tuple(str(c) for c in spec.get("podCIDRs") or ())
    return listed or ((str(spec["podCIDR"]),) if spec.get("podCIDR") else ())


def _networks(node: JsonObj) -> list[Network]:
    return [n for n in map(network_or_none, pod_cidrs(node)) if n is not None]


class KcmAllocator:
    """One kube-controller-manager's ``node-ipam-controller`` with ``RangeAllocator``."""

    def __init__(
        self,
        *,
        kube: KubeClient,
        cluster_cidr: Network,
        node_mask: int,
        wall_clock: Callable[[], datetime.datetime],
        rng: random.Random,
    ) -> None:
        self.kube = kube
        self.cidrs = CidrSet(cluster_cidr, node_mask)
        self.queue = WorkQueue(ControllerRateLimiter())
        self.nodes: dict[str, JsonObj] = {}
        self.synced = asyncio.Event()
        self._events = EventRecorder(kube)
        self._wall_clock = wall_clock
        self._rng = rng
        self._version: str | None = None
        self._sending: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Watch Nodes and allocate until cancelled."""
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._inform())
                await self.synced.wait()
                for _ in range(WORKERS):
                    group.create_task(self._work())
        finally:
            self.queue.close()
            for sending in self._sending:  # the broadcaster's backlog dies with the process
                sending.cancel()

    # -- the informer: handlers as KCM registers them ------------------------------------

    async def _inform(self) -> None:
        while True:
            try:
                if self._version is None:
                    self._version = await self._list()
                async for event in self.kube.watch_nodes(
                    resource_version=self._version,
                    timeout_seconds=self._rng.randrange(*WATCH_TIMEOUT_RANGE),
                ):
                    self._version = self._handle(event) or self._version
            except ResourceVersionGoneError:
                self._version = None
                await asyncio.sleep(1.0)
            except KubeError as exc:
                logger.info("KCM node informer: %s; retrying", exc)
                await asyncio.sleep(1.0)

    async def _list(self) -> str:
        listing = await self.kube.list_nodes()
        listed = {str(n["metadata"]["name"]): n for n in listing.items}
        for name in self.nodes.keys() - listed.keys():  # deleted while not watching
            self._release(self.nodes[name])
        if not self.synced.is_set():  # the constructor occupies what the first list shows
            for node in listed.values():
                self._occupy(node)
        self.nodes = listed
        for name in listed:
            self.queue.add(name)
        self.synced.set()
        return listing.resource_version

    def _handle(self, event: JsonObj) -> str | None:
        kind, node = event.get("type"), event.get("object") or {}
        metadata = node.get("metadata") or {}
        name = str(metadata.get("name", ""))
        if kind in ("ADDED", "MODIFIED"):
            self.nodes[name] = node
            self.queue.add(name)
        elif kind == "DELETED":  # released in the handler, not queued
            self._release(self.nodes.pop(name, node))
        version = metadata.get("resourceVersion")
        return str(version) if version else None

    # -- the workers ---------------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            name = await self.queue.get()
            try:
                if await self._sync(name):
                    self.queue.forget(name)
                else:
                    self.queue.add_rate_limited(name)
            finally:
                self.queue.done(name)

    async def _sync(self, name: str) -> bool:
        """``syncNode``: True on success, False to retry with backoff."""
        node = self.nodes.get(name)
        if node is None or (node.get("metadata") or {}).get("deletionTimestamp"):
            return True  # deleted: the Delete handler released it; terminating: kept
        if pod_cidrs(node):
            self._occupy(node)
            return True
        try:
            block = self.cidrs.allocate_next()
        except CidrSetFullError:
            self._record(node, CIDR_NOT_AVAILABLE)
            return False
        return await self._update(name, block)

    async def _update(self, name: str, block: Network) -> bool:
        """``updateCIDRsAllocation``: patch the Node with ``block``, or give it back."""
        node = self.nodes[name]  # no await since _sync read it: still there
        current = pod_cidrs(node)
        if current == (str(block),):
            return True
        if current:
            self.cidrs.release(block)
            return True
        error: KubeError | None = None
        for _ in range(PATCH_ATTEMPTS):
            try:
                await self.kube.patch_node(name, node_patch((block,)))
            except KubeError as exc:
                error = exc
            else:
                return True
        logger.info("KCM failed to update node %s PodCIDR: %s", name, error)
        self._record(node, CIDR_ASSIGNMENT_FAILED)
        if error is None or error.status != HTTPStatus.GATEWAY_TIMEOUT:
            self.cidrs.release(block)
        return False

    # -- the bitmap and Events -----------------------------------------------------------

    def _occupy(self, node: JsonObj) -> None:
        for network in _networks(node):
            with contextlib.suppress(CidrOutOfRangeError):
                self.cidrs.occupy(network)

    def _release(self, node: JsonObj) -> None:
        for network in _networks(node):
            with contextlib.suppress(CidrOutOfRangeError):
                self.cidrs.release(network)

    def _record(self, node: JsonObj, reason: str) -> None:
        view = parse_node(node)
        body = node_event(
            node=view,
            reason=reason,
            message=status_message(view.name, reason),
            event_type="Normal",
            now=self._wall_clock(),
            component="cidrAllocator",
        )
        task = asyncio.create_task(self._send(body))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, body: JsonObj) -> None:
        try:
            await self._events.create_event(body)
        except KubeError as exc:
            logger.info("KCM could not record an Event: %s", exc)


async def start_kcm(
    *,
    kubeconfig: str,
    cluster_cidr: Network,
    node_mask: int,
    wall_clock: Callable[[], datetime.datetime],
    seed: int,
) -> tuple[KcmAllocator, asyncio.Task[None]]:
    """Connect as KCM would and start allocating; cancel the task, then close ``kube``."""
    kube = await KubeClient.connect(kubeconfig=kubeconfig, pacing=PACING)
    allocator = KcmAllocator(
        kube=kube,
        cluster_cidr=cluster_cidr,
        node_mask=node_mask,
        wall_clock=wall_clock,
        rng=random.Random(f"kcm-{seed}"),  # noqa: S311 -- a seeded simulation
    )
    return allocator, asyncio.create_task(allocator.run())

"""The one place a routectl service is put together.

:func:`build_service` wires a provider, a Kubernetes client and settings into a
:class:`~routectl.process.service.Service`: the provider behind the gate, the Node store
and informer feeding the change tracker and the queue, the sync's pieces, the controller,
the worker's lease. The sync's pieces come from :func:`build_sync`, which the service's
builder calls and the controller's unit tests call too (with a recording API and the fake
cloud), so the rigs cannot drift from the service. ``routectl run``, the integration tests
and the simulator all build through :func:`build_service`, so what they run is what ships.
:class:`Sources` carries the process's randomness and wall clock, created once and handed
to whatever needs them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from routectl.cloud.budget import Budget
from routectl.cloud.fence import Fence
from routectl.cloud.gate import CloudGate
from routectl.cloud.listing import ListingCache
from routectl.cloud.policy import call_policy
from routectl.config import Settings
from routectl.kube import KubeClient
from routectl.kube.events import EventApi, EventRecorder
from routectl.kube.informer import Informer, NodeChanges, NodeStore
from routectl.kube.node_status import FencedWriter, NodeStatus
from routectl.model import NodeView
from routectl.observe.metrics import Metrics
from routectl.plan.reconcile import needs_sync
from routectl.process.election import ElectionSettings, LeaderElector
from routectl.process.service import Service
from routectl.provider import RouteProvider, batch_capable, load_factory, takes_budget
from routectl.sync.changes import Changes
from routectl.sync.controller import Controller
from routectl.sync.queue import CoalescingQueue

if TYPE_CHECKING:  # node IPAM is off by default: imported only when it is on
    from routectl.ipam.edge.step import IpamApi, NodeIpam

logger = logging.getLogger("routectl")
SETTLE_SHARE = 10
"""With batch writes, Node events this share of ``--batch-write-interval`` apart (or closer)
are one burst and settle into one write (see :func:`settle_quiet`)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Sources:
    """Randomness (jitter) and the wall clock (timestamps the API server stores)."""

    rng: random.Random
    wall_clock: Callable[[], datetime.datetime]

    @classmethod
    def system(cls) -> Sources:
        """The real ones: an unseeded generator and the system's UTC clock."""
        return cls(
            rng=random.Random(),  # noqa: S311 -- jitter, not cryptography
            wall_clock=lambda: datetime.datetime.now(datetime.UTC),
        )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Plugin:
    """A provider, and the budget it spends on each of its own requests (if it does)."""

    provider: RouteProvider
    budget: Budget | None = None
    """None: the provider took no budget, and the gate paces it once per call."""


def new_budget(settings: Settings, *, metrics: Metrics, sources: Sources) -> Budget:
    """The token bucket and pause every cloud request passes."""
    policy = call_policy(settings)
    return Budget(
        qps=policy.qps,
        burst=policy.burst,
        max_pause=settings.cloud_retry_after_cap,
        wall_clock=sources.wall_clock,
        observer=metrics,
    )


def load_provider(settings: Settings, *, metrics: Metrics, sources: Sources) -> Plugin:
    """Load the configured plugin and build it (bad name or options: ConfigError, no I/O).

    A factory that takes ``budget`` gets one and paces each of its requests with it.
    """
    factory = load_factory(settings.provider)
    options = dict(settings.provider_options)
    if not takes_budget(factory):
        logger.info(
            "Provider %s takes no request budget: each of its calls is paced as one request",
            settings.provider,
        )
        return Plugin(provider=factory(cluster_name=settings.cluster_name, options=options))
    budget = new_budget(settings, metrics=metrics, sources=sources)
    provider = factory(cluster_name=settings.cluster_name, options=options, budget=budget)
    return Plugin(provider=provider, budget=budget)


def gate(
    provider: RouteProvider | Plugin,
    settings: Settings,
    *,
    metrics: Metrics,
    sources: Sources,
    fence: Fence | None = None,
) -> CloudGate:
    """Put ``provider`` behind the budget, the fence, concurrency, timeouts and retries.

    Without a ``fence`` (``routectl plan``, which writes nothing) writes are not fenced.
    """
    plugin = provider if isinstance(provider, Plugin) else Plugin(provider=provider)
    budget = plugin.budget or new_budget(settings, metrics=metrics, sources=sources)
    return CloudGate(
        plugin.provider,
        policy=call_policy(settings),
        rng=sources.rng,
        budget=budget,
        fence=fence or Fence(open_=True),
        plugin_paces=plugin.budget is not None,
        observer=metrics,
    )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SyncParts:
    """What :func:`build_sync` puts together: the queue, the controller and what it uses."""

    queue: CoalescingQueue
    changes: Changes
    status: NodeStatus
    controller: Controller
    ipam: NodeIpam | None


def build_sync(
    settings: Settings,
    *,
    kube: EventApi,
    provider: RouteProvider,
    store: NodeStore,
    metrics: Metrics,
    sources: Sources,
    fence: Fence,
    timeout: float,
    ipam_api: IpamApi | None = None,
) -> SyncParts:
    """The sync's pieces over ``kube`` (Events aggregated, writes fenced) and ``provider``
    (as given: :func:`build_service` hands it the gate); node IPAM over ``ipam_api`` when
    the settings turn it on (and then ``ipam_api`` is required)."""
    changes = Changes()
    min_interval = settings.min_sync_interval
    settle_cap = None  # per-route writes: a Node change is written at once (leading edge)
    if settings.batch_writes and batch_capable(provider):
        min_interval = max(min_interval, settings.batch_write_interval)
        settle_cap = settings.batch_write_interval  # a burst settles into one table write
    queue = CoalescingQueue(
        batch_window=settings.batch_window,
        min_interval=min_interval,
        settle_cap=settle_cap,
        settle_quiet=settle_quiet(settings),
        observer=metrics.workqueue,
    )
    lease = (settings.leader_elect_resource_namespace, settings.leader_elect_resource_name)
    status = NodeStatus(
        kube=FencedWriter(EventRecorder(kube), fence=fence, timeout=timeout),
        nodes=store,
        lease=lease,
        wall_clock=sources.wall_clock,
        count_problem=lambda reason: metrics.problems.labels(reason=reason).inc(),
    )
    ipam = None
    if settings.routectl_allocate_node_cidrs:
        if ipam_api is None:
            raise ValueError("node IPAM needs an API to read and write claims and Nodes")
        from routectl.ipam.edge.metrics import IpamMetrics  # noqa: PLC0415 -- only when on
        from routectl.ipam.edge.step import NodeIpam  # noqa: PLC0415

        ipam = NodeIpam(
            settings=settings,
            reader=ipam_api,
            writer=FencedWriter(ipam_api, fence=fence, timeout=timeout),
            store=store,
            status=status,
            metrics=IpamMetrics.create(metrics.registry),
            clock=_loop_time,
            wall_clock=sources.wall_clock,
        )
    controller = Controller(
        settings=settings,
        store=store,
        changes=changes,
        listing=ListingCache(
            provider=provider,
            cluster_cidrs=settings.route_cidrs,
            max_age=settings.listing_max_age,
            clock=_loop_time,
        ),
        provider=provider,
        status=status,
        metrics=metrics,
        clock=_loop_time,
        queue=queue,
        ipam=ipam,
    )
    return SyncParts(queue=queue, changes=changes, status=status, controller=controller, ipam=ipam)


def build_service(
    settings: Settings,
    *,
    kube: KubeClient,
    provider: RouteProvider | Plugin,
    metrics: Metrics,
    identity: str,
    sources: Sources,
    election_kube: KubeClient | None = None,
) -> Service:
    """A service for ``settings`` over ``kube`` and ``provider`` (gated and fenced here);
    the leader election uses ``election_kube``, its own client, when given."""
    fence = Fence(open_=not settings.leader_elect)
    gated = gate(provider, settings, metrics=metrics, sources=sources, fence=fence)
    store = NodeStore()
    parts = build_sync(
        settings,
        kube=kube,
        provider=gated,
        store=store,
        metrics=metrics,
        sources=sources,
        fence=fence,
        timeout=kube.request_timeout,
        ipam_api=kube,
    )
    changes, queue, ipam = parts.changes, parts.queue, parts.ipam
    feed = Feed(changes, queue, watch_mode=settings.watch_mode, ipam=ipam)
    lease = (settings.leader_elect_resource_namespace, settings.leader_elect_resource_name)
    informer = Informer(
        kube=kube,
        store=store,
        on_change=feed.one,
        on_changes=feed.many,
        on_relist=lambda reason: metrics.relists.labels(reason=reason).inc(),
        rng=sources.rng,
        clock=_loop_time,
    )
    elector = LeaderElector(
        kube=election_kube or kube,
        settings=ElectionSettings(
            namespace=lease[0],
            name=lease[1],
            identity=identity,
            lease_duration=settings.leader_elect_lease_duration,
            renew_deadline=settings.leader_elect_renew_deadline,
            retry_period=settings.leader_elect_retry_period,
        ),
        rng=sources.rng,
        wall_clock=sources.wall_clock,
        fence=fence,
    )
    return Service(
        settings=settings,
        informer=informer,
        queue=queue,
        controller=parts.controller,
        elector=elector,
        provider=gated,
        metrics=metrics,
        rng=sources.rng,
    )


def settle_quiet(settings: Settings) -> float:
    """How long Node events must pause before a batch write goes out: the batch window, or a
    tenth of the batch write interval if longer (kubelets of a scale-up register a few
    hundred milliseconds apart, and a burst is one table write, not one per pause)."""
    return max(settings.batch_window, settings.batch_write_interval / SETTLE_SHARE)


class Feed:
    """The informer's callbacks: note every change, request a sync for those that matter (a
    sync that is writing hears of the request on the queue, and may take the change on)."""

    def __init__(
        self,
        changes: Changes,
        queue: CoalescingQueue,
        *,
        watch_mode: bool,
        ipam: NodeIpam | None = None,
    ) -> None:
        self._changes = changes
        self._queue = queue
        self._watch_mode = watch_mode
        self._ipam = ipam

    def one(self, old: NodeView | None, new: NodeView | None) -> None:
        """One change (a watch event)."""
        self.many([(old, new)])

    def many(self, changes: NodeChanges) -> None:
        """A list's changes, as many calls of :meth:`one` would (at one clock reading, and
        the sync requests they make in one call: the first list of a large cluster)."""
        now, wanted = _loop_time(), 0
        note, ipam, watch_mode = self._changes.note, self._ipam, self._watch_mode
        for old, new in changes:
            note(old, new, now=now)
            echo = ipam.note(old, new) if ipam is not None else False  # routed by the sync
            if watch_mode and not echo and needs_sync(old, new):
                wanted += 1
        if wanted:
            self._queue.request(trigger="node_change", settle=True, count=wanted)


def _loop_time() -> float:
    return asyncio.get_running_loop().time()

"""Prometheus metrics, in a registry of their own (never the global one).

``route_controller_route_sync_total{trigger,outcome}`` is upstream's (Kubernetes 1.37):
``trigger`` is ``node_change`` or ``periodic``, ``outcome`` is ``changed`` (a route was
created or deleted), ``noop`` or ``error``. What an SRE expects of a Kubernetes component is
there too, under client-go's and Prometheus' names:

* ``process_*`` and ``python_info``/``python_gc_*`` (the process and platform collectors),
  ``routectl_build_info{version,python_version}``;
* client-go's workqueue metrics for the single-key queue and its API-client metrics
  (:mod:`routectl.observe.clientgo_metrics`: ``metrics.workqueue`` and ``metrics.rest_client``).

Everything else is routectl's own, prefixed ``routectl_``. No ``_created`` series are
exported; every duration histogram's buckets reach past the cloud call timeout. The
budget's hold is measured truthfully: ``routectl_cloud_token_waiters`` (requests waiting for
a token now) and ``routectl_cloud_budget_held_seconds_total`` (time during which at least
one request waited: its rate is the share of time the budget held calls back, never above
1). :class:`Metrics` also receives the cloud-call records of the gate (``CallObserver``) and
the budget's (``BudgetObserver``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import platform

import prometheus_client
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

from routectl import __version__
from routectl.observe.clientgo_metrics import (
    QUEUE_LATENCY_BUCKETS,
    RestClientMetrics,
    WorkqueueMetrics,
    histogram,
)
from routectl.plan.problems import MALFORMED_ROUTE

CALL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 45, 60, 120)
"""Cloud calls: up to the default 30 s timeout and beyond (the timeout is added too)."""
WAIT_BUCKETS = (0.001, 0.01, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)


class _Held:
    """The union of the times during which at least one request waited for a token."""

    def __init__(self, total: Counter, waiters: Gauge) -> None:
        self._total, self._waiters = total, waiters
        self._count = 0
        self._since = 0.0

    def change(self, delta: int) -> None:
        now = asyncio.get_running_loop().time()
        if self._count == 0 and delta > 0:
            self._since = now
        self._count += delta
        self._waiters.set(self._count)
        if self._count == 0 and delta < 0:
            self._total.inc(max(0.0, now - self._since))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Metrics:
    """Every metric routectl exports."""

    registry: CollectorRegistry
    syncs: Counter
    cloud_calls: Counter
    cloud_call_seconds: Histogram
    token_waits: Histogram
    token_waiters: Gauge
    budget_held: Counter
    sync_duration: Histogram
    plan_duration: Histogram
    events_per_batch: Histogram
    route_latency: Histogram
    leader: Gauge
    relists: Counter
    mass_delete_blocked: Counter
    unconfirmed_writes: Counter
    """Writes the cloud acknowledged that the listing after them did not show."""
    problems: Counter
    cloud_requests: Counter
    cloud_paused_until: Gauge
    rest_client: RestClientMetrics
    """client-go's API-client metrics (the kube client's RequestObserver)."""
    workqueue: WorkqueueMetrics
    _held: _Held

    @classmethod
    def create(
        cls, registry: CollectorRegistry | None = None, *, call_timeout: float = 30.0
    ) -> Metrics:
        """Create the metrics in ``registry`` (a fresh one by default).

        ``call_timeout`` is the cloud call timeout: the call histogram has a bucket there.
        """
        prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
        r = registry if registry is not None else CollectorRegistry()
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        build = Gauge(
            "routectl_build_info",
            "routectl's version and the Python it runs on; always 1.",
            ["version", "python_version"],
            registry=r,
        )
        build.labels(version=__version__, python_version=platform.python_version()).set(1)
        call_buckets = tuple(sorted({*CALL_BUCKETS, call_timeout}))
        token_waiters = Gauge(
            "routectl_cloud_token_waiters",
            "Cloud requests waiting for a token of the client-side bucket now.",
            registry=r,
        )
        budget_held = Counter(
            "routectl_cloud_budget_held_seconds",
            "Seconds during which at least one cloud request waited for a token; its rate is "
            "the share of time the budget held calls back (at most 1).",
            registry=r,
        )
        return cls(
            registry=r,
            syncs=Counter(
                "route_controller_route_sync_total",
                "A metric counting the amount of times routes have been synced with the cloud provider.",  # noqa: E501 -- upstream's text
                ["trigger", "outcome"],
                registry=r,
            ),
            cloud_calls=Counter(
                "routectl_cloud_calls_total",
                "Cloud call attempts by operation and result.",
                ["operation", "result"],
                registry=r,
            ),
            cloud_call_seconds=histogram(
                "routectl_cloud_call_duration_seconds",
                "Duration of cloud call attempts.",
                ["operation"],
                call_buckets,
                r,
            ),
            token_waits=histogram(
                "routectl_cloud_token_wait_seconds",
                "How long each cloud request waited for a token (per request; concurrent waits "
                "overlap: see routectl_cloud_budget_held_seconds_total).",
                [],
                WAIT_BUCKETS,
                r,
            ),
            token_waiters=token_waiters,
            budget_held=budget_held,
            sync_duration=histogram(
                "routectl_sync_duration_seconds",
                "Duration of one route sync.",
                [],
                QUEUE_LATENCY_BUCKETS,
                r,
            ),
            plan_duration=histogram(
                "routectl_plan_duration_seconds",
                "Time to plan one sync, over the whole cluster (full) or the changed Nodes.",
                ["scope"],
                (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15),
                r,
            ),
            events_per_batch=histogram(
                "routectl_sync_requests_per_batch",
                "Sync requests (Node events, timers, retries) coalesced into one sync.",
                [],
                (1, 2, 5, 10, 50, 100, 500, 1000, 5000),
                r,
            ),
            route_latency=histogram(
                "routectl_route_programming_latency_seconds",
                "From the Node event that needed a route to the route existing in the cloud.",
                [],
                QUEUE_LATENCY_BUCKETS,
                r,
            ),
            leader=Gauge("routectl_leader", "1 while this replica holds the lease.", registry=r),
            relists=Counter(
                "routectl_informer_relists_total",
                "Full Node listings after the first.",
                ["reason"],
                registry=r,
            ),
            mass_delete_blocked=Counter(
                "routectl_mass_delete_blocked_total",
                "Syncs whose deletes were withheld by the mass-delete guard.",
                registry=r,
            ),
            unconfirmed_writes=Counter(
                "routectl_unconfirmed_writes_total",
                "Route writes the cloud acknowledged that the listing after them did not show "
                "(written again).",
                ["operation"],
                registry=r,
            ),
            problems=Counter(
                "routectl_input_problems_total",
                "Bad input found while planning (malformed or conflicting CIDRs).",
                ["reason"],
                registry=r,
            ),
            cloud_requests=Counter(
                "routectl_cloud_requests_total",
                "Requests let through the cloud budget (a plugin's pages and polls included).",
                ["operation"],
                registry=r,
            ),
            cloud_paused_until=Gauge(
                "routectl_cloud_calls_paused_until_seconds",
                "Unix time until which a cloud's retry-after holds every call back (0: never).",
                registry=r,
            ),
            rest_client=RestClientMetrics(r),
            workqueue=WorkqueueMetrics(r),
            _held=_Held(budget_held, token_waiters),
        )

    def attempt(self, *, operation: str, result: str, seconds: float) -> None:
        """Record one cloud call attempt (CallObserver)."""
        self.cloud_calls.labels(operation=operation, result=result).inc()
        self.cloud_call_seconds.labels(operation=operation).observe(seconds)

    def malformed_route(self) -> None:
        """Count a listed route the gate left out for its shape (CallObserver)."""
        self.problems.labels(reason=MALFORMED_ROUTE).inc()

    def token_wait(self, *, seconds: float) -> None:
        """Record how long one request waited for a token (BudgetObserver)."""
        self.token_waits.observe(seconds)

    def waiting(self, *, delta: int) -> None:
        """A request started (+1) or stopped (-1) waiting for a token (BudgetObserver)."""
        self._held.change(delta)

    def request(self, *, operation: str) -> None:
        """Record a request let through the budget (BudgetObserver)."""
        self.cloud_requests.labels(operation=operation).inc()

    def paused_until(self, *, unix_time: float) -> None:
        """Record until when calls are paused (BudgetObserver)."""
        self.cloud_paused_until.set(unix_time)

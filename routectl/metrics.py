"""Prometheus metrics, in a registry of their own (never the global one).

``route_controller_route_sync_total{trigger,outcome}`` is upstream's (Kubernetes 1.37):
``trigger`` is ``node_change`` or ``periodic``, ``outcome`` is ``changed`` (a route was
created or deleted), ``noop`` or ``error``. Everything else is routectl's own, prefixed
``routectl_``. :class:`Metrics` also receives the cloud-call records of
:class:`~routectl.provider.RateLimitedProvider` (it is a ``CallObserver``).
"""

from __future__ import annotations

import dataclasses

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Metrics:
    """Every metric routectl exports."""

    registry: CollectorRegistry
    syncs: Counter
    cloud_calls: Counter
    cloud_call_seconds: Histogram
    token_waits: Histogram
    sync_duration: Histogram
    plan_duration: Histogram
    events_per_batch: Histogram
    route_latency: Histogram
    leader: Gauge
    relists: Counter
    mass_delete_blocked: Counter
    problems: Counter
    cloud_requests: Counter
    cloud_paused_until: Gauge

    @classmethod
    def create(cls, registry: CollectorRegistry | None = None) -> Metrics:
        """Create the metrics in ``registry`` (a fresh one by default)."""
        r = registry if registry is not None else CollectorRegistry()
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
            cloud_call_seconds=Histogram(
                "routectl_cloud_call_duration_seconds",
                "Duration of cloud call attempts.",
                ["operation"],
                registry=r,
            ),
            token_waits=Histogram(
                "routectl_cloud_token_wait_seconds",
                "Time cloud calls waited for a token of the client-side bucket (_sum: total).",
                registry=r,
            ),
            sync_duration=Histogram(
                "routectl_sync_duration_seconds",
                "Duration of one route sync.",
                buckets=LATENCY_BUCKETS,
                registry=r,
            ),
            plan_duration=Histogram(
                "routectl_plan_duration_seconds",
                "Time to plan one sync, over the whole cluster (full) or the changed Nodes.",
                ["scope"],
                buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15),
                registry=r,
            ),
            events_per_batch=Histogram(
                "routectl_sync_requests_per_batch",
                "Sync requests (Node events, timers, retries) coalesced into one sync.",
                buckets=(1, 2, 5, 10, 50, 100, 500, 1000, 5000),
                registry=r,
            ),
            route_latency=Histogram(
                "routectl_route_programming_latency_seconds",
                "From the Node event that needed a route to the route existing in the cloud.",
                buckets=LATENCY_BUCKETS,
                registry=r,
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
        )

    def attempt(self, *, operation: str, result: str, seconds: float) -> None:
        """Record one cloud call attempt (CallObserver)."""
        self.cloud_calls.labels(operation=operation, result=result).inc()
        self.cloud_call_seconds.labels(operation=operation).observe(seconds)

    def token_wait(self, *, seconds: float) -> None:
        """Record time spent waiting for a token (BudgetObserver)."""
        self.token_waits.observe(seconds)

    def request(self, *, operation: str) -> None:
        """Record a request let through the budget (BudgetObserver)."""
        self.cloud_requests.labels(operation=operation).inc()

    def paused_until(self, *, unix_time: float) -> None:
        """Record until when calls are paused (BudgetObserver)."""
        self.cloud_paused_until.set(unix_time)

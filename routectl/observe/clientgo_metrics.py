"""client-go's metrics, under client-go's names, for what routectl does as client-go would.

* the workqueue metrics of the single-key queue (``name="routes"``): ``workqueue_depth``,
  ``_adds_total``, ``_queue_duration_seconds``, ``_work_duration_seconds``,
  ``_unfinished_work_seconds``, ``_longest_running_processor_seconds``, ``_retries_total``
  (:class:`WorkqueueMetrics`, a :class:`~routectl.sync.queue.QueueObserver`);
* the API client's: ``rest_client_requests_total{code,host,method}``,
  ``rest_client_request_duration_seconds{host,verb}`` and
  ``rest_client_rate_limiter_duration_seconds{host,verb}`` (:class:`RestClientMetrics`, a
  :class:`~routectl.kube.RequestObserver`).

Promises: names, labels and help texts are client-go's, so its dashboards and alerts work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["QUEUE", "QUEUE_LATENCY_BUCKETS", "RestClientMetrics", "WorkqueueMetrics", "histogram"]

QUEUE_LATENCY_BUCKETS = (0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800)
"""The workqueue's and a sync's seconds: a batch window to a backoff cap and past it."""
REQUEST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)
"""client-go's request latency buckets, up to the API client's 30 s timeout and past it."""
QUEUE = "routes"


def histogram(
    name: str, doc: str, labels: list[str], buckets: tuple[float, ...], r: CollectorRegistry
) -> Histogram:
    """A histogram in ``r``."""
    return Histogram(name, doc, labels, buckets=buckets, registry=r)


class WorkqueueMetrics:
    """client-go's workqueue metrics for one queue (a QueueObserver)."""

    def __init__(self, registry: CollectorRegistry, *, name: str = QUEUE) -> None:
        def gauge(metric: str, doc: str) -> Gauge:
            return Gauge(metric, doc, ["name"], registry=registry).labels(name=name)

        def counter(metric: str, doc: str) -> Counter:
            return Counter(metric, doc, ["name"], registry=registry).labels(name=name)

        def latency(metric: str, doc: str) -> Histogram:
            return histogram(metric, doc, ["name"], QUEUE_LATENCY_BUCKETS, registry).labels(
                name=name
            )

        self.depth = gauge("workqueue_depth", "Current depth of workqueue")
        self.adds = counter("workqueue_adds", "Total number of adds handled by workqueue")
        self.retries = counter("workqueue_retries", "Total number of retries handled by workqueue")
        self.queue_duration = latency(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
        )
        self.work_duration = latency(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
        )
        gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration.",
        ).set_function(self._running_for)
        gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
        ).set_function(self._running_for)
        self._clock: Callable[[], float] | None = None
        self._started: float | None = None

    def _now(self) -> float:
        if self._clock is None:
            self._clock = asyncio.get_running_loop().time
        return self._clock()

    def _running_for(self) -> float:
        if self._started is None or self._clock is None:
            return 0.0
        return max(0.0, self._clock() - self._started)

    def added(self) -> None:
        """A request made the key dirty (requests coalesced into it are not adds)."""
        self.adds.inc()
        self.depth.set(1)

    def claimed(self, *, waited: float) -> None:
        """The key was handed to the worker after ``waited`` seconds in the queue."""
        self.depth.set(0)
        self.queue_duration.observe(max(0.0, waited))
        self._started = self._now()

    def finished(self) -> None:
        """The worker is done with the key."""
        if self._started is not None:
            self.work_duration.observe(max(0.0, self._now() - self._started))
        self._started = None

    def retried(self) -> None:
        """The key was requeued after a failure."""
        self.retries.inc()


class RestClientMetrics:
    """client-go's API-client metrics (a RequestObserver)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "host", "method"],
            registry=registry,
        )
        self.request_seconds = histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["host", "verb"],
            REQUEST_BUCKETS,
            registry,
        )
        self.rate_limited_seconds = histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            ["host", "verb"],
            REQUEST_BUCKETS,
            registry,
        )

    def api_request(self, *, method: str, host: str, code: str, seconds: float) -> None:
        """Record one API server request."""
        self.requests.labels(code=code, host=host, method=method).inc()
        self.request_seconds.labels(host=host, verb=method).observe(seconds)

    def api_rate_limited(self, *, method: str, host: str, seconds: float) -> None:
        """Record the time one API request waited for the client-side limit."""
        self.rate_limited_seconds.labels(host=host, verb=method).observe(seconds)

"""What an SRE expects of /metrics: process and build series, client-go's workqueue and
API-client names, no ``_created`` series, buckets past the call timeout, and a token-wait
measure whose reading is true."""

from __future__ import annotations

import asyncio
import datetime

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from routectl import __version__
from routectl.cloud.budget import Budget
from routectl.observe.metrics import Metrics
from routectl.sync.queue import CoalescingQueue

pytestmark = pytest.mark.looptime


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample, as Prometheus would scrape it."""
    text = generate_latest(metrics.registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(metrics: Metrics, sample: str, **labels: str) -> float:
    """One sample's value."""
    return samples(metrics)[(sample, tuple(sorted(labels.items())))]


async def test_process_platform_and_build_series_and_no_created_series() -> None:
    """process_*, python_info and routectl_build_info are there; no *_created at all."""
    names = {name for name, _ in samples(Metrics.create())}
    assert {"process_resident_memory_bytes", "process_cpu_seconds_total", "python_info"} <= names
    assert "routectl_build_info" in names
    assert not [name for name in names if name.endswith("_created")]
    build = [labels for name, labels in samples(Metrics.create()) if name == "routectl_build_info"]
    assert ("version", __version__) in build[0]


async def test_call_buckets_reach_past_the_call_timeout() -> None:
    """The cloud call histogram has a bucket at the configured timeout and above it."""
    metrics = Metrics.create(call_timeout=45.0)
    metrics.attempt(operation="create", result="timeout", seconds=45.0)
    buckets = [
        float(dict(labels)["le"])
        for name, labels in samples(metrics)
        if name == "routectl_cloud_call_duration_seconds_bucket"
    ]
    assert 30.0 in buckets
    assert 45.0 in buckets
    assert max(b for b in buckets if b != float("inf")) > 45.0


async def test_the_single_key_queue_reports_client_gos_workqueue_metrics() -> None:
    """adds, depth, queue and work durations, the running processor and retries, name=routes."""
    metrics = Metrics.create()
    queue = CoalescingQueue(batch_window=1.0, observer=metrics.workqueue)
    queue.request()  # on an idle queue: claimed at once (the leading edge)
    assert await queue.claim() is not None
    queue.request()  # during the sync: waits one batch window
    queue.request()  # coalesced: not another add
    assert value(metrics, "workqueue_adds_total", name="routes") == 2
    assert value(metrics, "workqueue_depth", name="routes") == 1
    queue.done()
    assert await queue.claim() is not None
    assert value(metrics, "workqueue_depth", name="routes") == 0
    assert value(metrics, "workqueue_queue_duration_seconds_sum", name="routes") == pytest.approx(
        1.0
    )
    await asyncio.sleep(5)
    assert value(
        metrics, "workqueue_longest_running_processor_seconds", name="routes"
    ) == pytest.approx(5.0)
    assert value(metrics, "workqueue_unfinished_work_seconds", name="routes") == pytest.approx(5.0)
    queue.retry_after(10.0)
    queue.done()
    assert value(metrics, "workqueue_work_duration_seconds_sum", name="routes") == pytest.approx(
        5.0  # the first sync took no time, the second 5 s
    )
    assert value(metrics, "workqueue_longest_running_processor_seconds", name="routes") == 0
    assert value(metrics, "workqueue_retries_total", name="routes") == 1
    assert value(metrics, "workqueue_adds_total", name="routes") == 3


async def test_budget_hold_is_the_union_of_waits_never_more_than_the_time_passed() -> None:
    """Ten requests wait at once on a 1/s bucket: their waits add up to ~45 s over ~9 s, but
    the held time is ~9 s, and the waiter gauge shows them while they wait."""
    metrics = Metrics.create()
    budget = Budget(
        qps=1.0,
        burst=1,
        max_pause=0.0,
        wall_clock=lambda: datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC),
        observer=metrics,
    )
    loop = asyncio.get_running_loop()
    start = loop.time()
    tasks = [asyncio.create_task(budget.spend()) for _ in range(10)]
    await asyncio.sleep(0.5)
    assert value(metrics, "routectl_cloud_token_waiters") == 10
    await asyncio.gather(*tasks)
    elapsed = loop.time() - start
    held = value(metrics, "routectl_cloud_budget_held_seconds_total")
    summed = value(metrics, "routectl_cloud_token_wait_seconds_sum")
    assert held <= elapsed + 1e-6
    assert held == pytest.approx(elapsed, abs=0.01)
    assert summed > 4 * held  # the per-request sum overlaps; the held time does not
    assert value(metrics, "routectl_cloud_token_waiters") == 0


async def test_api_requests_are_counted_by_code_and_method() -> None:
    """client-go's rest_client_* names and labels."""
    metrics = Metrics.create()
    metrics.rest_client.api_request(method="PATCH", host="h:6443", code="200", seconds=0.2)
    metrics.rest_client.api_rate_limited(method="PATCH", host="h:6443", seconds=0.0)
    assert (
        value(metrics, "rest_client_requests_total", code="200", host="h:6443", method="PATCH") == 1
    )
    assert (
        value(metrics, "rest_client_request_duration_seconds_count", host="h:6443", verb="PATCH")
        == 1
    )
    assert (
        value(
            metrics, "rest_client_rate_limiter_duration_seconds_count", host="h:6443", verb="PATCH"
        )
        == 1
    )

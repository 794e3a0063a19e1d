"""Events like client-go's correlator, on the real client against the fake API server:
repeats raise one object's count, across a restart too, never a new object per retry."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest

from routectl.kube import KubeClient, node_event
from routectl.kube.events import EventRecorder, event_name
from routectl.model import NodeView
from tests.integration.conftest import Cluster, node_object

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

T0 = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
NODE = NodeView(name="n1", uid="u-1", pod_cidrs=("10.244.1.0/24",), addresses=())


def warning(
    message: str, *, minutes: int = 0, reason: str = "ClusterCIDRMisconfigured"
) -> dict[str, Any]:
    """A Warning about n1, as the sync writes it."""
    now = T0 + datetime.timedelta(minutes=minutes)
    return node_event(node=NODE, reason=reason, message=message, event_type="Warning", now=now)


async def connect(cluster: Cluster) -> KubeClient:
    return await KubeClient.connect(kubeconfig=str(cluster.kubeconfig))


def events(cluster: Cluster, reason: str = "ClusterCIDRMisconfigured") -> list[dict[str, Any]]:
    return [e for e in cluster.server.events() if e["reason"] == reason]


async def test_a_repeated_event_is_one_object_whose_count_and_last_time_grow(
    cluster: Cluster,
) -> None:
    """Three identical Warnings: one Event, count 3, first time kept, last time the latest."""
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    kube = await connect(cluster)
    recorder = EventRecorder(kube)
    try:
        for minute in range(3):
            await recorder.create_event(warning("pod CIDR outside", minutes=minute))
    finally:
        await kube.aclose()
    (event,) = events(cluster)
    assert event["count"] == 3
    assert event["firstTimestamp"] == "2026-12-01T12:00:00Z"
    assert event["lastTimestamp"] == "2026-12-01T12:02:00Z"
    assert event["metadata"]["namespace"] == "default"
    assert event["involvedObject"]["name"] == "n1"
    patches = [r for r in cluster.server.requests if r.method == "PATCH" and "/events/" in r.path]
    assert len(patches) == 2
    assert all(r.content_type == "application/strategic-merge-patch+json" for r in patches)


async def test_similar_events_with_new_messages_update_the_message(cluster: Cluster) -> None:
    """A retry's message differs (its duration); the object is the same, its message the newest."""
    kube = await connect(cluster)
    recorder = EventRecorder(kube)
    try:
        await recorder.create_event(warning("failed after 1.2s", reason="FailedToCreateRoute"))
        await recorder.create_event(warning("failed after 3.4s", reason="FailedToCreateRoute"))
    finally:
        await kube.aclose()
    (event,) = events(cluster, "FailedToCreateRoute")
    assert (event["count"], event["message"]) == (2, "failed after 3.4s")


async def test_a_new_process_raises_the_count_of_its_predecessors_event(cluster: Cluster) -> None:
    """Four recorders (four starts) reporting the same problem leave one Event, count 4."""
    for start in range(4):
        kube = await connect(cluster)
        try:
            await EventRecorder(kube).create_event(warning("pod CIDR outside", minutes=start))
        finally:
            await kube.aclose()
    (event,) = events(cluster)
    assert event["count"] == 4
    assert event["lastTimestamp"] == "2026-12-01T12:03:00Z"


async def test_an_expired_event_is_created_again(cluster: Cluster) -> None:
    """The API server dropped the Event (TTL): the next repeat creates it anew, count 1."""
    kube = await connect(cluster)
    recorder = EventRecorder(kube)
    try:
        await recorder.create_event(warning("pod CIDR outside"))
        cluster.server.expire_events()
        await recorder.create_event(warning("pod CIDR outside", minutes=1))
        await recorder.create_event(warning("pod CIDR outside", minutes=2))
    finally:
        await kube.aclose()
    (event,) = events(cluster)
    assert event["count"] == 2  # created again at the 404, raised once after


async def test_concurrent_repeats_lose_no_count(cluster: Cluster) -> None:
    """Ten repeats at once (two CIDRs of a Node failing together, say): count 10."""
    kube = await connect(cluster)
    recorder = EventRecorder(kube)
    try:
        await asyncio.gather(*(recorder.create_event(warning("x")) for _ in range(10)))
    finally:
        await kube.aclose()
    (event,) = events(cluster)
    assert event["count"] == 10


async def test_messages_are_redacted_before_they_are_sent(cluster: Cluster) -> None:
    """A credential in an error text never reaches the Event."""
    kube = await connect(cluster)
    try:
        await EventRecorder(kube).create_event(warning("cloud said: Authorization: Bearer abc.def"))
    finally:
        await kube.aclose()
    (event,) = events(cluster)
    assert "abc.def" not in event["message"]


def test_the_name_is_the_objects_and_stable() -> None:
    """Derived from the key only: the same for every message and every process."""
    assert event_name(warning("a")) == event_name(warning("b", minutes=5))
    assert event_name(warning("a")).startswith("n1.")
    assert event_name(warning("a")) != event_name(warning("a", reason="Other"))

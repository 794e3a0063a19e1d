"""A watch that keeps failing right after each relist backs off like client-go's reflector:
the relists slow down (1 s doubling to 30 s), the streak is said once at WARNING, and the
informer is not ready meanwhile; a quiet period starts a new streak."""

from __future__ import annotations

import asyncio
import logging

import pytest

from routectl_sim.apiserver import FakeApiServer
from tests.integration.conftest import Cluster, eventually, node_object

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

NODES = "^/api/v1/nodes$"


def node_lists(server: FakeApiServer) -> int:
    """How many Node LISTs (not watches) the server has received."""
    return sum(
        1
        for r in server.requests
        if r.method == "GET" and r.path == "/api/v1/nodes" and "watch" not in r.query
    )


async def test_a_watch_answered_410_every_time_relists_with_backoff(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Every watch gets 410: over ten minutes the Node list is read a couple dozen times, not
    once a second; one WARNING names the cause; the informer says it is failing."""
    caplog.set_level(logging.DEBUG, logger="routectl.informer")
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    cluster.server.fail_next(method="GET", path_regex=NODES, status=410, times=10**6, watch=True)
    running = await cluster.start()
    await eventually(running.service.informer.synced.is_set)
    await asyncio.sleep(600)
    lists = node_lists(cluster.server)
    # 1+2+4+8+16 s, then every 30 s (jittered by at most 20%): about 24 lists in 600 s.
    assert 10 <= lists <= 30, lists
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.name == "routectl.informer" and r.levelno == logging.WARNING
    ]
    assert len(warnings) == 1, warnings
    assert "410" in warnings[0]
    assert "backoff" in warnings[0]
    ready, why = running.service.ready()
    assert not ready
    assert "expiring" in why


async def test_a_one_off_410_costs_one_relist(cluster: Cluster) -> None:
    """A single expiry (etcd compaction) costs one relist and no more; the watch then holds."""
    running = await cluster.start()
    await eventually(running.service.informer.synced.is_set)
    await asyncio.sleep(5)  # the watch has held for a while: its end is a normal one
    before = node_lists(cluster.server)
    cluster.server.fail_next(method="GET", path_regex=NODES, status=410, times=1, watch=True)
    cluster.server.end_watches()
    await asyncio.sleep(120)
    assert node_lists(cluster.server) - before == 1
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    await eventually(lambda: len(cluster.routes()) == 1)
    assert running.service.ready()[0]

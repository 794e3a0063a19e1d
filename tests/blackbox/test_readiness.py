"""Readiness at the physical limit, on the real process: each Node is marked ready when its
own route exists, not when the whole batch is done; a lone Node waits for no window."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from routectl.testing import RouteChange
from tests.blackbox.conftest import Bench, node, until

pytestmark = pytest.mark.blackbox


@pytest.mark.slow
async def test_nodes_turn_ready_one_by_one_as_their_routes_are_made(bench: Bench) -> None:
    """20 Nodes at start-up, cloud writes of 1 s, the default budget (2/s, burst 10): the
    first Node's NetworkUnavailable=False is written before the last Node's route exists."""
    cloud = bench.cloud.cloud
    cloud.settings = dataclasses.replace(cloud.settings, write_latency=1.0)
    loop = asyncio.get_running_loop()
    ready: dict[str, float] = {}
    routed: dict[str, float] = {}

    def on_node(kind: str, obj: dict[str, Any]) -> None:
        for c in (obj.get("status") or {}).get("conditions") or []:
            if c["type"] == "NetworkUnavailable" and c["status"] == "False":
                ready.setdefault(obj["metadata"]["name"], loop.time())

    def on_route(change: RouteChange) -> None:
        if change.operation == "create":
            routed.setdefault(change.route.target_node, loop.time())

    bench.apiserver.watch_nodes(on_node)
    cloud.listeners.append(on_route)
    names = [f"n{i:02d}" for i in range(20)]
    for i, name in enumerate(names):
        bench.apiserver.create_node(node(name, f"10.244.{i}.0/24"))
    a = await bench.start(bench.args("--leader-elect=false"))
    await until(lambda: len(ready) == 20, within=120)
    assert set(routed) == set(names)
    assert min(ready.values()) < max(routed.values()), "conditions waited for the whole batch"
    for name in names:  # and no Node is marked before its own route exists
        assert ready[name] >= routed[name]
    assert await a.stop() == 0


@pytest.mark.slow
async def test_a_lone_new_node_is_routed_without_waiting_for_a_listing(bench: Bench) -> None:
    """Long after the last listing (past --route-listing-max-age), a new Node's route is
    created before any new ListRoutes: the fresh listing comes behind the write."""
    bench.apiserver.create_node(node("first", "10.244.1.0/24"))
    # A maximum age of 1ms: every cached listing is already too old when the next event comes.
    a = await bench.start(bench.args("--leader-elect=false", "--route-listing-max-age=1ms"))
    await until(lambda: bench.condition("first") == ("False", "RouteCreated"), within=60)
    assert [r.operation for r in bench.cloud.requests] == ["list", "create"]
    before = len(bench.cloud.requests)
    bench.apiserver.create_node(node("second", "10.244.2.0/24"))
    await until(lambda: bench.condition("second") == ("False", "RouteCreated"), within=60)
    await until(lambda: len(bench.cloud.requests) >= before + 2, within=60)
    after = [r.operation for r in bench.cloud.requests[before:]]
    assert after[:2] == ["create", "list"], after
    assert await a.stop() == 0

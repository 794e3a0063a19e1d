"""Upstream's periodic mode on the real process: every period lists the routes; a cluster
at rest is left alone, drift and a new Node are repaired within a period."""

from __future__ import annotations

import pytest

from tests.blackbox.conftest import Bench, node, until

pytestmark = pytest.mark.blackbox

PERIODIC = (
    "--feature-gates=CloudControllerManagerWatchBasedRoutesReconciliation=false",
    "--route-reconciliation-period=1s",
    "--v=4",
)


def lists(bench: Bench) -> int:
    return sum(1 for r in bench.cloud.requests if r.operation == "list")


@pytest.mark.slow
async def test_a_cluster_at_rest_is_listed_every_period_and_drift_is_repaired(
    bench: Bench,
) -> None:
    for i in range(1, 4):
        bench.apiserver.create_node(node(f"n{i}", f"10.244.{i}.0/24"))
    running = await bench.start(bench.args(*PERIODIC))
    await until(lambda: len(bench.routes()) == 3 and bench.condition("n3") is not None)
    await until(
        lambda: all(bench.condition(f"n{i}") == ("False", "RouteCreated") for i in (1, 2, 3))
    )
    at_rest = lists(bench)
    writes = len(bench.cloud.writes())
    await until(lambda: lists(bench) >= at_rest + 3, within=20)
    assert len(bench.cloud.writes()) == writes, "a cluster at rest gets no write"
    assert running.logged("as the last sync left them, which found nothing to do"), "not planned"
    assert (
        await running.metric(
            "route_controller_route_sync_total", trigger="periodic", outcome="noop"
        )
        >= 3
    )
    bench.cloud.cloud.remove_route("kubernetes", "10.244.2.0/24")  # drift, behind its back
    await until(lambda: ("n2", "10.244.2.0/24") in bench.routes(), within=20)
    bench.apiserver.create_node(node("n9", "10.244.9.0/24"))
    await until(lambda: ("n9", "10.244.9.0/24") in bench.routes(), within=20)
    await until(lambda: bench.condition("n9") == ("False", "RouteCreated"), within=20)
    assert bench.routes() == {(f"n{i}", f"10.244.{i}.0/24") for i in (1, 2, 3, 9)}
    assert await running.stop() == 0

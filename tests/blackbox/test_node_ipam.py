"""Node IPAM from outside: the real `routectl run` process, over HTTP, with
--routectl-allocate-node-cidrs. Only what a user can see is observed (Nodes, Leases, routes,
/metrics); nothing is timed."""

from __future__ import annotations

import pytest

from tests.blackbox.conftest import Bench, Routectl, node, until

pytestmark = pytest.mark.blackbox


async def syncs(process: Routectl) -> float:
    total = 0.0
    for trigger in ("node_change", "periodic"):
        for outcome in ("changed", "noop", "error"):
            total += await process.metric(
                "route_controller_route_sync_total", trigger=trigger, outcome=outcome
            )
    return total


@pytest.mark.slow
async def test_a_node_without_a_pod_cidr_becomes_ready_in_one_sync(bench: Bench) -> None:
    """Created without a pod CIDR, a Node gets its CIDR, claim, route and
    NetworkUnavailable=False from one sync, with no ListRoutes of its own."""
    args = bench.args(
        "--routectl-allocate-node-cidrs",
        "--leader-elect=false",
        cluster_cidr="10.244.0.0/16",
        node_cidr_mask_size="24",
    )
    process = await bench.start(args)
    await until(lambda: bench.cloud.cloud.count("list") >= 1, within=60)
    await until(lambda: process.logged("Node IPAM rebuilt"), within=60)
    before, lists = await syncs(process), bench.cloud.cloud.count("list")
    bench.apiserver.create_node(node("fresh"))
    await until(lambda: bench.condition("fresh") == ("False", "RouteCreated"), within=60)
    spec = bench.apiserver.get_node("fresh")["spec"]
    assert spec["podCIDRs"] == ["10.244.0.0/24"]
    assert spec["podCIDR"] == "10.244.0.0/24"
    assert bench.routes() == {("fresh", "10.244.0.0/24")}
    lease = bench.apiserver.get_lease("kube-system", "podcidr-v4-10-244-0-0-24")
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "fresh"
    assert await syncs(process) == before + 1
    assert bench.cloud.cloud.count("list") == lists
    assert await process.metric("routectl_ipam_allocations_total", result="allocated") == 1

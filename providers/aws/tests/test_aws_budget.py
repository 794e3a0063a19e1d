"""Every request the aws provider sends passes routectl's bucket (issue 12, item 4).

routectl is built as ``routectl run`` builds it, with ``--cloud-qps 1 --cloud-burst 1``, in
front of moto's EC2 through the counting proxy, which stamps every request with the loop time.
Ten creates (two nodes: look-ups, source/destination checks, routes) must reach EC2 at most
``burst + qps * W`` in any window of W seconds. moto runs in a thread, so this test runs on
the real clock: about fifteen seconds (one request a second), allowing for the jitter between
a token and the request's arrival at the proxy.
"""

from __future__ import annotations

import asyncio

import pytest
from routectl_aws.testing import FaultProxy, Vpc

from routectl.cli.flags import parse_run_flags
from routectl.model import Route
from routectl.observe.metrics import Metrics
from routectl.process.wiring import Sources, gate, load_provider
from routectl.testing.contract_budget import over_budget


@pytest.mark.slow
async def test_ten_creates_stay_within_the_bucket(vpc: Vpc, proxy: FaultProxy) -> None:
    """DescribeRouteTables, DescribeInstances, ModifyInstanceAttribute and CreateRoute alike."""
    await vpc.cluster_table("prod")
    nodes = [i.dns for i in await vpc.launch(2)]
    settings = parse_run_flags(
        [
            "--cluster-cidr=10.244.0.0/16",
            "--cluster-name=prod",
            "--provider=aws",
            "--provider-option=region=us-east-1",
            f"--provider-option=endpoint-url={proxy.url}",
            "--cloud-qps=1",
            "--cloud-burst=1",
        ]
    )
    metrics, sources = Metrics.create(), Sources.system()
    plugin = load_provider(settings, metrics=metrics, sources=sources)
    assert plugin.budget is not None, "the aws factory must take the budget"
    provider = gate(plugin, settings, metrics=metrics, sources=sources)
    routes = [
        Route(target_node=nodes[i % 2], destination_cidr=f"10.244.{i}.0/24") for i in range(10)
    ]
    try:
        async with asyncio.TaskGroup() as group:
            for route in routes:
                group.create_task(provider.create_route(route, name_hint="uid"))
    finally:
        await provider.aclose()
    assert proxy.count("CreateRoute") == 10
    assert len(proxy.times) > 10, "look-ups should show in the request log"
    # On the real clock a request reaches the proxy some time after its token (moto shares
    # the interpreter): windows are widened by 0.9 s, so two requests less than 0.1 s apart,
    # or any burst, still fail.
    assert over_budget(proxy.times, qps=1.0, burst=1, slack=0.9) == []
    # Concurrent creates share one table listing and one look-up per node.
    assert proxy.count("DescribeRouteTables") == 1
    assert proxy.count("DescribeInstances") == 2
    assert proxy.count("ModifyInstanceAttribute") == 2

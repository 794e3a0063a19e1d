"""Every request the hcloud provider sends passes routectl's bucket (issue 12, item 4).

routectl is built as ``routectl run`` builds it, with ``--cloud-qps 1 --cloud-burst 1``; ten
creates then poll actions and look servers up, and the fake API stamps every request it
receives with the loop time. Over any window of W seconds it must have received at most
``burst + qps * W`` requests.
"""

from __future__ import annotations

import asyncio

import pytest
from routectl_hcloud.testing import FakeHcloud

from routectl.cli.flags import parse_run_flags
from routectl.model import Route
from routectl.observe.metrics import Metrics
from routectl.process.wiring import Sources, gate, load_provider
from routectl.testing.contract_budget import over_budget


@pytest.mark.looptime
async def test_ten_creates_stay_within_the_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    """Polls, pages and look-ups included, no window of the request log exceeds the bucket."""
    async with FakeHcloud() as fake:
        network = fake.add_network("k8s")
        nodes = [fake.add_server(f"node-{i}", network=network).name for i in range(10)]
        monkeypatch.setenv("HCLOUD_TOKEN", fake.token)
        settings = parse_run_flags(
            [
                "--cluster-cidr=10.244.0.0/16",
                "--provider=hcloud",
                f"--provider-option=network={network.id}",
                f"--provider-option=endpoint={fake.url}",
                "--cloud-qps=1",
                "--cloud-burst=1",
            ]
        )
        metrics, sources = Metrics.create(), Sources.system()
        plugin = load_provider(settings, metrics=metrics, sources=sources)
        assert plugin.budget is not None, "the hcloud factory must take the budget"
        provider = gate(plugin, settings, metrics=metrics, sources=sources)
        routes = [
            Route(target_node=n, destination_cidr=f"10.244.{i}.0/24") for i, n in enumerate(nodes)
        ]
        async with asyncio.TaskGroup() as group:
            for route in routes:
                group.create_task(provider.create_route(route, name_hint="uid"))
        await provider.aclose()
    assert len(network.routes) == 10
    assert len(fake.times) > 10, "polls and look-ups should show in the request log"
    assert over_budget(fake.times, qps=1.0, burst=1) == []

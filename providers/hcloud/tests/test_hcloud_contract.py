"""The ``hcloud`` provider passes routectl's provider contract against the fake API over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from routectl_hcloud import HcloudProvider
from routectl_hcloud.testing import FakeHcloud

from routectl.provider import RouteProvider
from routectl.testing.contract import ProviderContract

pytestmark = pytest.mark.looptime


class TestHcloudContract(ProviderContract):
    """The contract, with two servers attached to the network (IPv4 only, as Hetzner)."""

    supports_ipv6 = False
    nodes = ("node-a", "node-b")
    _fake: FakeHcloud

    @pytest.fixture
    async def provider(self, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[HcloudProvider]:
        """A provider of a network whose servers are this suite's nodes."""
        async with FakeHcloud() as fake:
            network = fake.add_network("k8s")
            for node in self.nodes:
                fake.add_server(node, network=network)
            monkeypatch.setenv("HCLOUD_TOKEN", fake.token)
            self._fake = fake
            provider = HcloudProvider(
                cluster_name="contract",
                options={"network": str(network.id), "endpoint": fake.url},
            )
            yield provider
            await provider.aclose()

    async def inject_fault(self, provider: RouteProvider, kind: str) -> None:
        """The fake runs out of budget (429), is locked (423) or forbids (403) next."""
        del provider
        if kind == "throttled":
            self._fake.exhaust_budget()
        elif kind == "transient":
            self._fake.fail_next(423, "locked", "network is locked")
        else:
            self._fake.fail_next(403, "forbidden", "insufficient permissions")

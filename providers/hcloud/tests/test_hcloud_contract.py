"""The ``hcloud`` provider passes routectl's provider contract against the fake API over HTTP.

Hetzner networks cannot mark a route as a cluster's: the provider lists every route of the
network (``lists_unmarked_routes``), and an operator's route to an appliance that is no server
is listed without a target. Actions take a second before the network shows them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from routectl_hcloud import HcloudProvider
from routectl_hcloud.testing import FakeHcloud, FakeNetwork

from routectl.provider import RequestBudget
from routectl.testing.contract import ProviderContract

pytestmark = pytest.mark.looptime


class TestHcloudContract(ProviderContract):
    """The contract, with two servers attached to the network (IPv4 only, as Hetzner)."""

    supports_ipv6 = False
    nodes = ("node-a", "node-b")
    foreign_kinds: tuple[str, ...] = ("operator",)
    lists_unmarked_routes = True
    throttle_retry_after: float | None = (
        1.0  # 3600 requests an hour: one request's worth refills in 1 s
    )
    settle_seconds = 2.0
    _fake: FakeHcloud
    _network: FakeNetwork

    @pytest.fixture
    async def cloud(self, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeHcloud]:
        """A network whose servers are this suite's nodes."""
        async with FakeHcloud() as fake:
            self._network = fake.add_network("k8s")
            for node in self.nodes:
                fake.add_server(node, network=self._network)
            monkeypatch.setenv("HCLOUD_TOKEN", fake.token)
            self._fake = fake
            yield fake

    def make_provider(self, *, budget: RequestBudget) -> HcloudProvider:
        """A provider of the network; servers are looked up afresh for each listing."""
        options = {
            "network": str(self._network.id),
            "endpoint": self._fake.url,
            "server-cache-seconds": "0",
        }
        return HcloudProvider(cluster_name="contract", options=options, budget=budget)

    def requests_made(self) -> int:
        """Requests the fake API received."""
        return len(self._fake.requests)

    async def inject_fault(self, kind: str, *, after: int = 0) -> None:
        """The fake runs out of budget (429), is locked (423), forbids (403), each after
        ``after`` requests, or loses the answer of the next add or delete."""
        if kind == "throttled" and not after:
            self._fake.exhaust_budget()
        elif kind == "throttled":
            retry = {"Retry-After": "1"}
            self._fake.fail_next(429, "rate_limit_exceeded", headers=retry, after=after)
        elif kind == "transient":
            self._fake.fail_next(423, "locked", "network is locked", after=after)
        elif kind == "terminal":
            self._fake.fail_next(403, "forbidden", "insufficient permissions", after=after)
        else:
            self._fake.lose_next_answer("_route")

    async def inject_malformed_answer(self) -> str:
        """The network's routes come back with a string where a route object belongs."""
        network = self._network.json()
        network["routes"] = ["10.244.1.0/24 via 10.0.1.1", *network["routes"]]
        self._fake.answer_next(f"/networks/{self._network.id}", {"network": network})
        return "network.routes[0]"

    async def add_foreign_route(self, kind: str, destination: str) -> None:
        """An operator's route to an appliance's IP that no server has."""
        del kind
        self._network.routes.append({"destination": destination, "gateway": "10.0.1.250"})

    async def cloud_routes(self) -> list[tuple[str, str]]:
        """Every route of the network."""
        return [(r["destination"], r["gateway"]) for r in self._network.routes]

    async def remove_node(self, node: str) -> None:
        """Delete the node's server (its routes stay, as in the real cloud)."""
        (server,) = [s for s in self._fake.servers.values() if s.name == node]
        self._fake.delete_server(server)

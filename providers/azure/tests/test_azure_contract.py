"""The ``azure`` provider passes routectl's contract through azure-mgmt-network, against the
fake ARM over HTTPS, in both write modes: whole-table batches with etags, and per-route."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from typing import Any, ClassVar

import pytest
from routectl_azure import AzureProvider
from routectl_azure.testing import SUBSCRIPTION, FakeArm, FakeTable, StaticToken

from routectl.model import NodeAddress, Route
from routectl.provider import RequestBudget
from routectl.testing.contract import ProviderContract

GROUP = "mc_contract"
TABLE = "contract-routetable"
OTHER_TABLE = "other-cluster-routetable"  # another cluster's table, as the Azure CCM makes one each
APPLIANCE = "10.0.0.4"  # an operator's firewall appliance


def options(fake: FakeArm, **extra: str) -> dict[str, str]:
    """The azure.json keys of the contract's cluster, and the fake's endpoint and CA."""
    return {
        "subscriptionId": SUBSCRIPTION,
        "resourceGroup": GROUP,
        "routeTableName": TABLE,
        "location": "westeurope",
        "resourceManagerEndpoint": fake.url,
        "ca-bundle": fake.ca_path,
        "polling-interval": "0",
        "cache-seconds": "0",
        **extra,
    }


class TestAzureContract(ProviderContract):
    """Two VMs for the Nodes; an operator's route in the table; another cluster's table."""

    batch: ClassVar[bool] = True
    throttle_retry_after: float | None = 7.0
    foreign_kinds_elsewhere: tuple[str, ...] = ("other-cluster",)
    _fake: FakeArm
    _table: FakeTable

    @pytest.fixture
    async def cloud(self) -> AsyncIterator[FakeArm]:
        """The fake ARM with the cluster's table (empty), another cluster's, and a VM each."""
        async with FakeArm() as fake:
            self._table = fake.add_table(GROUP, TABLE)
            fake.add_table(GROUP, OTHER_TABLE)
            for index, node in enumerate(self.nodes, start=10):
                fake.add_vm(GROUP, node, f"10.0.0.{index}", f"fd00::{index}")
            self._fake = fake
            yield fake

    def make_provider(self, *, budget: RequestBudget) -> AzureProvider:
        """A provider of the cluster's table, with a static token."""
        extra = {} if self.batch else {"batch-writes": "false"}
        return AzureProvider(
            cluster_name="contract",
            options=options(self._fake, **extra),
            budget=budget,
            credential=StaticToken(),
        )

    def route(self, node: str, cidr: str) -> Route:
        """The Node's addresses as the Azure CCM sets them: its NIC's private IPs."""
        index = 10 + self.nodes.index(node) if node in self.nodes else 99
        return Route(
            target_node=node,
            destination_cidr=cidr,
            target_node_addresses=(
                NodeAddress(type="InternalIP", address=f"10.0.0.{index}"),
                NodeAddress(type="InternalIP", address=f"fd00::{index}"),
            ),
        )

    def requests_made(self) -> int:
        """Requests the fake ARM received."""
        return len(self._fake.requests)

    async def inject_fault(self, kind: str, *, after: int = 0) -> None:
        """ARM throttles (7 s), fails or forbids the next request, or a write's answer is lost."""
        if kind == "throttled":
            self._fake.fail_next("*", 429, "TooManyRequests", after=after, **{"Retry-After": "7"})
        elif kind == "transient":
            self._fake.fail_next("*", 500, "InternalServerError", after=after)
        elif kind == "terminal":
            self._fake.fail_next("*", 403, "AuthorizationFailed", after=after)
        else:
            self._fake.lose_next_answer("PUT")

    async def inject_malformed_answer(self) -> str:
        """The table comes back with a string where its first route object belongs."""

        def garble(table: dict[str, Any]) -> dict[str, Any]:
            table["properties"]["routes"][0] = "10.244.1.0/24 via 10.0.0.10"
            return table

        self._fake.garble_next(f"/routeTables/{TABLE}", garble)
        return "properties.routes[0]"

    async def add_foreign_route(self, kind: str, destination: str) -> None:
        """Another cluster's route in its own table, or an operator's in ours."""
        if kind == "other-cluster":
            other = self._fake.tables[(GROUP, OTHER_TABLE)]
            other.add(
                f"their-node____{destination.replace('.', '').replace('/', '')}",
                destination,
                hop="10.1.0.5",
            )
        else:
            self._table.add("to-firewall", destination, hop=APPLIANCE)

    async def cloud_routes(self) -> Collection[tuple[str, str]]:
        """Every route of both tables."""
        return [
            (
                r["properties"]["addressPrefix"],
                f"{t.name}/{r['name']} {r['properties'].get('nextHopIpAddress', '')}",
            )
            for t in self._fake.tables.values()
            for r in t.routes
        ]

    async def remove_node(self, node: str) -> None:
        """The Node's VM is deleted, with its interface."""
        index = 10 + self.nodes.index(node)
        self._fake.remove_machine(f"10.0.0.{index}")


class TestAzureContractPerRoute(TestAzureContract):
    """The same with ``batch-writes=false``: single-route PUT and DELETE calls."""

    batch: ClassVar[bool] = False

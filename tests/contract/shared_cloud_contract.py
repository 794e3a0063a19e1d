"""The provider contract over :class:`SharedCloud`, for any provider class built on it.

Two Nodes with machines, another cluster's and an operator's routes in the one shared
table, throttling that asks for 7 s, lost answers that drop the connection.
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from routectl.provider import RequestBudget
from routectl.testing.contract import ProviderContract
from tests.contract.shared_cloud import Entry, SharedCloud
from tests.contract.wrong_providers import GoodProvider


class SharedCloudContract(ProviderContract):
    """Subclass it and set ``provider_class`` (and ``ipv4_only``) to run the contract."""

    provider_class: ClassVar[type[GoodProvider]] = GoodProvider
    ipv4_only: ClassVar[bool] = False
    throttle_retry_after: float | None = 7.0
    fake: SharedCloud

    @property
    def supports_ipv6(self) -> bool:  # type: ignore[override]
        """The cloud routes IPv6 unless ``ipv4_only``."""
        return not self.ipv4_only

    @pytest.fixture
    async def cloud(self) -> SharedCloud:
        """The shared cloud with a machine per Node."""
        self.fake = SharedCloud(ipv4_only=self.ipv4_only)
        for node in self.nodes:
            self.fake.add_machine(node)
        return self.fake

    def make_provider(self, *, budget: RequestBudget) -> GoodProvider:
        """A provider of cluster ``contract``."""
        return self.provider_class(cluster_name="contract", cloud=self.fake, budget=budget)

    def requests_made(self) -> int:
        """Every method call of the cloud is a request."""
        return len(self.fake.requests)

    async def inject_fault(self, kind: str, *, after: int = 0) -> None:
        """The next request (the next write, for a lost answer) after ``after`` fails."""
        self.fake.faults.append(kind)
        self.fake.delay = after

    async def inject_malformed_answer(self) -> str:
        """The next page carries an entry whose destination is a number."""
        self.fake.garbled.append(
            Entry(destination=167772160, machine="m-x", owner="contract", name="x")  # type: ignore[arg-type]
        )
        return "destination"

    async def add_foreign_route(self, kind: str, destination: str) -> None:
        """Another cluster's route to its own machine, or an operator's to an appliance."""
        if kind == "other-cluster":
            self.fake.put(destination, self.fake.add_machine("their-node"), owner="other")
        else:
            self.fake.put(destination, "appliance-1", owner="")

    async def cloud_routes(self) -> list[tuple[str, str]]:
        """Every entry of the table."""
        return [(e.destination, f"{e.owner}:{e.machine}") for e in self.fake.entries]

    async def remove_node(self, node: str) -> None:
        """The Node's machine is deleted."""
        self.fake.machines = {m: n for m, n in self.fake.machines.items() if n != node}

"""The ``openstack`` provider passes routectl's contract through openstacksdk, with and
without Neutron's extraroute-atomic extension, against the fake Keystone, Neutron and Nova."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest
from routectl_openstack import OpenStackProvider
from routectl_openstack.testing import PASSWORD, FakeOpenStack, FakeRouter

from routectl.provider import RequestBudget
from routectl.testing.contract import ProviderContract

NODE_SUBNETS = ("10.0.0.0/24", "fd00:0:0:1::/64")
OTHER_CLUSTER_HOP = "10.1.0.5"  # another cluster's Node, on its own subnet of the router
APPLIANCE_HOP = "172.16.0.1"  # an operator's VPN appliance on a transit subnet


class TestOpenStackContract(ProviderContract):
    """Two servers on the Nodes' subnets; other clusters and operators share the router."""

    atomic: ClassVar[bool] = True
    nodes = ("node-a", "node-b")
    throttle_retry_after: float | None = 7.0
    _fake: FakeOpenStack
    _router: FakeRouter

    @pytest.fixture
    async def cloud(self, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeOpenStack]:
        """The fake APIs, a router on four subnets, a server per Node."""
        async with FakeOpenStack(atomic=self.atomic) as fake:
            self._router = fake.add_router(*NODE_SUBNETS, "10.1.0.0/24", "172.16.0.0/24")
            for index, node in enumerate(self.nodes, start=11):
                fake.add_server(node, f"10.0.0.{index}", f"fd00:0:0:1::{index}")
            for name, value in {
                "OS_USERNAME": "routectl",
                "OS_PASSWORD": PASSWORD,
                "OS_PROJECT_NAME": "k8s",
            }.items():
                monkeypatch.setenv(name, value)
            self._fake = fake
            yield fake

    def make_provider(self, *, budget: RequestBudget) -> OpenStackProvider:
        """A provider of the router; servers are listed afresh for each listing."""
        options = {
            "router-id": self._router.id,
            "node-cidrs": ",".join(NODE_SUBNETS),
            "auth-url": self._fake.auth_url,
            "cache-seconds": "0",
        }
        return OpenStackProvider(cluster_name="contract", options=options, budget=budget)

    def requests_made(self) -> int:
        """Requests the fake APIs received, Keystone's and Nova's included."""
        return len(self._fake.requests)

    async def inject_fault(self, kind: str, *, after: int = 0) -> None:
        """The next request (after ``after``), of any service, is throttled (7 s), fails
        or is forbidden; or a write's answer is lost."""
        where = "/servers/detail" if not after else ""
        self._fake.let_through(after)
        if kind == "throttled":
            self._fake.fail_next(where, 429, "TooManyRequests", **{"Retry-After": "7"})
        elif kind == "transient":
            self._fake.fail_next(where, 503, "ServiceUnavailable")
        elif kind == "terminal":
            self._fake.fail_next(where, 403, "Forbidden")
        else:
            write = "extraroutes" if self.atomic else f"/routers/{self._router.id}"
            self._fake.lose_next_answer(write)

    async def inject_malformed_answer(self) -> str:
        """The router comes back with a string where its first route object belongs."""

        def garble(body: dict[str, Any]) -> dict[str, Any]:
            body["router"]["routes"][0] = "10.244.1.0/24 via 10.0.0.11"
            return body

        self._fake.garble_next(self._router.id, garble)
        return "router.routes[0]"

    async def add_foreign_route(self, kind: str, destination: str) -> None:
        """Another cluster's route to its Node, or an operator's to an appliance."""
        hop = OTHER_CLUSTER_HOP if kind == "other-cluster" else APPLIANCE_HOP
        self._router.routes.append({"destination": destination, "nexthop": hop})

    async def cloud_routes(self) -> list[tuple[str, str]]:
        """Every route of the router."""
        return [(r["destination"], r["nexthop"]) for r in self._router.routes]

    async def remove_node(self, node: str) -> None:
        """The Node's server is deleted; its routes stay on the router."""
        self._fake.delete_server(node)


class TestOpenStackContractWithoutExtension(TestOpenStackContract):
    """The same, where Neutron lacks extraroute-atomic: whole-table writes under a lock."""

    atomic: ClassVar[bool] = False

"""The ``gce`` provider passes routectl's contract through google-cloud-compute, over HTTP,
against the fake Compute API (routes, operations, instances), with pages of two routes."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.auth.credentials import AnonymousCredentials
from routectl_gce import GceProvider
from routectl_gce.testing import FakeCompute

from routectl.provider import RequestBudget, load_factory
from routectl.testing.contract import ProviderContract


def gce_options(fake: FakeCompute) -> dict[str, str]:
    """The gce.conf keys a cluster in the fake's project and network would have."""
    return {
        "project-id": fake.project,
        "network-name": "default",
        "api-endpoint": f"{fake.url}/compute/v1/",
    }


class TestGceContract(ProviderContract):
    """Two instances for the suite's Nodes; other clusters and people share the network."""

    nodes = ("node-a", "node-b")
    throttle_retry_after: float | None = None  # Compute's 403 rateLimitExceeded has no hint
    _fake: FakeCompute

    @pytest.fixture
    async def cloud(self) -> AsyncIterator[FakeCompute]:
        """The fake API with an instance per Node, two routes a page."""
        async with FakeCompute() as fake:
            fake.page_size = 2
            for node in self.nodes:
                fake.add_instance(node)
            self._fake = fake
            yield fake

    def make_provider(self, *, budget: RequestBudget) -> GceProvider:
        """A provider of cluster ``contract``, anonymous against the fake."""
        return GceProvider(
            cluster_name="contract",
            options=gce_options(self._fake),
            budget=budget,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        )

    def requests_made(self) -> int:
        """Requests the fake Compute API received."""
        return len(self._fake.requests)

    async def inject_fault(self, kind: str, *, after: int = 0) -> None:
        """Compute's rate limit (403 rateLimitExceeded), a 503, a 403, or a lost insert."""
        if kind == "throttled":
            self._fake.fail_next(
                403, "rateLimitExceeded", message="Rate Limit Exceeded", after=after
            )
        elif kind == "transient":
            self._fake.fail_next(503, "backendError", message="Backend Error", after=after)
        elif kind == "terminal":
            self._fake.fail_next(
                403,
                "forbidden",
                message="Required 'compute.routes.list' permission",
                after=after,
            )
        else:
            self._fake.lose_next_answer("POST")

    async def inject_malformed_answer(self) -> str:
        """The listing comes back with ``"two"`` where the first route's priority (a number)
        belongs."""

        def garble(page: dict[str, Any]) -> dict[str, Any]:
            page["items"][0]["priority"] = "two"
            return page

        self._fake.garble_next("/global/routes", garble)
        return "items.priority"

    async def add_foreign_route(self, kind: str, destination: str) -> None:
        """Cluster ``contract-b``'s route (its name starts like ours), or a person's VPN route."""
        if kind == "other-cluster":
            link = self._fake.add_instance("their-node")
            self._fake.add_route(
                f"contract-b-{uuid.uuid4()}",
                destination,
                next_hop_instance=link,
                description="k8s-node-route",
            )
        else:
            self._fake.add_route("vpn-to-office", destination, next_hop_ip="10.128.0.99")

    async def cloud_routes(self) -> list[tuple[str, str]]:
        """Every route of the fake's project."""
        return [
            (r["destRange"], f"{r['name']} {r.get('nextHopInstance') or r.get('nextHopIp')}")
            for r in self._fake.routes.values()
        ]

    async def remove_node(self, node: str) -> None:
        """The Node's instance is deleted; its routes stay, with the API's warning."""
        self._fake.delete_instance(node)


def test_entry_point_resolves() -> None:
    """routectl finds the plugin by the name users pass to --provider / --cloud-provider."""
    factory: object = load_factory("gce")
    assert factory is GceProvider

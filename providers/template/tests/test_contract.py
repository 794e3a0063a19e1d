"""The example provider passes routectl's provider contract against the fake Example Cloud,
and maps a 503 that says when to come back (Retry-After) to throttling with that hint."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection

import pytest
from routectl_example import ExampleProvider
from routectl_example.fakecloud import FakeCloud

from routectl.errors import ProviderError, ProviderThrottledError
from routectl.provider import RequestBudget, load_factory
from routectl.testing.contract import ProviderContract
from routectl.testing.contract_budget import CountingBudget


class TestExampleContract(ProviderContract):
    """Two servers for the suite's Nodes; others' routes share the one list of routes."""

    throttle_retry_after: float | None = 7.0
    fake: FakeCloud

    @pytest.fixture
    async def cloud(self) -> AsyncIterator[FakeCloud]:
        """The fake API, with a server per Node."""
        async with FakeCloud() as fake:
            for node in self.nodes:
                fake.add_server(node)
            self.fake = fake
            yield fake

    def make_provider(self, *, budget: RequestBudget) -> ExampleProvider:
        """A provider of cluster ``contract``, built as routectl builds it."""
        options = {"endpoint": self.fake.url}
        return ExampleProvider(cluster_name="contract", options=options, budget=budget)

    def requests_made(self) -> int:
        """Requests the fake API received."""
        return len(self.fake.requests)

    async def inject_fault(self, kind: str, *, after: int = 0) -> None:
        """The next request (after ``after``) is throttled (7 s), fails (503), is refused
        (403), or the next write is lost."""
        self.fake.let_through(after)
        if kind == "throttled":
            self.fake.fail_next(429, **{"Retry-After": "7"})
        elif kind == "transient":
            self.fake.fail_next(503)
        elif kind == "terminal":
            self.fake.fail_next(403)
        else:
            self.fake.lose_next_answer()

    async def inject_malformed_answer(self) -> str:
        """The next GET is a page of routes with a number where a destination belongs."""
        labels = {"cluster": "contract"}
        route = {"id": "r-x", "destination": 167772160, "server": "srv-1", "labels": labels}
        self.fake.answer_next("/routes", {"routes": [route], "next_page": None})
        return "routes[0].destination"

    async def add_foreign_route(self, kind: str, destination: str) -> None:
        """Another cluster's route to its server, or an operator's unlabelled one."""
        if kind == "other-cluster":
            self.fake.add_route(destination, self.fake.add_server("their-node"), {"cluster": "b"})
        else:
            self.fake.add_route(destination, "appliance-1", {})

    async def cloud_routes(self) -> Collection[tuple[str, str]]:
        """Every route the fake holds."""
        return [(r["destination"], f"{r['server']} {r['labels']}") for r in self.fake.routes]

    async def remove_node(self, node: str) -> None:
        """The node's server is deleted."""
        self.fake.servers = {i: n for i, n in self.fake.servers.items() if n != node}


def test_entry_point_resolves() -> None:
    """routectl finds the plugin by the name users pass to --provider."""
    factory: object = load_factory("example")
    assert factory is ExampleProvider


@pytest.mark.parametrize(
    ("headers", "hint"),
    [
        ({"Retry-After": "30"}, 30.0),
        (
            {
                "Retry-After": "Wed, 21 Oct 2037 07:28:00 GMT",
                "Date": "Wed, 21 Oct 2037 07:27:00 GMT",
            },
            60.0,
        ),
        ({}, None),
    ],
    ids=["seconds", "http-date", "no-hint"],
)
async def test_a_503_that_says_when_to_come_back_is_honoured(
    headers: dict[str, str], hint: float | None
) -> None:
    """A 503 with Retry-After is throttling with that hint; without one, a plain retry."""
    async with FakeCloud() as fake:
        provider = ExampleProvider(
            cluster_name="c", options={"endpoint": fake.url}, budget=CountingBudget(lambda: 0)
        )
        fake.fail_next(503, **headers)
        with pytest.raises(ProviderError) as caught:
            await provider.list_routes()
        await provider.aclose()
    if hint is None:
        assert type(caught.value) is ProviderError
    else:
        assert isinstance(caught.value, ProviderThrottledError)
        assert caught.value.retry_after == hint

"""The looptime hook (routectl.testing.looptime_hook), the fixtures of the plugin's tests (the
fake Compute API with two instances, providers over it), and the rules of the contract this
plugin does not keep yet: marked as strict expected failures, not hidden (the day one
passes, its mark must go). It keeps every rule now.
"""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from gce_scene import credentials, options
from routectl_gce import GceProvider
from routectl_gce.testing import FakeCompute

from routectl.testing.contract_budget import CountingBudget
from routectl.testing.looptime_hook import pytest_pyfunc_call

__all__ = ["fake", "make", "pytest_collection_modifyitems", "pytest_pyfunc_call"]

KNOWN: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the rules above on this plugin's contract classes (the hook sees every item)."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents and "Contract" in item.nodeid and item.name in KNOWN:
            item.add_marker(pytest.mark.xfail(strict=True, reason=KNOWN[item.name]))


@pytest.fixture
async def fake() -> AsyncIterator[FakeCompute]:
    """The fake Compute API with instances node-a (us-central1-b) and node-b (us-central1-c)."""
    async with FakeCompute() as fake:
        fake.add_instance("node-a")
        fake.add_instance("node-b", zone="us-central1-c")
        yield fake


@pytest.fixture
async def make(fake: FakeCompute) -> AsyncIterator[Any]:
    """``make(cluster="kubernetes", **options)``: a provider over the fake, closed after."""
    made: list[GceProvider] = []

    def build(cluster: str = "kubernetes", **extra: str) -> GceProvider:
        budget = CountingBudget(lambda: len(fake.requests))
        provider = GceProvider(
            cluster_name=cluster,
            options=options(fake, **extra),
            budget=budget,
            credentials=credentials(),
        )
        made.append(provider)
        return provider

    yield build
    for provider in made:
        await provider.aclose()

"""Look-ups asked for at once share one request (routectl_gce.batch.Coalescer), and a
scale-up pays for a handful of look-ups, not one per Node."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from google.auth.credentials import AnonymousCredentials
from routectl_gce import GceProvider
from routectl_gce.batch import Batch, Coalescer
from routectl_gce.testing import FakeCompute

from routectl.errors import ProviderError
from routectl.model import Route
from routectl.testing.contract_budget import CountingBudget


class Fetches:
    """A fetch that sends once ``send`` is set (the budget let it go) and answers each key
    with its upper case once ``gate`` is set."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []
        self.send = asyncio.Event()
        self.gate = asyncio.Event()
        self.fail: Exception | None = None

    async def __call__(self, batch: Batch[str, str]) -> dict[str, str]:
        await self.send.wait()  # others join meanwhile
        keys = batch.close()
        self.asked.append(keys)
        await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        return {k: k.upper() for k in keys}


async def settle() -> None:
    """Let every task that can run, run."""
    for _ in range(10):
        await asyncio.sleep(0)


async def test_callers_at_once_share_one_fetch() -> None:
    fetch = Fetches()
    coalescer = Coalescer(fetch, limit=3)
    calls = [asyncio.create_task(coalescer.get(k)) for k in ("a", "b", "a", "c", "d")]
    await settle()
    fetch.send.set()
    fetch.gate.set()
    assert await asyncio.gather(*calls) == ["A", "B", "A", "C", "D"]
    assert fetch.asked == [["a", "b", "c"], ["d"]]  # at most three keys a request


async def test_a_key_already_asked_for_waits_for_that_answer() -> None:
    fetch = Fetches()
    coalescer = Coalescer(fetch, limit=10)
    first = asyncio.create_task(coalescer.get("a"))
    fetch.send.set()
    await settle()  # sent: the batch is closed
    again = asyncio.create_task(coalescer.get("a"))
    await settle()
    fetch.gate.set()
    assert [await first, await again] == ["A", "A"]
    assert fetch.asked == [["a"]]


async def test_an_error_reaches_every_caller() -> None:
    fetch = Fetches()
    fetch.fail = ProviderError("503")
    coalescer = Coalescer(fetch, limit=10)
    calls = [asyncio.create_task(coalescer.get(k)) for k in ("a", "b")]
    await settle()
    fetch.send.set()
    fetch.gate.set()
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    assert [str(o) for o in outcomes] == ["503", "503"]


async def test_a_cancelled_caller_stops_neither_the_request_nor_the_others() -> None:
    """The first caller's call times out: the shared request still answers the others,
    and the caller asking again joins it instead of sending another."""
    fetch = Fetches()
    coalescer = Coalescer(fetch, limit=10)
    first = asyncio.create_task(coalescer.get("a"))
    other = asyncio.create_task(coalescer.get("b"))
    await settle()
    fetch.send.set()
    await settle()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    again = asyncio.create_task(coalescer.get("a"))
    await settle()
    fetch.gate.set()
    assert [await other, await again] == ["B", "A"]
    assert fetch.asked == [["a", "b"]]


async def test_the_last_caller_to_give_up_stops_the_request() -> None:
    """The only caller is cancelled while its request waits for the budget (parked there
    for good): that request is stopped, and the next caller sends its own instead of
    joining the stale one."""
    stopped: list[list[str]] = []
    fetch = Fetches()

    async def parked_first(batch: Batch[str, str]) -> dict[str, str]:
        if not stopped:
            try:
                await asyncio.Event().wait()  # the budget never lets it go
            except asyncio.CancelledError:
                stopped.append(list(batch.keys))
                raise
        return await fetch(batch)

    coalescer = Coalescer(parked_first, limit=10)
    first = asyncio.create_task(coalescer.get("a"))
    await settle()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await settle()
    assert stopped == [["a"]]
    fetch.send.set()
    fetch.gate.set()
    assert await asyncio.wait_for(coalescer.get("a"), 5) == "A"
    assert fetch.asked == [["a"]]


async def test_aclose_stops_what_is_under_way() -> None:
    fetch = Fetches()
    coalescer = Coalescer(fetch, limit=10)
    waiting = asyncio.create_task(coalescer.get("a"))
    await settle()
    await coalescer.aclose()
    with pytest.raises(ProviderError, match="stopped"):
        await waiting


@pytest.fixture
async def fake() -> AsyncIterator[FakeCompute]:
    async with FakeCompute() as fake:
        for index in range(40):
            fake.add_instance(f"node-{index}", zone=("us-central1-a", "us-central1-b")[index % 2])
        yield fake


async def test_a_scale_up_looks_up_in_batches(fake: FakeCompute) -> None:
    """40 new Nodes routed at once: a few look-ups of instances and destinations, one insert
    and one wait each."""
    budget = CountingBudget(lambda: len(fake.requests))
    provider = GceProvider(
        cluster_name="kubernetes",
        options={"project-id": fake.project, "network-name": "default", "api-endpoint": fake.url},
        budget=budget,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
    )
    routes = [
        provider.create_route(
            Route(target_node=f"node-{i}", destination_cidr=f"10.244.{i}.0/24"),
            name_hint=f"uid-{i}",
        )
        for i in range(40)
    ]
    await asyncio.gather(*routes)
    await provider.aclose()
    assert len(fake.routes) == 40
    assert fake.route_requests("POST", "/global/routes") == 40
    assert fake.route_requests("POST", "/wait") == 40
    assert 1 <= fake.route_requests("GET", "/aggregated/instances") <= 10  # not 40
    assert 1 <= fake.route_requests("GET", "/global/routes") <= 10  # not 40
    assert budget.spent == len(fake.requests)
    assert not budget.early

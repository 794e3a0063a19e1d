"""What the ``hcloud`` provider does to a Hetzner Cloud network, seen through the fake API."""

from __future__ import annotations

import asyncio
import email.utils
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from routectl_hcloud import HcloudProvider
from routectl_hcloud.testing import FakeHcloud, FakeNetwork

from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import load_factory

pytestmark = pytest.mark.looptime

CIDR_A = "10.244.1.0/24"
CIDR_B = "10.244.2.0/24"

MakeProvider = Callable[..., HcloudProvider]


@pytest.fixture
async def fake() -> AsyncIterator[FakeHcloud]:
    """A fresh fake Hetzner Cloud API on 127.0.0.1."""
    async with FakeHcloud() as started:
        yield started


@pytest.fixture
def network(fake: FakeHcloud) -> FakeNetwork:
    """The cluster's network (10.0.0.0/16, subnet 10.0.1.0/24)."""
    return fake.add_network("k8s")


@pytest.fixture
async def make_provider(
    fake: FakeHcloud, network: FakeNetwork, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[MakeProvider]:
    """Build providers of ``network`` with the fake's token; all are closed after the test."""
    monkeypatch.setenv("HCLOUD_TOKEN", fake.token)
    made: list[HcloudProvider] = []

    def make(**options: str) -> HcloudProvider:
        provider = HcloudProvider(
            cluster_name="prod",
            options={"network": str(network.id), "endpoint": fake.url, **options},
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()


def route(node: str, cidr: str = CIDR_A) -> Route:
    """The route routectl would ask for."""
    return Route(target_node=node, destination_cidr=cidr)


async def test_gateways_map_to_server_names(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """A route's node is the server owning its gateway; unknown gateways are blackholes."""
    node = fake.add_server("node-a", network=network)
    gone = fake.add_server("node-gone", network=network)
    network.routes += [
        {"destination": CIDR_A, "gateway": node.private_net[network.id]},
        {"destination": CIDR_B, "gateway": gone.private_net[network.id]},
        {"destination": "192.168.0.0/24", "gateway": "10.0.1.250"},
    ]
    fake.delete_server(gone)
    listed = {r.destination_cidr: r for r in await make_provider().list_routes()}
    assert (listed[CIDR_A].target_node, listed[CIDR_A].blackhole) == ("node-a", False)
    assert listed[CIDR_A].name == f"{node.private_net[network.id]}-{CIDR_A}"
    for foreign in (CIDR_B, "192.168.0.0/24"):
        assert (listed[foreign].target_node, listed[foreign].blackhole) == ("", True)


async def test_create_routes_via_the_nodes_private_ip(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """The gateway is the node's server's private IP in this network, not another one's."""
    other = fake.add_network("other", ip_range="10.1.0.0/16", subnet="10.1.1.0/24")
    server = fake.add_server("node-a", network=other)
    ip = fake.attach(server, network)
    await make_provider().create_route(route("node-a"), name_hint="uid")
    assert network.routes == [{"destination": CIDR_A, "gateway": ip}]
    assert other.routes == []


async def test_actions_are_polled_until_done(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """Create returns once the action succeeded and the route shows, polling on the loop clock."""
    fake.action_seconds = 5.0
    fake.add_server("node-a", network=network)
    provider = make_provider(**{"action-poll-seconds": "1"})
    loop = asyncio.get_running_loop()
    started = loop.time()
    await provider.create_route(route("node-a"), name_hint="uid")
    assert loop.time() - started == pytest.approx(5.0, abs=0.01)
    assert [r["destination"] for r in network.routes] == [CIDR_A]
    polls = [p for m, p in fake.requests if m == "GET" and p.startswith("/actions/")]
    assert len(polls) == 5


async def test_failed_action_is_a_transient_error(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """An action that ends in error fails the call transiently, and nothing changed."""
    fake.add_server("node-a", network=network)
    fake.fail_next_action("action_failed", "could not add route")
    with pytest.raises(ProviderError, match="could not add route") as caught:
        await make_provider().create_route(route("node-a"), name_hint="uid")
    assert not isinstance(caught.value, ProviderTerminalError)
    assert network.routes == []


async def test_concurrent_creates_do_not_lock_each_other_out(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """The provider's own changes go one at a time, so the network never answers ``locked``."""
    for name in ("node-a", "node-b", "node-c"):
        fake.add_server(name, network=network)
    provider = make_provider()
    await asyncio.gather(
        *(
            provider.create_route(route(name, f"10.244.{i}.0/24"), name_hint=name)
            for i, name in enumerate(("node-a", "node-b", "node-c"))
        )
    )
    assert {r.target_node for r in await provider.list_routes()} == {"node-a", "node-b", "node-c"}


async def test_servers_are_fetched_at_most_every_cache_period(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """Listing again, unknown gateways and unknown nodes never fetch servers within 30 s."""
    fake.add_server("node-a", network=network)
    network.routes += [
        {"destination": f"10.244.{i}.0/24", "gateway": f"10.0.1.{100 + i}"} for i in range(5)
    ]
    provider = make_provider()
    for _ in range(3):
        assert len(await provider.list_routes()) == 5
    assert fake.count("GET", "/servers") == 1
    fake.add_server("node-new", network=network)
    with pytest.raises(ProviderError, match="no server named 'node-new'"):
        await provider.create_route(route("node-new", "10.244.9.0/24"), name_hint="u")
    assert fake.count("GET", "/servers") == 1
    await asyncio.sleep(30)
    await provider.create_route(route("node-new", "10.244.9.0/24"), name_hint="u")
    assert fake.count("GET", "/servers") == 2


async def test_servers_are_read_across_pages(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """A server on the second page of ``GET /servers`` is found."""
    for index in range(60):
        fake.add_server(f"node-{index}", network=network)
    provider = make_provider()
    await provider.create_route(route("node-59"), name_hint="u")
    assert fake.count("GET", "/servers") == 2
    assert {r.target_node for r in await provider.list_routes()} == {"node-59"}


async def test_rate_limit_answers_throttled_with_time_to_next_request(
    network: FakeNetwork, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 429 becomes ProviderThrottledError pausing until one request's worth has refilled."""
    async with FakeHcloud(rate_limit=10, rate_window=100.0) as fake:
        monkeypatch.setenv("HCLOUD_TOKEN", fake.token)
        mine = fake.add_network("k8s")
        provider = HcloudProvider(
            cluster_name="prod", options={"network": str(mine.id), "endpoint": fake.url}
        )
        try:
            fake.exhaust_budget()
            with pytest.raises(ProviderThrottledError) as caught:
                await provider.list_routes()
            assert caught.value.retry_after == pytest.approx(10.0, abs=1.0)
            assert caught.value.retry_after is not None
            await asyncio.sleep(2 * caught.value.retry_after)  # a listing costs two requests
            assert await provider.list_routes() == []
        finally:
            await provider.aclose()
    del network


async def test_locked_network_is_a_transient_error(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """``locked`` and ``conflict`` are retried by routectl: transient, not terminal."""
    fake.add_server("node-a", network=network)
    provider = make_provider()
    for status, code in ((423, "locked"), (409, "conflict")):
        fake.fail_next(status, code, "busy", method="POST")
        with pytest.raises(ProviderError, match=code) as caught:
            await provider.create_route(route("node-a"), name_hint="u")
        assert not isinstance(caught.value, ProviderTerminalError | ProviderThrottledError)
    await provider.create_route(route("node-a"), name_hint="u")


async def test_route_limit_is_terminal_with_a_clear_message(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """A full network (100 routes) is a terminal error that says what to do."""
    fake.route_limit = 1
    fake.add_server("node-a", network=network)
    fake.add_server("node-b", network=network)
    provider = make_provider()
    await provider.create_route(route("node-a"), name_hint="a")
    with pytest.raises(ProviderTerminalError, match="at most 100 routes"):
        await provider.create_route(route("node-b", CIDR_B), name_hint="b")


async def test_ipv6_is_refused_without_a_request(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """Hetzner networks do not route IPv6: a terminal error, and the API is not asked."""
    fake.add_server("node-a", network=network)
    with pytest.raises(ProviderTerminalError, match="do not route IPv6"):
        await make_provider().create_route(route("node-a", "fd00:10:244:1::/64"), name_hint="u")
    assert fake.requests == []


async def test_existing_destination_same_or_other_gateway(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """The same route again is fine; the CIDR routed to another node raises already-exists."""
    fake.add_server("node-a", network=network)
    fake.add_server("node-b", network=network)
    provider = make_provider()
    await provider.create_route(route("node-a"), name_hint="a")
    await provider.create_route(route("node-a"), name_hint="a")
    with pytest.raises(RouteAlreadyExistsError, match="already exists via"):
        await provider.create_route(route("node-b"), name_hint="b")
    assert len(network.routes) == 1


async def test_overlapping_destination_is_terminal(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """A pod CIDR overlapping the network's subnet cannot be routed: a terminal error."""
    fake.add_server("node-a", network=network)
    with pytest.raises(ProviderTerminalError, match="overlaps"):
        await make_provider().create_route(route("node-a", "10.0.1.0/25"), name_hint="u")


async def test_delete_spares_a_route_now_leading_elsewhere(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """Deleting node-a's route when the CIDR now leads to node-b leaves it, not found."""
    fake.add_server("node-a", network=network)
    node_b = fake.add_server("node-b", network=network)
    network.routes.append({"destination": CIDR_A, "gateway": node_b.private_net[network.id]})
    provider = make_provider()
    await provider.list_routes()
    with pytest.raises(RouteNotFoundError):
        await provider.delete_route(route("node-a"))
    assert len(network.routes) == 1


async def test_delete_of_a_route_removed_meanwhile_is_not_found(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """A route deleted by someone else after the listing is reported as not found."""
    fake.add_server("node-a", network=network)
    provider = make_provider()
    await provider.create_route(route("node-a"), name_hint="u")
    (listed,) = await provider.list_routes()
    network.routes.clear()
    with pytest.raises(RouteNotFoundError):
        await provider.delete_route(listed)


async def test_server_outside_the_network_is_transient(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """A node whose server is not attached yet fails transiently, naming the problem."""
    del network
    fake.add_server("node-a")
    with pytest.raises(ProviderError, match="not attached") as caught:
        await make_provider().create_route(route("node-a"), name_hint="u")
    assert not isinstance(caught.value, ProviderTerminalError)


async def test_network_by_name_is_looked_up_once(
    fake: FakeHcloud, network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """The option network may be a name; it is resolved to the id with one request."""
    fake.add_server("node-a", network=network)
    provider = make_provider(network="k8s")
    await provider.create_route(route("node-a"), name_hint="u")
    await provider.list_routes()
    assert fake.count("GET", "/networks") == 1
    assert fake.count("GET", f"/networks/{network.id}") == 1


async def test_unknown_network_is_terminal(make_provider: MakeProvider) -> None:
    """A network that does not exist (by name or id) is a terminal error."""
    with pytest.raises(ProviderTerminalError, match="no networks named 'nope'"):
        await make_provider(network="nope").list_routes()
    with pytest.raises(ProviderTerminalError, match="does not exist"):
        await make_provider(network="999999").list_routes()


async def test_wrong_token_is_terminal_and_not_echoed(
    fake: FakeHcloud, network: FakeNetwork, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rejected token is a terminal error whose message does not contain the token."""
    monkeypatch.setenv("HCLOUD_TOKEN", "wrong-secret-token")
    provider = HcloudProvider(
        cluster_name="prod", options={"network": str(network.id), "endpoint": fake.url}
    )
    try:
        with pytest.raises(ProviderTerminalError, match="unauthorized") as caught:
            await provider.list_routes()
        assert "wrong-secret-token" not in str(caught.value)
    finally:
        await provider.aclose()


async def test_token_file_is_read_again_when_it_changes(
    fake: FakeHcloud, network: FakeNetwork, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rotated token in the mounted file is used from the next request on."""
    monkeypatch.delenv("HCLOUD_TOKEN", raising=False)
    token_file = tmp_path / "token"
    token_file.write_text(fake.token + "\n")
    provider = HcloudProvider(
        cluster_name="prod",
        options={"network": str(network.id), "endpoint": fake.url, "token-file": str(token_file)},
    )
    try:
        assert await provider.list_routes() == []
        rotated = f"{fake.token}-rotated"
        fake.token = rotated
        with pytest.raises(ProviderTerminalError, match="unauthorized"):
            await provider.list_routes()
        token_file.write_text(rotated)
        assert await provider.list_routes() == []
    finally:
        await provider.aclose()


async def test_unreachable_api_is_transient(
    network: FakeNetwork, make_provider: MakeProvider
) -> None:
    """A refused connection is a transient error."""
    del network
    with pytest.raises(ProviderError, match="cannot reach") as caught:
        await make_provider(endpoint="http://127.0.0.1:9/v1").list_routes()
    assert not isinstance(caught.value, ProviderTerminalError)


async def test_server_errors_are_transient(fake: FakeHcloud, make_provider: MakeProvider) -> None:
    """5xx answers (even without a JSON body code) are transient."""
    provider = make_provider()
    for status, code in ((500, "server_error"), (503, ""), (504, "timeout")):
        fake.fail_next(status, code)
        with pytest.raises(ProviderError) as caught:
            await provider.list_routes()
        assert type(caught.value) is ProviderError


@pytest.mark.parametrize(
    ("retry_after", "hint"),
    [
        pytest.param(lambda now: "30", 30.0, id="seconds"),
        pytest.param(lambda now: email.utils.formatdate(now + 45, usegmt=True), 45.0, id="date"),
    ],
)
async def test_a_503_that_says_when_to_come_back_is_throttling_with_that_hint(
    fake: FakeHcloud,
    make_provider: MakeProvider,
    retry_after: Callable[[float], str],
    hint: float,
) -> None:
    """A 503 (``unavailable``, ``maintenance``) with Retry-After, in seconds or as an HTTP
    date against the server's Date, pauses routectl for that long; without one it is a
    plain transient error (see test_server_errors_are_transient)."""
    provider = make_provider()
    fake.fail_next(503, "maintenance", headers={"Retry-After": retry_after(fake.now())})
    with pytest.raises(ProviderThrottledError) as caught:
        await provider.list_routes()
    assert caught.value.retry_after == hint
    fake.fail_next(503, "unavailable", headers={"Retry-After": "soon"})
    with pytest.raises(ProviderError) as unreadable:
        await provider.list_routes()
    assert type(unreadable.value) is ProviderError


async def test_aclose_is_idempotent(make_provider: MakeProvider) -> None:
    """aclose may be called twice, and a closed provider refuses further calls."""
    provider = make_provider()
    assert await provider.list_routes() == []
    await provider.aclose()
    await provider.aclose()
    with pytest.raises(ProviderTerminalError, match="closed"):
        await provider.list_routes()


async def test_entry_point_resolves_to_the_provider() -> None:
    """The distribution registers ``hcloud`` in routectl's entry-point group."""
    assert load_factory("hcloud") is HcloudProvider

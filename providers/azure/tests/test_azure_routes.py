"""What the ``azure`` provider does to an Azure route table, through azure-mgmt-network over HTTPS.

Beyond the contract: a table the Azure CCM wrote is adopted without a write; a batch is one
read and one whole-table write; a concurrent writer's change is never overwritten (412,
read again, re-applied); ARM's throttling is honoured with its hint and its rate-limit
headers are kept; the 400-route limit is terminal and named, and a batch fills the table up
to it; long-running operations are followed and stay inside the caller's timeout; a missing
table is created; machines in scale sets count as alive; a client secret is exchanged for a
token at Entra ID's endpoint through the same paced transport, and never echoed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import pytest
from routectl_azure import AzureProvider
from routectl_azure.table import node_of, rfc1035, route_name
from routectl_azure.testing import (
    CLIENT_ID,
    SECRET,
    SUBSCRIPTION,
    TENANT,
    FakeArm,
    FakeTable,
    StaticToken,
)

from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
)
from routectl.model import NodeAddress, Route
from routectl.provider import load_factory
from routectl.testing.contract import CountingBudget

GROUP, TABLE = "mc_rg", "kubernetes-routetable"


def node_route(index: int, *, v6: bool = False) -> Route:
    """The route routectl asks for: Node ``node-<index>``, its pod CIDR, its private IPs."""
    cidr = f"fd00:10:244:{index:x}::/64" if v6 else f"10.{244 + index // 256}.{index % 256}.0/24"
    return Route(
        target_node=f"node-{index}",
        destination_cidr=cidr,
        target_node_addresses=(
            NodeAddress(type="Hostname", address=f"node-{index}"),
            NodeAddress(type="InternalIP", address=ip(index)),
            NodeAddress(type="InternalIP", address=f"fd00::{index + 10}"),
        ),
    )


def ip(index: int) -> str:
    """Node ``index``'s private IPv4 address."""
    return f"10.240.{index // 250}.{index % 250 + 4}"


_MADE: list[AzureProvider] = []


@pytest.fixture(autouse=True)
async def closing() -> AsyncIterator[None]:
    """Every provider a test made is closed after it, even when the test failed."""
    yield
    while _MADE:
        await _MADE.pop().aclose()


def provider_for(fake: FakeArm, **extra: str) -> AzureProvider:
    """A provider of the table, counting its budget against the fake's requests."""
    options = {
        "subscriptionId": SUBSCRIPTION,
        "resourceGroup": GROUP,
        "routeTableName": TABLE,
        "location": "westeurope",
        "resourceManagerEndpoint": fake.url,
        "ca-bundle": fake.ca_path,
        "polling-interval": "0",
        **extra,
    }
    made = AzureProvider(
        cluster_name="c",
        options=options,
        budget=CountingBudget(lambda: len(fake.requests)),
        credential=StaticToken(),
    )
    _MADE.append(made)
    return made


def as_the_ccm_writes(table: FakeTable, nodes: int) -> None:
    """Routes exactly as cloud-provider-azure's CreateRoute makes them (dual-stack on)."""
    for index in range(nodes):
        route = node_route(index)
        table.add(
            route_name(route.target_node, route.destination_cidr),
            route.destination_cidr,
            hop=ip(index),
        )


@pytest.fixture
async def fake() -> AsyncIterator[FakeArm]:
    """The fake ARM with the cluster's table and ten VMs."""
    async with FakeArm() as started:
        started.add_table(GROUP, TABLE)
        for index in range(10):
            started.add_vm(GROUP, f"node-{index}", ip(index))
        yield started


def the_table(fake: FakeArm) -> FakeTable:
    """The cluster's route table in the fake."""
    return fake.tables[(GROUP.lower(), TABLE.lower())]


def test_routes_are_named_as_cloud_provider_azure_names_them() -> None:
    """mapNodeNameToRouteName with dual-stack on (its test: 1.2.3.4/24 -> node____123424)."""
    assert route_name("node", "1.2.3.4/24") == "node____123424"
    assert route_name("aks-pool-1-vmss000000", "fd3e:5f02:6ec0:30ba::/64") == (
        "aks-pool-1-vmss000000____fd3e5f026ec030ba64"
    )
    assert rfc1035("10.244.1.0/24") == "102441024"
    raw: dict[str, Any] = {
        "name": "node____123424",
        "properties": {
            "addressPrefix": "1.2.3.4/24",
            "nextHopType": "VirtualAppliance",
            "nextHopIpAddress": "10.0.0.4",
        },
    }
    assert node_of(raw) == "node"
    assert node_of({**raw, "name": "node____999"}) is None  # suffix of another prefix
    assert node_of({**raw, "name": "node"}) is None  # an old single-stack name: not marked
    assert node_of({**raw, "properties": {**raw["properties"], "nextHopType": "Internet"}}) is None


async def test_a_table_the_ccm_wrote_is_adopted_without_a_write(fake: FakeArm) -> None:
    """Every CCM route is listed with its Node; creating them all again writes nothing."""
    table = the_table(fake)
    as_the_ccm_writes(table, 10)
    table.add("to-firewall", "0.0.0.0/0", hop="10.240.255.4")
    provider = provider_for(fake)
    listed = await provider.list_routes()
    assert sorted((r.target_node, r.destination_cidr, r.blackhole) for r in listed) == sorted(
        (f"node-{i}", f"10.244.{i}.0/24", False) for i in range(10)
    )
    result = await provider.apply_routes(
        deletes=[], creates=[(node_route(i), "uid") for i in range(10)]
    )
    for index in range(10):
        await provider.create_route(node_route(index), name_hint="uid")
    await provider.aclose()
    assert not result.failed_creates
    assert fake.writes == 0
    assert fake.count("PUT") == 0
    assert fake.count("DELETE") == 0


async def test_a_batch_is_one_read_and_one_write(fake: FakeArm) -> None:
    """Fifty creates and two deletes cost one table read and one whole-table PUT."""
    table = the_table(fake)
    as_the_ccm_writes(table, 2)
    for index in range(10, 60):
        fake.add_vm(GROUP, f"node-{index}", ip(index))
    provider = provider_for(fake)
    listed = list(await provider.list_routes())  # and the machines, cached
    fake.requests.clear()
    result = await provider.apply_routes(
        deletes=listed, creates=[(node_route(i), "uid") for i in range(10, 60)]
    )
    await provider.aclose()
    assert not result.failed_creates
    assert not result.failed_deletes
    # The read, the write, and the SDK's poller: the operation's status, the table's final GET.
    assert [(m, "/operations/" in p) for m, p in fake.requests] == [
        ("GET", False),
        ("PUT", False),
        ("GET", True),
        ("GET", False),
    ]
    assert sorted(r["properties"]["addressPrefix"] for r in table.routes) == sorted(
        f"10.244.{i}.0/24" for i in range(10, 60)
    )
    assert all(r["properties"]["nextHopType"] == "VirtualAppliance" for r in table.routes)


async def test_a_concurrent_change_is_never_overwritten(fake: FakeArm) -> None:
    """Someone changes the table between the read and the write: ARM says 412, the provider
    reads it again and re-applies its change; both changes are in the table."""
    table = the_table(fake)
    provider = provider_for(fake)
    fake.before_next("PUT", lambda: table.add("to-firewall", "0.0.0.0/0", hop="10.240.255.4"))
    await provider.create_route(node_route(1), name_hint="uid")
    await provider.aclose()
    assert {r["name"] for r in table.routes} == {
        "to-firewall",
        route_name("node-1", "10.244.1.0/24"),
    }
    assert fake.count("PUT") == 2  # the first was refused with 412
    assert fake.count("GET", "/routeTables/") == 3  # two reads, the poller's final GET


async def test_a_table_that_keeps_changing_is_a_transient_error(fake: FakeArm) -> None:
    """Three 412s in a row: a plain ProviderError (routectl retries later), nothing lost."""
    table = the_table(fake)
    provider = provider_for(fake)

    def writer(index: int) -> Callable[[], None]:
        return lambda: table.add(f"other-{index}", f"192.168.{index}.0/24", hop="10.240.255.4")

    for index in range(3):
        fake.before_next("PUT", writer(index))
    with pytest.raises(ProviderError, match="changed under 3 writes") as caught:
        await provider.create_route(node_route(1), name_hint="uid")
    await provider.aclose()
    assert not isinstance(caught.value, ProviderTerminalError)
    assert {r["name"] for r in table.routes} == {"other-0", "other-1", "other-2"}


@pytest.mark.parametrize(
    ("status", "headers", "hint"),
    [
        pytest.param(429, {"Retry-After": "17"}, 17.0, id="429-seconds"),
        pytest.param(429, {}, 1.0, id="429-no-hint"),
        pytest.param(
            429,
            {
                "Retry-After": "Wed, 21 Oct 2037 07:28:00 GMT",
                "Date": "Wed, 21 Oct 2037 07:27:15 GMT",
            },
            45.0,
            id="429-http-date",
        ),
        pytest.param(503, {"Retry-After": "5"}, 5.0, id="503-with-hint"),
    ],
)
async def test_arm_throttling_carries_its_hint(
    fake: FakeArm, status: int, headers: dict[str, str], hint: float
) -> None:
    """A 429 (or a 503 that says when) pauses routectl for as long as ARM asked."""
    provider = provider_for(fake)
    fake.fail_next(
        "GET", status, "SubscriptionRequestsThrottled", **cast("dict[str, Any]", headers)
    )
    with pytest.raises(ProviderThrottledError) as caught:
        await provider.list_routes()
    await provider.aclose()
    assert caught.value.retry_after == hint


async def test_rate_limit_headers_are_kept(fake: FakeArm) -> None:
    """ARM's remaining reads and writes of the last answers are readable on the provider."""
    provider = provider_for(fake, **{"find-blackholes": "false"})
    await provider.create_route(node_route(1), name_hint="uid")
    await provider.list_routes()
    await provider.aclose()
    assert provider.rate_limits.remaining["subscription-reads"] == fake.reads_left
    assert provider.rate_limits.remaining["subscription-writes"] == fake.writes_left
    assert fake.writes_left < 1200


async def test_the_route_limit_is_terminal_and_named(fake: FakeArm) -> None:
    """A full table (400 routes): a create fails terminally naming the limit, with no write;
    a batch fills the table up to it and reports the rest by index."""
    table = the_table(fake)
    as_the_ccm_writes(table, 397)
    provider = provider_for(fake, **{"find-blackholes": "false"})
    result = await provider.apply_routes(
        deletes=[], creates=[(node_route(i), "uid") for i in range(397, 402)]
    )
    assert sorted(result.failed_creates) == [3, 4]
    assert "at most 400 routes" in str(result.failed_creates[3])
    assert isinstance(result.failed_creates[3], ProviderTerminalError)
    assert len(table.routes) == 400
    puts = fake.count("PUT")
    with pytest.raises(ProviderTerminalError, match="at most 400 routes per route table"):
        await provider.create_route(node_route(450), name_hint="uid")
    await provider.aclose()
    assert fake.count("PUT") == puts


async def test_the_route_limit_holds_for_per_route_writes(fake: FakeArm) -> None:
    """batch-writes=false: the same limit, before any write."""
    as_the_ccm_writes(the_table(fake), 400)
    fake.add_vm(GROUP, "node-450", ip(450))
    provider = provider_for(fake, **{"batch-writes": "false"})
    assert not provider.supports_batch
    with pytest.raises(ProviderTerminalError, match="at most 400"):
        await provider.create_route(node_route(450), name_hint="uid")
    await provider.aclose()
    assert fake.writes == 0


async def test_a_raised_route_limit_lets_the_table_grow() -> None:
    """route-limit=1000 (a subscription with Azure's higher limit): route 401 is made, and
    the limit named in the refusal is the configured one."""
    async with FakeArm(route_limit=1000) as fake:
        as_the_ccm_writes(fake.add_table(GROUP, TABLE), 400)
        provider = provider_for(fake, **{"find-blackholes": "false", "route-limit": "1000"})
        await provider.create_route(node_route(400), name_hint="uid")
        assert len(the_table(fake).routes) == 401
        small = provider_for(fake, **{"route-limit": "401"})
        with pytest.raises(ProviderTerminalError, match="at most 401 routes"):
            await small.create_route(node_route(401), name_hint="uid")


@pytest.mark.looptime
async def test_long_running_operations_are_followed_to_their_end() -> None:
    """ARM takes 30 s: the write polls Azure-AsyncOperation (as Retry-After says) until it
    succeeded, in the loop's time."""
    async with FakeArm(operation_seconds=30) as fake:
        fake.add_table(GROUP, TABLE)
        provider = provider_for(fake)
        await provider.create_route(node_route(1), name_hint="uid")
        assert fake.count("GET", "/operations/") >= 2
        assert the_table(fake).state == "Succeeded"
        await provider.aclose()


@pytest.mark.looptime
async def test_a_write_stays_within_the_callers_timeout() -> None:
    """routectl's per-call timeout cancels the poller; no poll is sent after it."""
    async with FakeArm(operation_seconds=600) as fake:
        fake.add_table(GROUP, TABLE)
        provider = provider_for(fake)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(60):
                await provider.create_route(node_route(1), name_hint="uid")
        polls = fake.count("GET", "/operations/")
        await asyncio.sleep(120)
        assert fake.count("GET", "/operations/") == polls
        await provider.aclose()


async def test_a_missing_table_is_created_by_the_first_write() -> None:
    """No table: the listing is empty; a create makes it (If-None-Match: *) in `location`."""
    async with FakeArm() as fake:
        provider = provider_for(fake)
        assert list(await provider.list_routes()) == []
        await provider.create_route(node_route(1), name_hint="uid")
        await provider.aclose()
        table = the_table(fake)
        assert table.location == "westeurope"
        assert [r["name"] for r in table.routes] == [route_name("node-1", "10.244.1.0/24")]


async def test_a_missing_table_without_location_is_terminal() -> None:
    """Without `location` the table cannot be created: terminal, and named."""
    async with FakeArm() as fake:
        provider = provider_for(fake, location="")
        with pytest.raises(ProviderTerminalError, match=r"does not exist.*no location"):
            await provider.create_route(node_route(1), name_hint="uid")
        await provider.aclose()


async def test_dual_stack_routes_go_to_the_address_of_their_family(fake: FakeArm) -> None:
    """An IPv6 pod CIDR's route goes to the Node's IPv6 InternalIP, with the CCM's name."""
    provider = provider_for(fake, **{"find-blackholes": "false"})
    await provider.create_route(node_route(1, v6=True), name_hint="uid")
    await provider.aclose()
    (route,) = the_table(fake).routes
    assert route["name"] == "node-1____fd0010244164"
    assert route["properties"]["nextHopIpAddress"] == "fd00::11"


async def test_a_node_without_an_address_of_the_family_is_transient(fake: FakeArm) -> None:
    """A Node whose IPv6 address is not set yet: a transient error, no request."""
    provider = provider_for(fake)
    bare = Route(target_node="node-1", destination_cidr="fd00:10:244:1::/64")
    with pytest.raises(ProviderError, match="no IPv6 InternalIP") as caught:
        await provider.create_route(bare, name_hint="uid")
    await provider.aclose()
    assert not isinstance(caught.value, ProviderTerminalError)
    assert fake.requests == []


async def test_scale_set_machines_are_alive_and_their_loss_a_blackhole() -> None:
    """A uniform scale set's instances are found through Compute's listing; a route to a
    deleted instance is a blackhole, and the interfaces are listed once per cache-seconds."""
    async with FakeArm() as fake:
        table = fake.add_table(GROUP, TABLE)
        for index in range(3):
            fake.add_scale_set_vm(GROUP, "aks-pool-vmss", f"node-{index}", ip(index))
        as_the_ccm_writes(table, 3)
        provider = provider_for(fake, **{"cache-seconds": "0"})
        assert not any(r.blackhole for r in await provider.list_routes())
        fake.remove_machine(ip(2))
        listed = await provider.list_routes()
        await provider.aclose()
        assert sorted((r.target_node, r.blackhole) for r in listed) == [
            ("", True),
            ("node-0", False),
            ("node-1", False),
        ]
        assert fake.count("GET", "/virtualMachineScaleSets/aks-pool-vmss/networkInterfaces") == 2


async def test_no_interface_at_all_is_unknown_not_every_machine_gone(fake: FakeArm) -> None:
    """An empty interface listing (wrong group, no permission) marks no route a blackhole."""
    as_the_ccm_writes(the_table(fake), 3)
    fake.nics.clear()
    provider = provider_for(fake)
    listed = await provider.list_routes()
    await provider.aclose()
    assert [r.blackhole for r in listed] == [False, False, False]


async def test_a_foreign_route_on_the_prefix_is_named_in_the_refusal(fake: FakeArm) -> None:
    """An operator's route holds the prefix: terminal, naming it; another Node's: exists."""
    table = the_table(fake)
    table.add("to-firewall", "10.244.1.0/24", hop="10.240.255.4")
    as_the_ccm_writes(table, 1)
    provider = provider_for(fake)
    with pytest.raises(ProviderTerminalError, match="'to-firewall'"):
        await provider.create_route(node_route(1), name_hint="uid")
    taken = Route(
        target_node="node-5",
        destination_cidr="10.244.0.0/24",
        target_node_addresses=node_route(5).target_node_addresses,
    )
    with pytest.raises(RouteAlreadyExistsError, match="node-0"):
        await provider.create_route(taken, name_hint="uid")
    await provider.aclose()
    assert fake.writes == 0


async def test_a_client_secret_gets_a_token_through_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real ClientSecretCredential asks the (fake) Entra ID for a token, paced like every
    ARM request; a wrong secret is terminal and its value never shows."""
    async with FakeArm() as fake:
        fake.add_table("mc_rg", "rt")
        monkeypatch.setenv("AZURE_AUTHORITY_HOST", fake.authority)
        budget = CountingBudget(lambda: len(fake.requests))
        options = {
            "subscriptionId": SUBSCRIPTION,
            "resourceGroup": "mc_rg",
            "routeTableName": "rt",
            "aadClientId": CLIENT_ID,
            "aadClientSecret": SECRET,
            "tenantId": TENANT,
            "resourceManagerEndpoint": fake.url,
            "ca-bundle": fake.ca_path,
            "find-blackholes": "false",
        }
        provider = AzureProvider(cluster_name="c", options=options, budget=budget)
        assert list(await provider.list_routes()) == []
        await provider.aclose()
        assert fake.requests[0] == ("POST", f"/{TENANT}/oauth2/v2.0/token")
        assert budget.spent == len(fake.requests) == 2

        wrong = AzureProvider(
            cluster_name="c", options={**options, "aadClientSecret": "wrong-secret"}, budget=budget
        )
        with pytest.raises(ProviderTerminalError, match="no token for ARM") as caught:
            await wrong.list_routes()
        await wrong.aclose()
        assert "wrong-secret" not in str(caught.value)


def test_entry_point_resolves() -> None:
    """The distribution registers ``azure`` in routectl's entry-point group."""
    factory: object = load_factory("azure")
    assert factory is AzureProvider


@pytest.mark.looptime
async def test_a_node_without_a_machine_waits_and_a_new_machine_does_not(fake: FakeArm) -> None:
    """A batch writes the Nodes whose machines exist and fails, transiently, the create of
    one whose machine is not there; a machine newer than the cached listing of interfaces
    lists them again at once (a new Node waits for no cache), a missing one only once."""
    provider = provider_for(fake)
    result = await provider.apply_routes(
        deletes=[],
        creates=[(node_route(1), "uid"), (node_route(20), "uid"), (node_route(2), "uid")],
    )
    assert set(result.failed_creates) == {1}
    failure = result.failed_creates[1]
    assert type(failure) is ProviderError
    assert "10.240.0.24" in str(failure)
    assert {r["properties"]["addressPrefix"] for r in the_table(fake).routes} == {
        "10.244.1.0/24",
        "10.244.2.0/24",
    }
    nic_listings = fake.count("GET", "networkInterfaces")
    assert nic_listings == 1  # one listing for the whole batch
    await asyncio.sleep(5)
    fake.add_vm(GROUP, "node-20", ip(20))
    await provider.create_route(node_route(20), name_hint="uid")
    assert fake.count("GET", "networkInterfaces") == nic_listings + 1
    with pytest.raises(ProviderError) as caught:
        await provider.create_route(node_route(21), name_hint="uid")
    assert not isinstance(caught.value, ProviderTerminalError | RouteAlreadyExistsError)
    assert fake.count("GET", "networkInterfaces") == nic_listings + 1
    assert len(the_table(fake).routes) == 3


async def test_without_blackhole_finding_no_machine_is_looked_up(fake: FakeArm) -> None:
    """find-blackholes=false lists no interfaces, so it cannot tell: the route is written."""
    provider = provider_for(fake, **{"find-blackholes": "false"})
    await provider.create_route(node_route(20), name_hint="uid")
    assert fake.count("GET", "networkInterfaces") == 0
    assert len(the_table(fake).routes) == 1


async def test_another_nodes_route_is_named_as_the_holder(fake: FakeArm) -> None:
    """A create over another Node's route says which route holds the destination, in both
    write modes, so routectl needs no listing to decide."""
    as_the_ccm_writes(the_table(fake), 2)
    taken = Route(
        target_node="node-3",
        destination_cidr="10.244.1.0/24",
        target_node_addresses=node_route(3).target_node_addresses,
    )
    for mode in ("true", "false"):
        provider = provider_for(fake, **{"batch-writes": mode})
        with pytest.raises(RouteAlreadyExistsError) as caught:
            await provider.create_route(taken, name_hint="uid")
        assert caught.value.holder == Route(
            target_node="node-1", destination_cidr="10.244.1.0/24", name="node-1____102441024"
        )
    result = await provider_for(fake).apply_routes(deletes=[], creates=[(taken, "uid")])
    assert getattr(result.failed_creates[0], "holder", None) is not None
    assert fake.writes == 0

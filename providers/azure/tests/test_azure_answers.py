"""The ``azure`` provider checks the shape of what ARM answers: a malformed answer (a value of
the wrong type, a missing field, a proxy's HTML page or an empty body where JSON belongs) is
one MalformedAnswerError naming the field, never a ValueError from inside the plugin nor a
route silently left out of a listing; and no write is made on a table it could not read."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from routectl_azure import AzureProvider
from routectl_azure.table import route_name
from routectl_azure.testing import SUBSCRIPTION, FakeArm, StaticToken

from routectl.errors import MalformedAnswerError
from routectl.model import NodeAddress, Route

pytestmark = pytest.mark.looptime

GROUP, TABLE = "mc_rg", "kubernetes-routetable"
ROUTE = Route(
    target_node="node-a",
    destination_cidr="10.244.1.0/24",
    target_node_addresses=(NodeAddress(type="InternalIP", address="10.240.0.4"),),
)


def first_route(key: str, value: object) -> Callable[[Any], Any]:
    """An edit of the table's JSON: the first route's ``properties[key]`` becomes ``value``
    (``key`` empty: the route itself; ``None``: the property is left out)."""

    def edit(table: Any) -> Any:
        routes = table["properties"]["routes"]
        if not key:
            routes[0] = value
        elif value is None:
            del routes[0]["properties"][key]
        else:
            routes[0]["properties"][key] = value
        return table

    return edit


@pytest.fixture
async def fake() -> AsyncIterator[FakeArm]:
    """The fake ARM with the cluster's table, a VM and its route."""
    async with FakeArm() as started:
        table = started.add_table(GROUP, TABLE)
        started.add_vm(GROUP, "node-a", "10.240.0.4")
        table.add(route_name("node-a", "10.244.1.0/24"), "10.244.1.0/24", hop="10.240.0.4")
        yield started


@pytest.fixture
async def provider(fake: FakeArm) -> AsyncIterator[AzureProvider]:
    """A provider of the table; interfaces listed afresh each time."""
    made = AzureProvider(
        cluster_name="c",
        options={
            "subscriptionId": SUBSCRIPTION,
            "resourceGroup": GROUP,
            "routeTableName": TABLE,
            "resourceManagerEndpoint": fake.url,
            "ca-bundle": fake.ca_path,
            "polling-interval": "0",
            "cache-seconds": "0",
        },
        credential=StaticToken(),
    )
    yield made
    await made.aclose()


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (first_route("", "10.244.1.0/24 via 10.240.0.4"), "properties.routes[0] is a string"),
        (first_route("addressPrefix", 5), "properties.routes[0].properties.addressPrefix"),
        (first_route("addressPrefix", None), "properties.routes[0].properties.addressPrefix"),
        (first_route("nextHopType", [1]), "properties.routes[0].properties.nextHopType"),
        (first_route("nextHopIpAddress", 7), "properties.routes[0].properties.nextHopIpAddress"),
        ("<html><body>Proxy authentication required</body></html>", "the body is not JSON"),
        ("", "the body is not JSON"),
    ],
    ids=[
        "route-is-a-string",
        "prefix-number",
        "prefix-missing",
        "hop-type-list",
        "hop-number",
        "html",
        "empty",
    ],
)
async def test_a_malformed_table_is_one_error_naming_the_field(
    fake: FakeArm, provider: AzureProvider, edit: Callable[[Any], Any] | str, field: str
) -> None:
    """The listing fails naming the field; the next, well-formed answer lists the route."""
    fake.garble_next(f"/routeTables/{TABLE}", edit)
    with pytest.raises(MalformedAnswerError, match="Azure get route table: malformed answer"):
        await provider.list_routes()
    fake.garble_next(f"/routeTables/{TABLE}", edit)
    with pytest.raises(MalformedAnswerError) as caught:
        await provider.list_routes()
    assert field in str(caught.value)
    assert [(r.target_node, r.destination_cidr) for r in await provider.list_routes()] == [
        ("node-a", "10.244.1.0/24")
    ]


async def test_no_whole_table_write_on_a_table_it_could_not_read(
    fake: FakeArm, provider: AzureProvider
) -> None:
    """A create whose read of the table is garbled fails before any PUT: a route it could
    not read is never written away."""
    fake.garble_next(f"/routeTables/{TABLE}", first_route("addressPrefix", 5))
    other = Route(
        target_node="node-a",
        destination_cidr="10.244.2.0/24",
        target_node_addresses=ROUTE.target_node_addresses,
    )
    with pytest.raises(MalformedAnswerError):
        await provider.create_route(other, name_hint="u")
    assert fake.count("PUT") == 0
    assert len(fake.tables[(GROUP.lower(), TABLE.lower())].routes) == 1


async def test_a_malformed_interface_listing_names_the_field(
    fake: FakeArm, provider: AzureProvider
) -> None:
    """A network interface whose private IP is a number fails the listing naming it,
    rather than calling the route a blackhole."""

    def garble(page: Any) -> Any:
        page["value"][0]["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"] = 10
        return page

    fake.garble_next("/networkInterfaces", garble)
    with pytest.raises(MalformedAnswerError, match=r"privateIPAddress is a number"):
        await provider.list_routes()

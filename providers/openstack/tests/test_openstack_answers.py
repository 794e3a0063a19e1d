"""The ``openstack`` provider checks what Neutron and Nova answer, as openstacksdk hands it
over: a router whose ``routes`` are missing (an HTML page or empty body, which the SDK reads
as a router with nothing in it), not a list of objects, or hold a destination that is no CIDR;
a server without a name or with addresses of the wrong shape; a servers listing the SDK
cannot read. Each is one MalformedAnswerError naming the field, never an AttributeError
traceback, an empty listing, nor a whole-table write built on a table it could not read."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from routectl_openstack import OpenStackProvider
from routectl_openstack.testing import PASSWORD, FakeOpenStack, FakeRouter

from routectl.errors import MalformedAnswerError
from routectl.model import Route

ROUTE = Route(target_node="node-a", destination_cidr="10.244.1.0/24")
HTML = "<!DOCTYPE html><html><body>Proxy authentication required</body></html>"


def first_route(key: str, value: object) -> Callable[[Any], Any]:
    """An edit of the router's JSON: its first route's ``key`` becomes ``value`` (``key``
    empty: the route itself; ``None``: the key is left out)."""

    def edit(body: Any) -> Any:
        routes = body["router"]["routes"]
        if not key:
            routes[0] = value
        elif value is None:
            del routes[0][key]
        else:
            routes[0][key] = value
        return body

    return edit


def first_server(edit: Callable[[dict[str, Any]], object]) -> Callable[[Any], Any]:
    """An edit of Nova's servers listing: ``edit`` applied to its first server."""

    def apply(body: Any) -> Any:
        edit(body["servers"][0])
        return body

    return apply


@pytest.fixture(params=[True, False], ids=["atomic", "whole-table"])
async def fake(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[FakeOpenStack]:
    """The fake APIs, a router on the Nodes' subnet, server node-a; with and without
    Neutron's extraroute-atomic extension."""
    async with FakeOpenStack(atomic=request.param) as started:
        started.add_router("10.0.0.0/24")
        started.add_server("node-a", "10.0.0.11")
        monkeypatch.setenv("OS_USERNAME", "routectl")
        monkeypatch.setenv("OS_PASSWORD", PASSWORD)
        monkeypatch.setenv("OS_PROJECT_NAME", "k8s")
        yield started


def the_router(fake: FakeOpenStack) -> FakeRouter:
    (router,) = fake.routers.values()
    return router


@pytest.fixture
async def provider(fake: FakeOpenStack) -> AsyncIterator[OpenStackProvider]:
    """A provider of the router, servers listed afresh each time, with node-a's route."""
    made = OpenStackProvider(
        cluster_name="c",
        options={
            "router-id": the_router(fake).id,
            "node-cidrs": "10.0.0.0/24",
            "auth-url": fake.auth_url,
            "cache-seconds": "0",
        },
    )
    await made.create_route(ROUTE, name_hint="u")
    yield made
    await made.aclose()


@pytest.mark.parametrize(
    ("where", "edit", "message"),
    [
        ("router", first_route("", "10.244.1.0/24 via 10.0.0.11"), "router.routes[0] is a string"),
        ("router", first_route("destination", 5), "router.routes[0].destination is a number"),
        ("router", first_route("destination", "two"), "destination is 'two', expected a CIDR"),
        ("router", first_route("destination", None), "router.routes[0].destination is null"),
        ("router", first_route("nexthop", 7), "router.routes[0].nexthop is a number"),
        ("router", lambda body: {"router": {"id": "x"}}, "router.routes is missing"),
        ("router", HTML, "router.routes is missing (not Neutron's JSON"),
        ("router", "", "router.routes is missing (not Neutron's JSON"),
        ("servers", first_server(lambda s: s.pop("name")), "servers[0].name is null"),
        (
            "servers",
            first_server(lambda s: s["addresses"]["k8s-net"][0].update(addr=5)),
            "servers[0].addresses.k8s-net[0].addr is a number",
        ),
        ("servers", lambda body: {"servers": "node-a"}, "openstacksdk could not read it"),
        ("servers", HTML, "the body is not JSON"),
    ],
    ids=[
        "route-is-a-string",
        "destination-number",
        "destination-word",
        "destination-missing",
        "nexthop-number",
        "routes-missing",
        "router-html",
        "router-empty",
        "server-name-missing",
        "address-number",
        "servers-string",
        "servers-html",
    ],
)
async def test_a_malformed_answer_is_one_error_naming_the_field(
    fake: FakeOpenStack,
    provider: OpenStackProvider,
    where: str,
    edit: Callable[[Any], Any] | str,
    message: str,
) -> None:
    """The listing fails with one error naming the field; the next, well-formed answer
    lists the route again, to its Node (never as a blackhole)."""
    suffix = the_router(fake).id if where == "router" else "/servers/detail"
    fake.garble_next(suffix, edit)
    with pytest.raises(MalformedAnswerError, match="malformed answer") as caught:
        await provider.list_routes()
    assert message in str(caught.value)
    listed = await provider.list_routes()
    assert [(r.target_node, r.destination_cidr) for r in listed] == [("node-a", "10.244.1.0/24")]


async def test_no_write_on_a_router_it_could_not_read(
    fake: FakeOpenStack, provider: OpenStackProvider
) -> None:
    """A create whose read of the router is an HTML page writes nothing: in whole-table
    mode a write built on that 'empty' table would have wiped every other route."""
    router = the_router(fake)
    router.routes.append({"destination": "192.168.0.0/16", "nexthop": "10.0.0.1"})
    writes = fake.count("PUT")
    fake.garble_next(router.id, HTML)
    with pytest.raises(MalformedAnswerError):
        await provider.create_route(
            Route(target_node="node-a", destination_cidr="10.244.2.0/24"), name_hint="v"
        )
    assert fake.count("PUT") == writes
    assert {"destination": "192.168.0.0/16", "nexthop": "10.0.0.1"} in router.routes

"""What the ``openstack`` provider does to a Neutron router, through openstacksdk over HTTP.

Beyond the contract: a batch is one router read and one write however many routes it holds
(``add_extraroutes`` with the extension, one whole-table ``PUT`` with ``If-Match`` without
it); Neutron's ``max_routes`` quota is terminal, named, and a batch fills the router up to
it; a table changed under a whole-table write is a transient error; a 503 that says when
to come back (Retry-After) is throttling with that hint; options are checked.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from routectl_openstack import OpenStackProvider
from routectl_openstack.testing import PASSWORD, FakeOpenStack

from routectl.errors import (
    ConfigError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
)
from routectl.model import Route
from routectl.provider import load_factory
from routectl.testing.contract import CountingBudget

SUBNET = "10.0.0.0/24"


@pytest.fixture(autouse=True)
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake Keystone's user."""
    monkeypatch.setenv("OS_USERNAME", "routectl")
    monkeypatch.setenv("OS_PASSWORD", PASSWORD)
    monkeypatch.setenv("OS_PROJECT_NAME", "k8s")


async def scene(fake: FakeOpenStack, nodes: int) -> tuple[OpenStackProvider, list[Route]]:
    """A router on the Nodes' subnet, ``nodes`` servers, a provider and one route per Node."""
    router = fake.add_router(SUBNET)
    routes = []
    for index in range(nodes):
        fake.add_server(f"node-{index}", f"10.0.0.{index + 10}")
        routes.append(Route(target_node=f"node-{index}", destination_cidr=f"10.244.{index}.0/24"))
    options = {"router-id": router.id, "node-cidrs": SUBNET, "auth-url": fake.auth_url}
    budget = CountingBudget(lambda: len(fake.requests))
    return OpenStackProvider(cluster_name="c", options=options, budget=budget), routes


@pytest.fixture(params=[True, False], ids=["extraroute-atomic", "whole-table"])
async def fake(request: pytest.FixtureRequest) -> AsyncIterator[FakeOpenStack]:
    """The fake APIs, with and without the extension, Neutron's default quota raised."""
    async with FakeOpenStack(atomic=request.param, max_routes=200) as started:
        yield started


async def test_a_batch_is_one_read_and_one_write(fake: FakeOpenStack) -> None:
    """Fifty creates cost one router read and one write (plus token, extensions, servers)."""
    provider, routes = await scene(fake, 50)
    result = await provider.apply_routes(deletes=[], creates=[(r, "uid") for r in routes])
    await provider.aclose()
    assert not result.failed_creates
    (router,) = fake.routers.values()
    assert len(router.routes) == 50
    assert fake.count("GET", f"/routers/{router.id}") == 1
    writes = fake.count("PUT", "/add_extraroutes") + fake.count("PUT", f"/routers/{router.id}")
    assert writes == 1
    calls = [p for m, p in fake.requests if not p.endswith(("/auth/tokens", "/compute/v2.1"))]
    assert len(calls) == 4  # servers, router, extensions, the write (besides token, discovery)


async def test_the_quota_is_terminal_named_and_filled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past max_routes: a create fails terminally naming the quota; a batch fills up to it."""
    async with FakeOpenStack(max_routes=3) as fake:
        provider, routes = await scene(fake, 5)
        result = await provider.apply_routes(deletes=[], creates=[(r, "u") for r in routes])
        assert sorted(result.failed_creates) == [3, 4]
        assert "max_routes" in str(result.failed_creates[3])
        (router,) = fake.routers.values()
        assert len(router.routes) == 3
        with pytest.raises(ProviderTerminalError, match="at most 3 routes"):
            await provider.create_route(routes[4], name_hint="u")
        await provider.aclose()


async def test_a_table_changed_under_a_whole_table_write_is_transient() -> None:
    """Without the extension, a revision changed since the read fails the write (412)."""
    async with FakeOpenStack(atomic=False) as fake:
        provider, routes = await scene(fake, 1)
        (router,) = fake.routers.values()
        fake.fail_next(f"/routers/{router.id}", 412, "RevisionNumberConstraintFailed")
        with pytest.raises(ProviderError) as caught:
            await provider.create_route(routes[0], name_hint="u")
        assert not isinstance(caught.value, ProviderTerminalError)
        await provider.aclose()


@pytest.mark.parametrize(
    ("headers", "hint"),
    [
        pytest.param({"Retry-After": "30"}, 30.0, id="seconds"),
        pytest.param(
            {
                "Retry-After": "Wed, 21 Oct 2037 07:28:00 GMT",
                "Date": "Wed, 21 Oct 2037 07:27:15 GMT",
            },
            45.0,
            id="http-date",
        ),
        pytest.param({}, None, id="no-hint"),
        pytest.param({"Retry-After": "soon"}, None, id="unreadable-hint"),
    ],
)
async def test_a_503_that_says_when_to_come_back_is_throttling_with_that_hint(
    headers: dict[str, str], hint: float | None
) -> None:
    """A 503 with a readable Retry-After (seconds, or an HTTP date against the answer's Date)
    pauses routectl for that long; without one it is a plain transient error."""
    async with FakeOpenStack() as fake:
        provider, _ = await scene(fake, 1)
        (router,) = fake.routers.values()
        fake.fail_next(f"/routers/{router.id}", 503, "ServiceUnavailable", **headers)
        with pytest.raises(ProviderError) as caught:
            await provider.list_routes()
        await provider.aclose()
    if hint is None:
        assert type(caught.value) is ProviderError
    else:
        assert isinstance(caught.value, ProviderThrottledError)
        assert caught.value.retry_after == hint


async def test_whole_table_writes_carry_the_revision() -> None:
    """A whole-table write sends If-Match with the revision it read: others' changes survive."""
    async with FakeOpenStack(atomic=False) as fake:
        provider, routes = await scene(fake, 1)
        (router,) = fake.routers.values()
        await provider.create_route(routes[0], name_hint="u")
        assert router.revision == 2
        router.routes.append({"destination": "192.168.0.0/16", "nexthop": "10.0.0.99"})
        router.revision += 1
        await provider.create_route(
            Route(target_node="node-0", destination_cidr="10.244.9.0/24"), name_hint="u"
        )
        assert {"destination": "192.168.0.0/16", "nexthop": "10.0.0.99"} in router.routes
        await provider.aclose()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"node-cidrs": SUBNET}, "router-id", id="no-router"),
        pytest.param({"router-id": "r"}, "node-cidrs", id="no-cidrs"),
        pytest.param({"router-id": "r", "node-cidrs": "x"}, "node-cidrs='x'", id="bad-cidrs"),
        pytest.param(
            {"router-id": "r", "node-cidrs": SUBNET, "zone": "a"},
            "unknown option(s) zone",
            id="unknown",
        ),
        pytest.param(
            {"router-id": "r", "node-cidrs": SUBNET, "cache-seconds": "-1"},
            "cache-seconds",
            id="cache",
        ),
    ],
)
def test_bad_options_fail_clearly(options: dict[str, str], message: str) -> None:
    """Each problem is one ConfigError line naming the option."""
    with pytest.raises(ConfigError, match="provider openstack") as caught:
        OpenStackProvider(cluster_name="c", options={"auth-url": "https://keystone/v3", **options})
    assert message in str(caught.value)


def test_missing_credentials_fail_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without OS_* credentials the factory says which variables to set."""
    monkeypatch.delenv("OS_PASSWORD")
    with pytest.raises(ConfigError, match="OS_USERNAME and OS_PASSWORD"):
        OpenStackProvider(
            cluster_name="c",
            options={"auth-url": "https://keystone/v3", "router-id": "r", "node-cidrs": SUBNET},
        )


def test_entry_point_resolves() -> None:
    """The distribution registers ``openstack`` in routectl's entry-point group."""
    factory: object = load_factory("openstack")
    assert factory is OpenStackProvider


async def test_credentials_as_options_authenticate_without_os_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cloud.conf's [Global] username/password/tenant-name arrive as options: they
    authenticate with no OS_* variable set."""
    for name in ("OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME"):
        monkeypatch.delenv(name)
    async with FakeOpenStack(atomic=True) as fake:
        router = fake.add_router(SUBNET)
        fake.add_server("node-0", "10.0.0.10")
        options = {
            "router-id": router.id,
            "node-cidrs": SUBNET,
            "auth-url": fake.auth_url,
            "username": "routectl",
            "password": PASSWORD,
            "project-name": "k8s",
        }
        provider = OpenStackProvider(cluster_name="c", options=options)
        await provider.create_route(
            Route(target_node="node-0", destination_cidr="10.244.0.0/24"), name_hint="u"
        )
        assert {"destination": "10.244.0.0/24", "nexthop": "10.0.0.10"} in router.routes
        await provider.aclose()
        wrong = OpenStackProvider(cluster_name="c", options={**options, "password": "nope"})
        with pytest.raises(ProviderError):
            await wrong.list_routes()
        await wrong.aclose()


async def test_route_tables_describe_the_router_for_plan() -> None:
    """route_tables() (for routectl plan): the router with its routes via the Nodes'
    subnets, whatever their CIDR; routes via other next hops are not counted."""
    async with FakeOpenStack(atomic=True) as fake:
        router = fake.add_router(SUBNET)
        router.routes.append({"destination": "192.168.0.0/16", "nexthop": "10.0.0.99"})
        router.routes.append({"destination": "172.16.0.0/12", "nexthop": "10.9.9.9"})
        options = {"router-id": router.id, "node-cidrs": SUBNET, "auth-url": fake.auth_url}
        provider = OpenStackProvider(cluster_name="c", options=options)
        assert await provider.route_tables() == {router.id: frozenset({"192.168.0.0/16"})}
        await provider.aclose()

"""Creates and deletes against the fake Compute API: operations followed to their end and
their errors mapped, a retry after a timeout, and what holds a destination or a name."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from gce_scene import ROUTES, UID_A, UID_B, credentials, options, route
from routectl_gce import GceProvider
from routectl_gce.names import spare_name
from routectl_gce.testing import FakeCompute

from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
)
from routectl.model import Route
from routectl.testing.contract_budget import CountingBudget

# -- operations and their errors -----------------------------------------------------------


async def test_an_operation_is_followed_until_done(fake: FakeCompute, make: Any) -> None:
    """An operation still RUNNING after a wait is waited for again, until DONE."""
    fake.waits_per_operation = 3
    await make().create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    assert fake.route_requests("POST", "/wait") == 3
    assert f"kubernetes-{UID_A}" in fake.routes


@pytest.mark.parametrize(
    "case",
    [
        ("QUOTA_EXCEEDED", 403, ProviderTerminalError, "ROUTES quota"),
        ("RATE_LIMIT_EXCEEDED", 429, ProviderThrottledError, "RATE_LIMIT_EXCEEDED"),
        ("INTERNAL_ERROR", 500, ProviderError, "INTERNAL_ERROR"),
        ("INVALID_USAGE", 400, ProviderTerminalError, "INVALID_USAGE"),
    ],
)
async def test_an_operation_error_is_mapped(
    fake: FakeCompute, make: Any, case: tuple[str, int, type[ProviderError], str]
) -> None:
    """The error an insert's operation ends with reaches routectl as its type, named."""
    code, status, expected, words = case
    fake.fail_next_operation(code, f"{code} happened", http_status=status)
    with pytest.raises(ProviderError) as caught:
        await make().create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    assert type(caught.value) is expected
    assert words in str(caught.value)


async def test_the_routes_quota_is_terminal_and_named(fake: FakeCompute, make: Any) -> None:
    """Past the project's ROUTES quota a create fails at once, terminally, saying so."""
    fake.routes_quota = 1
    provider = make()
    await provider.create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    with pytest.raises(
        ProviderTerminalError, match=r"Quota 'ROUTES' exceeded.*ROUTES quota is full"
    ):
        await provider.create_route(route("node-b", "10.244.2.0/24"), name_hint=UID_B)
    assert len(fake.routes) == 1


@pytest.mark.parametrize(
    "case",
    [
        (403, "rateLimitExceeded", {}, 10.0),
        (403, "userRateLimitExceeded", {}, 10.0),
        (429, "rateLimitExceeded", {"Retry-After": "7"}, 7.0),
        (503, "backendError", {"Retry-After": "3"}, 3.0),
    ],
)
async def test_rate_limits_are_throttling(
    fake: FakeCompute, make: Any, case: tuple[int, str, dict[str, str], float]
) -> None:
    """Compute's rate-limit answers ask routectl to wait (Retry-After when sent)."""
    status, reason, headers, hint = case
    fake.fail_next(status, reason, method="POST", **cast("dict[str, Any]", headers))
    with pytest.raises(ProviderThrottledError) as caught:
        await make().create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    assert caught.value.retry_after == hint


async def test_a_synchronous_quota_refusal_is_terminal(fake: FakeCompute, make: Any) -> None:
    """403 quotaExceeded on the request itself is terminal, not a retry storm."""
    fake.fail_next(403, "quotaExceeded", method="POST", message="Quota 'ROUTES' exceeded.")
    with pytest.raises(ProviderTerminalError, match="quota"):
        await make().create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)


async def test_a_retry_after_a_timeout_follows_the_running_insert(fake: FakeCompute) -> None:
    """A call cancelled while its insert runs leaves the operation to its retry: no second
    insert, no second route."""
    fake.waits_per_operation = 2

    class CancelOnFirstWait(CountingBudget):
        async def spend(self, operation: str = "request") -> None:
            await super().spend(operation)
            if operation == "globalOperations.wait" and self.operations[operation] == 1:
                raise asyncio.CancelledError  # the gate's timeout, at this await

    provider = GceProvider(
        cluster_name="kubernetes",
        options=options(fake),
        budget=CancelOnFirstWait(lambda: len(fake.requests)),
        credentials=credentials(),
    )
    with pytest.raises(asyncio.CancelledError):
        await provider.create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    await provider.create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    await provider.aclose()
    assert fake.route_requests("POST", ROUTES) == 1  # one insert, its operation followed
    assert fake.route_requests("POST", "/wait") == 2
    assert list(fake.routes) == [f"kubernetes-{UID_A}"]


# -- conflicts -------------------------------------------------------------------------------


async def test_a_person_routing_the_cidr_is_terminal_and_named(
    fake: FakeCompute, make: Any
) -> None:
    """GCE would keep both routes; routectl refuses to route a CIDR beside someone's."""
    fake.add_route("to-the-vpn", "10.244.1.0/24", next_hop_ip="10.128.0.9")
    with pytest.raises(ProviderTerminalError, match="to-the-vpn"):
        await make().create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    assert fake.route_requests("POST", ROUTES) == 0


async def test_another_nodes_route_is_already_exists(fake: FakeCompute, make: Any) -> None:
    """The error names the holder as the listing shows it, so routectl can judge it."""
    provider = make()
    await provider.create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    with pytest.raises(RouteAlreadyExistsError, match="node-a") as caught:
        await provider.create_route(route("node-b", "10.244.1.0/24"), name_hint=UID_B)
    assert caught.value.holder == Route(
        name=f"kubernetes-{UID_A}", target_node="node-a", destination_cidr="10.244.1.0/24"
    )
    assert list(fake.routes) == [f"kubernetes-{UID_A}"]


async def test_a_taken_name_not_readable_yet_is_a_transient_error(
    fake: FakeCompute, make: Any
) -> None:
    """Another writer's insert of the name still runs (409, then 404 on a read): a plain,
    retryable error, not "already exists" nor terminal, and nothing is made."""
    name = f"kubernetes-{UID_A}"
    fake.fail_next(409, "alreadyExists", method="POST", path_part=ROUTES)
    fake.fail_next(404, "notFound", method="GET", path_part=f"{ROUTES}/{name}")
    with pytest.raises(ProviderError, match="not there yet") as caught:
        await make().create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    assert not isinstance(caught.value, ProviderTerminalError | RouteAlreadyExistsError)
    assert fake.routes == {}


async def test_two_destinations_under_one_hint_get_two_names(fake: FakeCompute, make: Any) -> None:
    """The CCM's name holds the first route; the second destination of the family gets a
    name of its own (found again by a retry, not inserted twice)."""
    provider = make()
    first, second = route("node-a", "10.244.1.0/24"), route("node-a", "10.244.3.0/24")
    await provider.create_route(first, name_hint=UID_A)
    await provider.create_route(second, name_hint=UID_A)
    spare = spare_name("kubernetes", UID_A, "10.244.3.0/24")
    assert {n: r["destRange"] for n, r in fake.routes.items()} == {
        f"kubernetes-{UID_A}": "10.244.1.0/24",
        spare: "10.244.3.0/24",
    }
    inserts = fake.route_requests("POST", ROUTES)
    await make().create_route(second, name_hint=UID_A)
    assert fake.route_requests("POST", ROUTES) == inserts
    listed = {(r.target_node, r.destination_cidr) for r in await make().list_routes()}
    assert listed == {("node-a", "10.244.1.0/24"), ("node-a", "10.244.3.0/24")}


async def test_a_create_meeting_its_twins_insert_waits_for_it(fake: FakeCompute, make: Any) -> None:
    """Two creates of one route at once share the listing that finds nothing, so both
    insert: the second insert waits for the first one's operation to end, meets the name
    (409), reads the route and is done. One route, no error."""
    name = f"kubernetes-{UID_A}"
    fake.waits_per_operation = 2
    provider = make()
    await provider.list_routes()  # open the clients: both creates then ask at once
    fake.requests.clear()
    wanted = route("node-a", "10.244.1.0/24")
    await asyncio.gather(
        provider.create_route(wanted, name_hint=UID_A),
        provider.create_route(wanted, name_hint=UID_A),
    )
    assert list(fake.routes) == [name]
    kinds = [
        "wait" if r.endswith("/wait") else "insert" if r.startswith("POST") else "get"
        for r in fake.requests
        if r.startswith("POST") or r.endswith(f"{ROUTES}/{name}")
    ]
    assert kinds == ["insert", "wait", "wait", "insert", "get"]  # the second insert: 409
    assert fake.route_requests("GET", ROUTES) == 2  # one shared listing, one read

"""What the ``gce`` provider does beyond the contract, against the fake Compute API: which
routes are this cluster's, route names, operation errors, instance look-ups and their cost,
and requests that must never leave once their call is cancelled."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import uuid
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1
from routectl_gce import GceProvider
from routectl_gce.cloud import GceCloud
from routectl_gce.names import route_name, spare_name
from routectl_gce.options import parse_options
from routectl_gce.testing import FakeCompute

from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
)
from routectl.model import Route
from routectl.testing.contract_budget import CountingBudget

UID_A = "0b6a4a44-9f0e-4e1c-8a47-6f1c2d3e4f50"
UID_B = "5d2c7a10-1b2c-4d3e-9f40-a1b2c3d4e5f6"
ROUTES = "/global/routes"


def credentials() -> Any:
    return AnonymousCredentials()  # type: ignore[no-untyped-call]


@pytest.fixture
async def fake() -> AsyncIterator[FakeCompute]:
    async with FakeCompute() as fake:
        fake.add_instance("node-a")
        fake.add_instance("node-b", zone="us-central1-c")
        yield fake


def options(fake: FakeCompute, **extra: str) -> dict[str, str]:
    return {
        "project-id": fake.project,
        "network-name": "default",
        "api-endpoint": fake.url,
        **extra,
    }


@pytest.fixture
async def make(fake: FakeCompute) -> AsyncIterator[Any]:
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


def route(node: str, cidr: str) -> Route:
    return Route(target_node=node, destination_cidr=cidr)


# -- names and ownership -------------------------------------------------------------------


def test_routes_are_named_as_cloud_provider_gcp_names_them() -> None:
    """<cluster[:26]>-<Node UID>; IPv6 and non-UID hints get a UUID of their own."""
    prefix = "a-cluster-name-that-is-long"[:26]
    assert route_name(prefix, UID_A, version=4) == f"{prefix}-{UID_A}"
    assert len(route_name(prefix, UID_A, version=4)) == 63  # the API's limit, exactly
    v6 = route_name(prefix, UID_A, version=6)
    assert v6 != route_name(prefix, UID_A, version=4)
    assert str(uuid.UUID(v6.removeprefix(f"{prefix}-"))) == v6.removeprefix(f"{prefix}-")
    assert route_name(prefix, "node-uid", version=4) == route_name(prefix, "node-uid", version=4)


async def test_listing_reads_only_this_clusters_routes(fake: FakeCompute, make: Any) -> None:
    """Another cluster whose name starts like ours, another network, a person's route and
    a route without the CCM's description are never listed; the CCM's own route is."""
    a = fake.add_instance("their-node")
    hop = fake.add_instance("node-c")
    fake.add_route(
        f"kubernetes-{UID_A}", "10.244.1.0/24", next_hop_instance=hop, description="k8s-node-route"
    )
    fake.add_route(
        f"kubernetes-b-{UID_B}", "10.245.1.0/24", next_hop_instance=a, description="k8s-node-route"
    )
    fake.add_route(
        f"other-{UID_B}", "10.246.1.0/24", next_hop_instance=a, description="k8s-node-route"
    )
    fake.add_route(
        f"kubernetes-{UID_B}",
        "10.247.1.0/24",
        next_hop_instance=a,
        description="k8s-node-route",
        network=fake.network_url.replace("/default", "/other-net"),
    )
    fake.add_route("kubernetes-vpn", "10.248.0.0/16", next_hop_ip="10.128.0.9")
    fake.add_route(
        f"kubernetes-{uuid.uuid4()}", "10.249.1.0/24", next_hop_instance=a, description="by hand"
    )

    listed = await make().list_routes()

    assert [(r.name, r.target_node, r.destination_cidr) for r in listed] == [
        (f"kubernetes-{UID_A}", "node-c", "10.244.1.0/24")
    ]
    assert fake.route_requests("GET", ROUTES) == 1  # one filtered request, not a full read


async def test_a_route_the_ccm_made_is_adopted_without_a_write(
    fake: FakeCompute, make: Any
) -> None:
    """The CCM's route to the Node's instance counts as the route: no insert."""
    hop = fake.add_instance("node-c")
    fake.add_route(
        f"kubernetes-{UID_A}", "10.244.1.0/24", next_hop_instance=hop, description="k8s-node-route"
    )
    provider = make()
    await provider.create_route(route("node-c", "10.244.1.0/24"), name_hint=UID_A)
    assert fake.route_requests("POST", ROUTES) == 0
    assert fake.route_requests("GET", "/instances") == 0


async def test_every_page_is_read(fake: FakeCompute, make: Any) -> None:
    """A listing follows nextPageToken to the end, one paced request a page."""
    fake.page_size = 2
    hop = fake.add_instance("node-c")
    for index in range(5):
        fake.add_route(
            f"kubernetes-{uuid.uuid4()}",
            f"10.244.{index}.0/24",
            next_hop_instance=hop,
            description="k8s-node-route",
        )
    provider = make()
    assert len(await provider.list_routes()) == 5
    assert fake.route_requests("GET", ROUTES) == 3


async def test_created_route_has_the_ccms_fields(fake: FakeCompute, make: Any) -> None:
    """Description, priority, network and the instance's full URL, as the CCM writes them."""
    await make().create_route(route("node-b", "10.244.7.0/24"), name_hint=UID_B)
    made = fake.routes[f"kubernetes-{UID_B}"]
    assert made["description"] == "k8s-node-route"
    assert made["priority"] == 1000
    assert made["network"] == fake.network_url
    assert made["nextHopInstance"].endswith(
        "/projects/fake-project/zones/us-central1-c/instances/node-b"
    )
    assert "tags" not in made  # the CCM's routes apply to the whole network


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


# -- instance look-ups -----------------------------------------------------------------------


async def test_an_instance_is_looked_up_once(fake: FakeCompute, make: Any) -> None:
    """One aggregatedList per unknown instance, whatever its zone; cached after."""
    provider = make()
    await provider.create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    await provider.create_route(route("node-a", "fd00:10:244:1::/64"), name_hint=UID_A)
    await provider.create_route(route("node-b", "10.244.2.0/24"), name_hint=UID_B)
    assert fake.route_requests("GET", "/aggregated/instances") == 2
    assert fake.route_requests("GET", "/zones/") == 0


async def test_concurrent_creates_share_one_look_up(fake: FakeCompute, make: Any) -> None:
    """Both families of a new Node created at once cost one look-up, not two."""
    provider = make()
    await asyncio.gather(
        provider.create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A),
        provider.create_route(route("node-a", "fd00:10:244:1::/64"), name_hint=UID_A),
    )
    assert fake.route_requests("GET", "/aggregated/instances") == 1


async def test_a_listing_teaches_instances_for_free(fake: FakeCompute, make: Any) -> None:
    """A fresh provider that listed a Node's route looks nothing up to route it again."""
    await make().create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    before = fake.route_requests("GET", "/instances")
    fresh = make()
    await fresh.list_routes()
    await fresh.create_route(route("node-a", "fd00:10:244:1::/64"), name_hint=UID_A)
    assert fake.route_requests("GET", "/instances") == before


async def test_a_single_zone_cluster_gets_the_instance_in_its_zone(
    fake: FakeCompute, make: Any
) -> None:
    """With local-zone and neither multizone nor regional: the zone alone is asked (the CCM
    asks it too); a Node name with a domain is its instance's name."""
    provider = make(**{"local-zone": "us-central1-c"})
    await provider.create_route(
        route("node-b.c.fake-project.internal", "10.244.2.0/24"), name_hint=UID_B
    )
    await provider.create_route(route("node-b", "fd00:10:244:2::/64"), name_hint=UID_B)
    assert (
        fake.requests.count("GET /compute/v1/projects/fake-project/zones/us-central1-c/instances")
        == 1
    )
    assert fake.route_requests("GET", "/aggregated") == 0


async def test_an_unknown_instance_is_transient_and_not_cached(
    fake: FakeCompute, make: Any
) -> None:
    """A Node whose instance the API does not show yet fails, and is looked up again later."""
    provider = make()
    with pytest.raises(ProviderError, match="no instance named 'node-new'"):
        await provider.create_route(route("node-new", "10.244.9.0/24"), name_hint=UID_A)
    fake.add_instance("node-new")
    await provider.create_route(route("node-new", "10.244.9.0/24"), name_hint=UID_A)
    assert fake.route_requests("GET", "/aggregated/instances") == 2


async def test_a_deleted_instance_is_forgotten(fake: FakeCompute, make: Any) -> None:
    """An instance re-created in another zone is found anew after its old URL failed."""
    provider = make()
    await provider.create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    fake.delete_instance("node-a")
    fake.add_instance("node-a", zone="us-central1-f")
    with pytest.raises(ProviderError, match="RESOURCE_NOT_FOUND"):
        await provider.create_route(route("node-a", "fd00:10:244:1::/64"), name_hint=UID_A)
    await provider.create_route(route("node-a", "fd00:10:244:1::/64"), name_hint=UID_A)
    v6 = fake.routes[route_name("kubernetes", UID_A, version=6)]
    assert "/zones/us-central1-f/" in v6["nextHopInstance"]


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


# -- nothing is sent once cancelled ----------------------------------------------------------


async def test_a_request_cancelled_before_it_went_out_is_never_sent(fake: FakeCompute) -> None:
    """Cancelled while its worker thread was about to send: the SDK's request is refused."""
    cloud = GceCloud(parse_options(options(fake)), budget=None, credentials=credentials())
    started, release, finished = threading.Event(), threading.Event(), threading.Event()
    outcome: list[BaseException] = []

    def insert(clients: Any) -> Any:
        started.set()
        release.wait(10)
        try:
            return clients.routes.insert_unary(
                project=fake.project,
                route_resource=compute_v1.Route(
                    name="late", dest_range="10.244.1.0/24", network=fake.network_url
                ),
                retry=None,
            )
        except BaseException as exc:
            outcome.append(exc)
            raise
        finally:
            finished.set()

    task = asyncio.create_task(cloud.request("routes.insert", insert))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    await asyncio.to_thread(finished.wait, 10)
    await cloud.aclose()
    assert fake.route_requests("POST") == 0
    assert [type(e).__name__ for e in outcome] == ["NotSentError"]


async def test_a_request_waiting_for_the_budget_is_never_sent(fake: FakeCompute) -> None:
    """Cancelled while the budget held it back: nothing reaches the API."""
    gate = asyncio.Event()

    class Held:
        async def spend(self, operation: str = "request") -> None:
            await gate.wait()

    provider = GceProvider(
        cluster_name="kubernetes", options=options(fake), budget=Held(), credentials=credentials()
    )
    task = asyncio.create_task(
        provider.create_route(route("node-a", "10.244.1.0/24"), name_hint=UID_A)
    )
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await provider.aclose()
    assert fake.requests == []


async def test_one_job_sends_one_request(fake: FakeCompute) -> None:
    """A second request inside one paced job (an SDK retry, a page) is refused, not sent."""
    budget = CountingBudget(lambda: len(fake.requests))
    cloud = GceCloud(parse_options(options(fake)), budget=budget, credentials=credentials())

    def twice(clients: Any) -> Any:
        clients.routes.get(project=fake.project, route="a", retry=None)

    fake.add_route("a", "10.0.0.0/24", next_hop_ip="10.128.0.9")

    def both(clients: Any) -> Any:
        twice(clients)
        return twice(clients)

    with pytest.raises(ProviderError, match="second request"):
        await cloud.request("routes.get", both)
    await cloud.aclose()
    assert budget.spent == 1
    assert len(fake.requests) == 1


# -- credentials as the CCM finds them -------------------------------------------------------


FIND_CREDENTIALS = """
import asyncio, sys
from routectl.model import Route
from routectl_gce import GceProvider

async def main():
    provider = GceProvider(cluster_name="kubernetes", options={"cloud-config": sys.argv[1]})
    route = Route(target_node="node-a", destination_cidr="10.244.1.0/24")
    await provider.create_route(route, name_hint=sys.argv[2])
    print(*[r.target_node for r in await provider.list_routes()])
    await provider.aclose()

asyncio.run(main())
"""


async def run_with_credentials_of_a_vm(fake: FakeCompute, tmp_path: Any, conf: str) -> str:
    """Run FIND_CREDENTIALS in a process whose metadata server is the fake; its output."""
    path = tmp_path / "gce.conf"
    path.write_text(conf)
    host = fake.url.removeprefix("http://")
    environ = {
        **os.environ,
        "GCE_METADATA_HOST": host,
        "GCE_METADATA_IP": host,
        "CLOUDSDK_CONFIG": str(tmp_path),  # no gcloud credentials
    }
    environ.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        FIND_CREDENTIALS,
        str(path),
        UID_A,
        env=environ,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()[-2000:]
    return out.decode()


async def test_the_vms_service_account_is_used(fake: FakeCompute, tmp_path: Any) -> None:
    """Without injected credentials a process finds what the CCM finds on a VM: the
    metadata server's service account and project (gce.conf names neither); its token goes
    with every request. (A process of its own: google.auth reads GCE_METADATA_HOST once.)"""
    conf = f"[Global]\nnetwork-name = default\napi-endpoint = {fake.url}/compute/v1/\n"
    out = await run_with_credentials_of_a_vm(fake, tmp_path, conf)
    assert out.split() == ["node-a"]
    assert set(fake.tokens) == {"token-1"}
    assert sum(1 for r in fake.metadata_requests if "/default/token" in r) == 1
    assert "/computeMetadata/v1/project/project-id" in fake.metadata_requests


async def test_a_token_url_is_asked_as_the_ccm_asks_it(fake: FakeCompute, tmp_path: Any) -> None:
    """token-url: token-body is POSTed with the VM account's token (AltTokenSource), and
    the token it answers goes with every Compute request."""
    conf = (
        "[Global]\n"
        f"project-id = {fake.project}\n"
        "network-name = default\n"
        f"api-endpoint = {fake.url}/compute/v1/\n"
        f"token-url = {fake.url}/alt-token\n"
        'token-body = "{\\"cluster\\": \\"c\\"}"\n'
    )
    out = await run_with_credentials_of_a_vm(fake, tmp_path, conf)
    assert out.split() == ["node-a"]
    assert fake.alt_token_calls == [("Bearer token-1", '{"cluster": "c"}')]
    assert set(fake.tokens) == {"alt-token-1"}

"""The Compute boundary against the fake Compute API: requests that must never leave once
their call is cancelled, one request a job, and credentials found as the CCM finds them."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
from typing import Any

import pytest
from gce_scene import UID_A, credentials, options, route
from google.cloud import compute_v1
from routectl_gce import GceProvider
from routectl_gce.cloud import GceCloud
from routectl_gce.options import parse_options
from routectl_gce.testing import FakeCompute

from routectl.errors import (
    ProviderError,
)
from routectl.testing.contract_budget import CountingBudget

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


async def test_an_unreachable_compute_api_is_named_with_its_host(fake: FakeCompute) -> None:
    """Not only "TransportError" or "ConnectionError": the line says where and why."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        provider = GceProvider(
            cluster_name="c",
            options=options(fake, **{"api-endpoint": f"http://127.0.0.1:{port}"}),
            credentials=credentials(),
        )
        try:
            with pytest.raises(
                ProviderError, match=rf"GCE routes.list: \w+Error: .*127\.0\.0\.1.*{port}"
            ):
                await provider.list_routes()
        finally:
            await provider.aclose()

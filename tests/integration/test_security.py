"""Security properties: credentials never leak; the probe server binds where told, GET only.

The leak tests run routectl against an API server that requires a known bearer token, with
cloud tokens in the environment, provoke every kind of failure (401 and 403 from the API
server, cloud errors, FailedToCreateRoute Events, a lost lease), and then search everything
routectl produced (every log record at DEBUG, libraries included; /metrics; /readyz; every
Event; every exception message and its chain) for the tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import traceback
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import prometheus_client
import pytest

from routectl.errors import KubeError, ProviderError, ProviderTerminalError
from routectl.kube import KubeClient
from routectl.model import Route
from routectl.observe.metrics import Metrics
from routectl.observe.probes import ProbeServer
from routectl.process.wiring import Sources, build_service, load_provider
from routectl.testing import FakeCloud
from routectl.testing.cloud import Fault
from routectl_sim.apiserver import FakeApiServer
from tests.integration.conftest import Cluster, Running, eventually, node_object, settings

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

KUBE_TOKEN = "s3cr3t-kube-token-5f1c9e07d2"  # noqa: S105 -- the known token the test hunts
CLOUD_TOKEN = "hcl-s3cr3t-cloud-token-8a2b4d6f"  # noqa: S105 -- the known token the test hunts
AWS_SECRET = "aws-s3cr3t-access-key-0c7e5a93"  # noqa: S105 -- the known token the test hunts
SECRETS = (KUBE_TOKEN, CLOUD_TOKEN, AWS_SECRET)
PROBED_PATHS = ("/metrics", "/healthz", "/readyz")


def exception_texts(exc: BaseException | None) -> Iterator[str]:
    """str, repr and traceback of ``exc`` and of every exception chained to it."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield str(exc)
        yield repr(exc)
        yield "".join(traceback.format_exception(exc))
        exc = exc.__cause__ or exc.__context__


def record_texts(caplog: pytest.LogCaptureFixture) -> Iterator[str]:
    """Every captured record as a handler could render it: message, args, traceback."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    for record in caplog.records:
        yield formatter.format(record)
        yield repr(record.args)
        if record.exc_info:
            yield from exception_texts(record.exc_info[1])


async def served(port: int) -> list[str]:
    """The bodies of /metrics, /healthz and /readyz on 127.0.0.1:``port``."""
    async with aiohttp.ClientSession() as http:
        bodies = []
        for path in PROBED_PATHS:
            async with http.get(f"http://127.0.0.1:{port}{path}") as response:
                bodies.append(await response.text())
        return bodies


async def failed_calls(kube: KubeClient) -> list[BaseException]:
    """Each API call routectl makes, made once more, for the exceptions it raises now."""
    calls = [
        kube.list_nodes(),
        kube.patch_node_status("n1", {"status": {}}),
        kube.create_event({"metadata": {"namespace": "default"}}),
        kube.get_lease("kube-system", "routectl"),
        kube.create_lease("kube-system", {"metadata": {"name": "x"}}),
        kube.replace_lease("kube-system", {"metadata": {"name": "routectl"}}),
    ]
    errors: list[BaseException] = []
    for call in calls:
        try:
            await call
        except KubeError as exc:
            errors.append(exc)
    try:
        async for _ in kube.watch_nodes(resource_version="1", timeout_seconds=1):
            pass
    except KubeError as exc:
        errors.append(exc)
    return errors


def assert_no_secret(texts: list[str]) -> None:
    """No text contains any of the known secrets (and the texts are not empty)."""
    assert len(texts) > 50, "too little was captured to prove anything"
    for secret in SECRETS:
        leaks = [t for t in texts if secret in t]
        assert not leaks, f"{secret} leaked: {leaks[0][:300]}"


@pytest.fixture
def secrets_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cloud credentials in the environment, as the chart passes them from a Secret."""
    monkeypatch.setenv("HCLOUD_TOKEN", CLOUD_TOKEN)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)


@pytest.fixture
async def secured(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> AsyncIterator[Cluster]:
    """A cluster whose API server requires KUBE_TOKEN, with every logger captured at DEBUG."""
    for name in ("", "aiohttp", "kubernetes_asyncio", "asyncio", "routectl"):
        caplog.set_level(logging.DEBUG, logger=name or None)
    async with FakeApiServer(token=KUBE_TOKEN) as server:
        server.kubeconfig(tmp_path / "kubeconfig")
        assert KUBE_TOKEN in (tmp_path / "kubeconfig").read_text()
        cluster = Cluster(server=server, cloud=FakeCloud(), kubeconfig=tmp_path / "kubeconfig")
        yield cluster
        for running in cluster.running:
            running.task.cancel()
            await asyncio.gather(running.task, return_exceptions=True)
            await running.kube.aclose()


@pytest.mark.usefixtures("secrets_in_environment")
async def test_tokens_never_appear_in_logs_metrics_events_or_errors(
    secured: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Through 403s, cloud failures, FailedToCreateRoute, 401s and a lost lease, no token
    appears in any log record, metric, probe answer, Event or exception message."""
    cluster, server = secured, secured.server
    server.create_node(node_object("n1", "10.244.1.0/24"))
    server.create_node(node_object("stray", "192.168.7.0/24"))
    cluster.cloud.fail_next("create", Fault(error=ProviderTerminalError("quota reached")))
    cluster.cloud.fail_next("create", Fault(error=ProviderError("injected 503")), times=3)
    server.forbid(verb="patch", resource="nodes/status")
    server.forbid(verb="create", resource="events")
    running = await cluster.start(leader_elect=True)
    probes = ProbeServer(registry=running.service.metrics.registry, ready=running.service.ready)
    await probes.start("127.0.0.1:0")
    texts: list[str] = []
    try:
        await eventually(lambda: running.service.leading)
        await asyncio.sleep(30)
        server.allow(verb="create", resource="events")
        cluster.cloud.fail_next("create", Fault(error=ProviderTerminalError("denied")), times=2)
        server.create_node(node_object("n2", "10.244.2.0/24"))
        await eventually(lambda: any(e["reason"] == "FailedToCreateRoute" for e in server.events()))
        server.allow(verb="patch", resource="nodes/status")
        await eventually(
            lambda: cluster.routes() == {("n1", "10.244.1.0/24"), ("n2", "10.244.2.0/24")}
        )
        texts += await served(probes.port)
        server._auth.token = "rotated-away"  # noqa: S105 -- the server stops accepting KUBE_TOKEN
        server.drop_watches()
        assert await asyncio.wait_for(running.task, 60) == 1  # the lease was lost
        texts += await served(probes.port)
        for exc in await failed_calls(running.kube):
            texts += exception_texts(exc)
    finally:
        await probes.aclose()
    assert [r.status for r in server.requests if r.status == 401]
    assert [r.status for r in server.requests if r.status == 403]
    texts += record_texts(caplog)
    texts.append(running.service.informer.last_error)
    texts.append(prometheus_client.generate_latest(running.service.metrics.registry).decode())
    texts += [json.dumps(event) for event in server.events()]
    joined = "\n".join(texts)
    for expected in ("401", "403", "FailedToCreateRoute", "Leadership lost", "quota reached"):
        assert expected in joined, f"the scenario did not provoke {expected}"
    assert_no_secret(texts)


@pytest.mark.usefixtures("secrets_in_environment")
async def test_cloud_token_never_leaks_through_a_real_provider(
    secured: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """With the hcloud plugin and its token in HCLOUD_TOKEN, a terminal IPv6 refusal, a 403
    and a rotated (401) token leave the token in no log, Event, metric or error."""
    pytest.importorskip("routectl_hcloud")
    from routectl_hcloud.testing import FakeHcloud  # noqa: PLC0415 -- only when installed

    server = secured.server
    async with FakeHcloud(token=CLOUD_TOKEN, action_seconds=1.0) as cloud:
        network = cloud.add_network("k8s")
        cloud.add_server("n1", network=network)
        cloud.add_server("n2", network=network)
        config = settings(
            kubeconfig=str(secured.kubeconfig),
            provider="hcloud",
            provider_options={"network": "k8s", "endpoint": cloud.url},
            leader_elect=True,
        )
        metrics = Metrics.create()
        kube = await KubeClient.connect(kubeconfig=config.kubeconfig)
        service = build_service(
            config,
            kube=kube,
            provider=load_provider(config, metrics=metrics, sources=Sources.system()),
            metrics=metrics,
            identity="a",
            sources=Sources.system(),
        )
        running = Running(
            service=service,
            task=asyncio.create_task(service.run()),
            provider=service.provider,
            kube=kube,
        )
        secured.running.append(running)
        server.create_node(node_object("n1", "10.244.1.0/24", "fd00:10:244:1::/64"))
        await eventually(lambda: bool(network.routes))
        cloud.fail_next(403, "forbidden", "insufficient permissions", method="POST")
        server.create_node(node_object("n2", "10.244.2.0/24"))
        await asyncio.sleep(20)
        cloud.token = "rotated-away"  # noqa: S105 -- the cloud stops accepting CLOUD_TOKEN
        server.create_node(node_object("n3", "10.244.3.0/24"))
        await asyncio.sleep(60)
        texts = list(record_texts(caplog))
        texts.append(prometheus_client.generate_latest(metrics.registry).decode())
        texts += [json.dumps(event) for event in server.events()]
        stale = Route(target_node="n1", destination_cidr="10.244.1.0/24")
        provider = service.provider
        for call in (provider.list_routes(), provider.delete_route(stale)):
            try:
                await call
            except ProviderError as exc:
                texts += exception_texts(exc)
        service.stopping.set()
        assert await asyncio.wait_for(running.task, 60) == 0
        await provider.aclose()
    joined = "\n".join(texts)
    for expected in ("do not route IPv6", "unauthorized", "FailedToCreateRoute"):
        assert expected in joined, f"the scenario did not provoke {expected}"
    assert_no_secret(texts)


# -- The probe and metrics server ------------------------------------------------------


@contextlib.asynccontextmanager
async def probe_server(address: str) -> AsyncIterator[ProbeServer]:
    """A ProbeServer on ``address`` that always says ready."""
    server = ProbeServer(registry=Metrics.create().registry, ready=lambda: (True, "ok"))
    await server.start(address)
    try:
        yield server
    finally:
        await server.aclose()


async def reachable(host: str, port: int) -> bool:
    """Whether GET /healthz on ``host:port`` answers."""
    url = f"http://{host}:{port}/healthz"
    try:
        async with aiohttp.ClientSession() as http, http.get(url) as response:
            return response.status == 200
    except aiohttp.ClientConnectionError:
        return False


def bound_hosts(server: ProbeServer) -> set[str]:
    """The hosts the server's listening sockets are bound to."""
    return {str(address[0]) for address in server._runner.addresses}


def can_bind(host: str, family: socket.AddressFamily = socket.AF_INET) -> bool:
    """Whether this machine has the local address ``host``."""
    with socket.socket(family) as probe:
        try:
            probe.bind((host, 0))
        except OSError:
            return False
    return True


def primary_address() -> str | None:
    """The host's own non-loopback IPv4 address (the one its default route uses), if any."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: nothing is sent on a UDP connect
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") else address


async def test_probe_server_binds_only_the_configured_loopback_address() -> None:
    """Bound to 127.0.0.1 it listens there only: not on 127.0.0.2 nor on the host's address."""
    async with probe_server("127.0.0.1:0") as server:
        assert bound_hosts(server) == {"127.0.0.1"}
        assert await reachable("127.0.0.1", server.port)
        assert not await reachable("127.0.0.2", server.port)
        own = primary_address()
        if own is not None:
            assert not await reachable(own, server.port)


async def test_probe_server_binds_another_address_when_told() -> None:
    """Bound to 127.0.0.2 it answers there and not on 127.0.0.1."""
    if not can_bind("127.0.0.2"):
        pytest.skip("127.0.0.2 is not a local address here")
    async with probe_server("127.0.0.2:0") as server:
        assert bound_hosts(server) == {"127.0.0.2"}
        assert await reachable("127.0.0.2", server.port)
        assert not await reachable("127.0.0.1", server.port)


async def test_probe_server_binds_ipv6_loopback_in_brackets() -> None:
    """``[::1]:port`` binds the IPv6 loopback only."""
    if not can_bind("::1", socket.AF_INET6):
        pytest.skip("no IPv6 loopback here")
    async with probe_server("[::1]:0") as server:
        assert bound_hosts(server) == {"::1"}
        assert await reachable("[::1]", server.port)
        assert not await reachable("127.0.0.1", server.port)


async def test_probe_server_serves_only_get() -> None:
    """Every path answers 405 to POST, PUT, PATCH, DELETE and OPTIONS; GET and HEAD work; an
    unknown path is 404 to every method."""
    async with probe_server("127.0.0.1:0") as server, aiohttp.ClientSession() as http:
        base = f"http://127.0.0.1:{server.port}"
        for path in PROBED_PATHS:
            for method in ("POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
                async with http.request(method, base + path, data=b"x") as response:
                    assert response.status == 405, (method, path)
                    assert response.headers["Allow"] in {"GET,HEAD", "GET, HEAD", "HEAD,GET"}
            for method in ("GET", "HEAD"):
                async with http.request(method, base + path) as response:
                    assert response.status == 200, (method, path)
        for method in ("GET", "POST", "DELETE"):
            async with http.request(method, f"{base}/debug/pprof") as response:
                assert response.status == 404

"""Bad input, end to end: each row of docs/operations.md's table (real HTTP, loop time).

Every test checks the same promise: a clear log line and an Event (or an exit code), and
the process keeps serving. Pod CIDRs the API server refuses (malformed, two of a family)
are also fed straight into the service's NodeStore, the way they would arrive if a server
let them through.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import re
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from aiohttp import StreamReader, web

from routectl.cli.main import build_parser, main, settings_from_args
from routectl.cloud.gate import CloudGate
from routectl.errors import ConfigError, KubeError, ProviderTerminalError
from routectl.kube import KubeClient
from routectl.kube.stream import lines as _lines
from routectl.model import NodeAddress, NodeView, Route
from routectl.testing import FakeCloud
from routectl_sim.apiserver import FakeApiServer
from routectl_sim.apiserver.status import ApiError
from tests.integration.conftest import CLUSTER, Cluster, Running, eventually, node_object

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

MIB = 1024 * 1024
BACKOFF_CAP = 8.0  # the integration settings' --retry-backoff-cap


def reasons(cluster: Cluster, reason: str) -> list[dict[str, Any]]:
    """The Events of ``reason`` recorded on the fake API server."""
    return [e for e in cluster.server.events() if e["reason"] == reason]


def logged(caplog: pytest.LogCaptureFixture, text: str, level: int = logging.WARNING) -> list[str]:
    """Messages at ``level`` or above that contain ``text``."""
    return [r.getMessage() for r in caplog.records if r.levelno >= level and text in r.getMessage()]


def view(name: str, *cidrs: str) -> NodeView:
    """A NodeView as the informer would store it."""
    return NodeView(
        name=name,
        uid=f"uid-{name}",
        pod_cidrs=cidrs,
        addresses=(NodeAddress(type="InternalIP", address="10.0.0.9"),),
    )


def inject(running: Running, node: NodeView) -> None:
    """Put ``node`` into the service's store, as if the informer saw it, and ask for a sync."""
    running.service.store.upsert(node)
    running.service.queue.request()


async def still_serving(cluster: Cluster, running: Running, name: str, cidr: str) -> None:
    """The service is alive and ready, and a healthy Node added now still gets its route."""
    assert not running.task.done()
    cluster.server.create_node(node_object(name, cidr))
    await eventually(lambda: (name, cidr) in cluster.routes())
    await eventually(lambda: running.service.ready()[0])


def huge_node(name: str, cidr: str, *, size: int) -> dict[str, Any]:
    """A Node of about ``size`` bytes: big annotations and a long image list, like a busy node."""
    node = node_object(name, cidr)
    node["metadata"]["annotations"] = {
        f"example.com/note-{i}": "x" * 10_000 for i in range(size // 10_050)
    }
    node["status"]["images"] = [
        {"names": [f"registry.example.com/team/image-{i}@sha256:{'0' * 64}"], "sizeBytes": 1}
        for i in range(500)
    ]
    return node


# -- Pod CIDRs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cidrs",
    [
        pytest.param(["10.244.1.0/33"], id="prefix-too-long"),
        pytest.param(["banana"], id="not-an-address"),
        pytest.param(
            ["10.244.1.0"],
            id="no-prefix",
        ),
        pytest.param(["10.244.1.0/24", "10.244.1.0/24"], id="duplicate"),
        pytest.param(["10.244.1.0/24", "10.244.2.0/24"], id="two-of-one-family"),
    ],
)
async def test_api_server_refuses_malformed_and_duplicate_pod_cidrs(cidrs: list[str]) -> None:
    """The API server itself refuses such Nodes with 422, so routectl can only meet them in a
    store."""
    async with FakeApiServer() as server:
        node = node_object("n1")
        node["spec"] = {"podCIDR": cidrs[0], "podCIDRs": cidrs}
        with pytest.raises(ApiError) as info:
            server.create_node(node)
        assert info.value.code == 422


async def test_malformed_pod_cidr_warns_and_gets_no_route(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A pod CIDR that does not parse gets an InvalidPodCIDR warning, Event and metric, no
    route, and nothing else stops."""
    running = await cluster.start()
    await eventually(lambda: running.service.ready()[0])
    inject(running, view("bad", "10.244.300.0/24"))
    await eventually(lambda: bool(reasons(cluster, "InvalidPodCIDR")))
    (event,) = reasons(cluster, "InvalidPodCIDR")
    assert event["type"] == "Warning"
    assert event["involvedObject"]["name"] == "bad"
    assert "'10.244.300.0/24' of node bad does not parse" in event["message"]
    assert logged(caplog, "InvalidPodCIDR: pod CIDR '10.244.300.0/24' of node bad")
    assert running.service.metrics.problems.labels(reason="InvalidPodCIDR")._value.get() == 1
    assert cluster.cloud.count("create") == 0
    await still_serving(cluster, running, "good", "10.244.2.0/24")
    assert len(reasons(cluster, "InvalidPodCIDR")) == 1, "reported once, not once per sync"


async def test_pod_cidr_outside_cluster_cidr_is_misconfigured(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A pod CIDR outside --cluster-cidr gets ClusterCIDRMisconfigured (log, Event, metric),
    no route, and NetworkUnavailable=True/NoRouteCreated."""
    cluster.server.create_node(node_object("stray", "192.168.7.0/24"))
    running = await cluster.start()
    await eventually(lambda: cluster.condition("stray") == ("True", "NoRouteCreated"))
    (event,) = reasons(cluster, "ClusterCIDRMisconfigured")
    assert event["involvedObject"]["name"] == "stray"
    assert "outside --cluster-cidr 10.244.0.0/16,fd00:10:244::/56" in event["message"]
    assert logged(caplog, "ClusterCIDRMisconfigured: pod CIDR 192.168.7.0/24 of node stray")
    problems = running.service.metrics.problems
    assert problems.labels(reason="ClusterCIDRMisconfigured")._value.get() == 1
    assert cluster.routes() == set()
    await still_serving(cluster, running, "good", "10.244.2.0/24")


async def test_pod_cidr_listed_twice_on_a_node_makes_one_route(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A pod CIDR listed twice on one Node makes one route and a DuplicatePodCIDR warning."""
    running = await cluster.start()
    await eventually(lambda: running.service.ready()[0])
    inject(running, view("twice", "10.244.3.0/24", "10.244.3.0/24"))
    await eventually(lambda: ("twice", "10.244.3.0/24") in cluster.routes())
    await asyncio.sleep(30)
    assert cluster.cloud.count("create") == 1
    (event,) = reasons(cluster, "DuplicatePodCIDR")
    assert event["involvedObject"]["name"] == "twice"
    assert logged(caplog, "DuplicatePodCIDR: pod CIDR 10.244.3.0/24 is listed twice")
    await still_serving(cluster, running, "good", "10.244.2.0/24")


async def test_cidr_claimed_by_two_nodes_goes_to_the_first_name_without_flapping(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Two Nodes with one pod CIDR: the name that sorts first gets the route, every sync,
    and the other gets one PodCIDRConflict Event and NoRouteCreated."""
    cluster.server.create_node(node_object("node-b", "10.244.5.0/24", address="10.0.0.2"))
    cluster.server.create_node(node_object("node-a", "10.244.5.0/24", address="10.0.0.1"))
    running = await cluster.start(route_resync_period=600.0)
    await eventually(lambda: cluster.routes() == {("node-a", "10.244.5.0/24")})
    await eventually(lambda: cluster.condition("node-b") == ("True", "NoRouteCreated"))
    await eventually(lambda: cluster.condition("node-a") == ("False", "RouteCreated"))
    await asyncio.sleep(3 * 800)  # three resyncs with fresh listings
    assert cluster.routes() == {("node-a", "10.244.5.0/24")}
    assert (cluster.cloud.count("create"), cluster.cloud.count("delete")) == (1, 0)
    (event,) = reasons(cluster, "PodCIDRConflict")
    assert event["involvedObject"]["name"] == "node-b"
    assert "also assigned to node node-a, which gets it" in event["message"]
    assert len(logged(caplog, "PodCIDRConflict")) == 1
    await still_serving(cluster, running, "good", "10.244.2.0/24")


class IPv4OnlyCloud(FakeCloud):
    """A cloud whose networks do not route IPv6 (like Hetzner's): such creates are terminal."""

    def create(self, cluster: str, route: Route, name_hint: str) -> Route:
        """Refuse IPv6 destinations, as the network would."""
        if ":" in route.destination_cidr:
            raise ProviderTerminalError(
                f"route to {route.destination_cidr}: this network does not route IPv6"
            )
        return super().create(cluster, route, name_hint)


async def test_family_the_provider_cannot_route_fails_loudly_and_retries_slowly(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """An IPv6 pod CIDR on an IPv4-only cloud: FailedToCreateRoute, NoRouteCreated, the IPv4
    route is made, and the IPv6 create is retried only at the backoff cap."""
    cluster.cloud = IPv4OnlyCloud()
    cluster.server.create_node(node_object("dual", "10.244.4.0/24", "fd00:10:244:4::/64"))
    running = await cluster.start()
    await eventually(lambda: ("dual", "10.244.4.0/24") in cluster.routes())
    await eventually(lambda: cluster.condition("dual") == ("True", "NoRouteCreated"))
    failed = reasons(cluster, "FailedToCreateRoute")
    assert failed
    assert "fd00:10:244:4::/64" in failed[0]["message"]
    assert "does not route IPv6" in failed[0]["message"]
    assert logged(caplog, "Could not create route", logging.ERROR)
    start = cluster.cloud.count("create", "terminal")
    await asyncio.sleep(10 * BACKOFF_CAP)
    assert cluster.cloud.count("create", "terminal") - start <= 10 + 1
    await still_serving(cluster, running, "v4only", "10.244.6.0/24")


class CloudWithForeignRoutes(FakeCloud):
    """A cloud that also lists routes someone else made, with CIDRs that do not parse."""

    foreign = (
        Route(target_node="n1", destination_cidr="10.244.1.0/99", name="hand-made"),
        Route(target_node="", destination_cidr="not-a-cidr", name="junk"),
    )

    def listing(self, cluster: str) -> list[Route]:
        """The cluster's routes, and the unparsable ones."""
        return [*super().listing(cluster), *self.foreign]


async def test_routes_with_unparsable_cidrs_are_reported_and_never_deleted(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Listed routes whose CIDR does not parse are logged once (UnparsableRouteCIDR), with an
    Event on their Node when they name one, and are never deleted."""
    cluster.cloud = CloudWithForeignRoutes()
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    running = await cluster.start(route_resync_period=600.0)
    await eventually(lambda: ("n1", "10.244.1.0/24") in cluster.routes())
    await asyncio.sleep(2 * 800)
    assert cluster.cloud.count("delete") == 0
    lines = logged(caplog, "UnparsableRouteCIDR")
    assert len(lines) == 2
    assert any("Ignoring route hand-made, unparsable CIDR: '10.244.1.0/99'" in m for m in lines)
    (event,) = reasons(cluster, "UnparsableRouteCIDR")
    assert event["involvedObject"]["name"] == "n1"
    problems = running.service.metrics.problems
    assert problems.labels(reason="UnparsableRouteCIDR")._value.get() == 2
    await still_serving(cluster, running, "good", "10.244.2.0/24")


# -- Huge objects ------------------------------------------------------------------------


async def test_huge_nodes_arrive_through_list_and_watch(cluster: Cluster) -> None:
    """Nodes of about 8 MiB (beyond aiohttp's 4 MiB line limit) are read by the list and by
    the watch, and get their routes."""
    big = huge_node("big-listed", "10.244.1.0/24", size=8 * MIB)
    assert len(json.dumps(big)) > 7.5 * MIB
    cluster.server.create_node(big)
    running = await cluster.start()
    await eventually(lambda: ("big-listed", "10.244.1.0/24") in cluster.routes())
    cluster.server.create_node(huge_node("big-watched", "10.244.2.0/24", size=8 * MIB))
    await eventually(lambda: ("big-watched", "10.244.2.0/24") in cluster.routes())
    await eventually(lambda: cluster.condition("big-watched") == ("False", "RouteCreated"))
    assert running.service.informer.healthy
    assert running.service.metrics.relists.labels(reason="expired")._value.get() == 0
    await still_serving(cluster, running, "small", "10.244.3.0/24")


async def test_watch_event_over_the_cap_is_a_kube_error_not_a_crash(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A watch event over the client's cap makes the informer unhealthy with a clear error
    and back off; the process does not crash."""
    running = await cluster.start()
    running.kube.max_event_bytes = 1 * MIB
    await eventually(lambda: running.service.ready()[0])
    cluster.server.create_node(huge_node("too-big", "10.244.1.0/24", size=2 * MIB))
    await eventually(lambda: not running.service.informer.healthy)
    await asyncio.sleep(120)
    assert not running.task.done()
    ok, why = running.service.ready()
    assert not ok
    assert f"an event is larger than {MIB} bytes" in why
    retries = logged(caplog, "Node informer: watch nodes: an event is larger than")
    assert 3 <= len(retries) <= 12, "backs off instead of spinning"


# -- The API server refuses: RBAC, credentials, reachability ------------------------------


async def test_missing_rbac_for_node_status_logs_and_retries_with_backoff(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Without patch on nodes/status the route is still made, each failed write is logged
    with the 403, and the sync is retried with backoff, not in a loop."""
    cluster.server.forbid(verb="patch", resource="nodes/status")
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    running = await cluster.start()
    await eventually(lambda: ("n1", "10.244.1.0/24") in cluster.routes())
    await asyncio.sleep(120)
    assert cluster.condition("n1") is None
    errors = logged(caplog, "Error updating node n1: patch status of node n1: 403", logging.ERROR)
    assert errors
    assert 'cannot patch resource "nodes/status"' in errors[0]
    patches = [r for r in cluster.server.requests if r.method == "PATCH"]
    assert 3 <= len(patches) <= 30, "backs off instead of spinning"
    assert not running.task.done()
    cluster.server.allow(verb="patch", resource="nodes/status")
    await eventually(lambda: cluster.condition("n1") == ("False", "RouteCreated"), within=30)


async def test_missing_rbac_for_events_is_a_warning_and_routing_goes_on(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Without create on events the Event is lost with a warning; routes and conditions are
    still written."""
    cluster.server.forbid(verb="create", resource="events")
    cluster.server.create_node(node_object("stray", "192.168.7.0/24"))
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    running = await cluster.start()
    await eventually(lambda: cluster.condition("n1") == ("False", "RouteCreated"))
    assert cluster.condition("stray") == ("True", "NoRouteCreated")
    assert logged(caplog, "Could not record event ClusterCIDRMisconfigured: create event: 403")
    assert cluster.server.events() == []
    assert running.service.ready()[0]


async def test_rejected_credentials_are_not_ready_with_a_clear_error(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """A kubeconfig token the API server rejects (401) keeps readiness false with the 401,
    backs off, and makes no cloud call but the one early ListRoutes."""
    async with FakeApiServer(token="the-right-token") as server:  # noqa: S106 -- a test token
        server.kubeconfig(tmp_path / "kubeconfig")
        config = json.loads((tmp_path / "kubeconfig").read_text())
        config["users"][0]["user"]["token"] = "a-wrong-token"  # noqa: S105 -- a test token
        (tmp_path / "kubeconfig").write_text(json.dumps(config))
        cluster = dataclasses.replace(cluster, server=server, kubeconfig=tmp_path / "kubeconfig")
        running = await cluster.start()
        await asyncio.sleep(120)
        ok, why = running.service.ready()
        assert not ok
        assert "list nodes: 401 Unauthorized" in running.service.informer.last_error
        assert why == "informer has not listed Nodes yet"
        lists = [r for r in server.requests if r.path == "/api/v1/nodes"]
        assert 3 <= len(lists) <= 12
        assert logged(caplog, "Node informer: list nodes: 401 Unauthorized")
        assert [call.operation for call in cluster.cloud.calls] == ["list"]
        running.task.cancel()
        await asyncio.gather(running.task, return_exceptions=True)


def free_port() -> int:
    """A TCP port of 127.0.0.1 nothing listens on (now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_unreachable_api_server_at_start_waits_and_recovers(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """With nothing listening at the API server's address the service stays up, not ready,
    backs off, makes no cloud call but the one early ListRoutes, and works once the server
    appears."""
    port = free_port()
    cluster.server.url = f"http://127.0.0.1:{port}"
    cluster.server.kubeconfig(cluster.kubeconfig)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    running = await cluster.start()
    await asyncio.sleep(120)
    assert not running.task.done()
    assert running.service.ready() == (False, "informer has not listed Nodes yet")
    assert "list nodes: API server unreachable" in running.service.informer.last_error
    assert 3 <= len(logged(caplog, "Node informer: list nodes: API server unreachable")) <= 12
    assert [call.operation for call in cluster.cloud.calls] == ["list"]  # the early one only
    runner = web.AppRunner(cluster.server.build_app(), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        await eventually(lambda: cluster.routes() == {("n1", "10.244.1.0/24")}, within=60)
        await eventually(lambda: running.service.ready()[0])
    finally:
        running.task.cancel()
        await asyncio.gather(running.task, return_exceptions=True)
        cluster.server.end_watches()
        await runner.cleanup()


async def test_missing_rbac_for_leases_is_logged_clearly(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Without get on leases a candidate says so at WARNING (with the 403) while it waits."""
    cluster.server.forbid(verb="get", resource="leases")
    running = await cluster.start(leader_elect=True)
    await asyncio.sleep(60)
    assert not running.service.leading
    assert logged(caplog, "403")


# -- Flags and values --------------------------------------------------------------------

REQUIRED = ["--cluster-cidr=10.244.0.0/16", "--provider=fake", "--provider-option=demo=true"]


@pytest.fixture
def never_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make an accepted command line fail the test instead of starting routectl."""

    def refuse(coroutine: Any) -> None:
        coroutine.close()
        raise AssertionError("the command line was accepted")

    monkeypatch.setattr(asyncio, "run", refuse)


def refusal(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``routectl`` prints when it refuses ``args`` with exit code 2."""
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def typed_flags() -> Iterator[tuple[str, str]]:
    """(command, flag) for every flag of ``run`` and ``plan`` that takes a typed value."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    for command in ("run", "plan"):
        sub = commands.choices[command]  # type: ignore[index]
        for action in sub._actions:
            if action.option_strings and (action.type is not None or action.choices):
                yield command, max(action.option_strings, key=len)


@pytest.mark.usefixtures("never_runs")
async def test_every_typed_flag_refuses_a_bad_value_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every typed flag of run and plan, given a value of the wrong type, exits 2 with one
    line naming the flag."""
    flags = list(typed_flags())
    assert len(flags) >= 20
    for command, flag in flags:
        err = refusal([command, *REQUIRED, f"{flag}=not-a-value"], capsys)
        assert flag in err, (flag, err)


@pytest.mark.usefixtures("never_runs")
@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("--cloud-qps=-1", "--cloud-qps"),
        ("--cloud-burst=0", "--cloud-burst"),
        ("--max-concurrent-route-operations=0", "--max-concurrent-route-operations"),
        ("--cloud-call-timeout=0", "--cloud-call-timeout"),
        ("--cloud-max-attempts=0", "--cloud-max-attempts"),
        ("--route-reconciliation-period=0", "--route-reconciliation-period"),
        ("--route-resync-period=0", "--route-resync-period"),
        ("--mass-delete-threshold=1.5", "--mass-delete-threshold"),
        ("--mass-delete-threshold=-0.1", "--mass-delete-threshold"),
        ("--leader-elect-lease-duration=5s", "--leader-elect-lease-duration"),
        ("--leader-elect-retry-period=9s", "--leader-elect-retry-period"),
        ("--cluster-name=", "--cluster-name"),
        ("--metrics-bind-address=8080", "--metrics-bind-address"),
        ("--metrics-bind-address=0.0.0.0:99999", "--metrics-bind-address"),
        ("--feature-gates=CloudControllerManagerWatchBasedRoutesReconciliation=yes", "invalid"),
        ("--feature-gates=Typo=true", "unrecognized feature gate: Typo"),
        ("--provider-option==1", "--provider-option"),
        ("--route-resync-period=-1h", "--route-resync-period"),
        ("--cluster-cidr=10.244.0.0/16,banana", 'failed to parse cidr value:"banana"'),
        ("--cluster-cidr=", 'failed to parse cidr value:""'),
        ("--cluster-cidr=10.0.0.0/8,fd00::/8,10.1.0.0/16", "more than max allowed of 2"),
        ("--no-such-flag=1", "--no-such-flag"),
    ],
)
async def test_out_of_range_values_exit_2_with_one_line(
    value: str, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Values of the right type but out of range are refused at start-up in one line."""
    args = [a for a in REQUIRED if a.split("=")[0] != value.split("=", maxsplit=1)[0]]
    assert needle in refusal(["run", *args, value], capsys)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(
            "--leader-elect-resource-name=",
        ),
        pytest.param(
            "--leader-elect-resource-namespace=",
        ),
        pytest.param(
            "--leader-elect-resource-name=Not_A_Name",
        ),
    ],
)
async def test_lease_names_the_api_server_would_refuse_are_refused_at_start(value: str) -> None:
    """A Lease name or namespace the API server can never accept is a start-up error."""
    with pytest.raises(ConfigError, match=value.split("=", maxsplit=1)[0]):
        settings_from_args(build_parser().parse_args(["run", *REQUIRED, value]))


async def close_what_was_left_open(exc: BaseException) -> None:
    """Close the clients the frames of ``exc``'s traceback still hold (a known leak)."""
    tb = exc.__traceback__
    while tb is not None:
        for value in list(tb.tb_frame.f_locals.values()):
            if isinstance(value, KubeClient | CloudGate):
                await value.aclose()
        tb = tb.tb_next


async def test_unbindable_metrics_address_is_a_one_line_start_up_error(cluster: Cluster) -> None:
    """A --metrics-bind-address already in use is refused as a ConfigError naming the flag."""
    from routectl.cli.app import run  # noqa: PLC0415 -- the function under test

    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    libraries = {
        n: logging.getLogger(n).level for n in ("aiohttp", "kubernetes_asyncio", "asyncio")
    }
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = [
            "run",
            *REQUIRED,
            f"--kubeconfig={cluster.kubeconfig}",
            f"--metrics-bind-address=127.0.0.1:{port}",
            "--leader-elect=false",
        ]
        settings = settings_from_args(build_parser().parse_args(args))
        failure: BaseException | None = None
        try:
            await run(settings)
        except (OSError, ConfigError) as exc:
            failure = exc
            await close_what_was_left_open(exc)
        finally:
            root.handlers[:], root.level = saved
            for name, level in libraries.items():
                logging.getLogger(name).setLevel(level)
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(ValueError, RuntimeError):
                    loop.remove_signal_handler(signum)
    assert isinstance(failure, ConfigError), repr(failure)
    assert "--metrics-bind-address" in str(failure)


class Chunks:
    """A response body that arrives in the given chunks (what ``readany`` returns)."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = list(chunks)

    async def readany(self) -> bytes:
        """The next chunk; nothing at the end."""
        return self.chunks.pop(0) if self.chunks else b""


async def split(*chunks: bytes, limit: int = 10) -> list[bytes]:
    """The lines the watch reads from ``chunks``."""
    return [line async for line in _lines(cast("StreamReader", Chunks(*chunks)), limit=limit)]


async def test_watch_lines_survive_any_chunking_and_respect_the_cap() -> None:
    """Watch events split across chunks, packed into one, or unterminated are read whole;
    a line over the cap is a KubeError."""
    assert await split(b'{"a":', b"1}\n{", b'"b":2}\n') == [b'{"a":1}', b'{"b":2}']
    assert await split(b"1\n2\n3") == [b"1", b"2", b"3"]
    assert await split(b"0123456789\n") == [b"0123456789"]
    for chunks in ([b"0123456789A\n"], [b"01234", b"56789A"], [b"0123456789", b"A\n"]):
        with pytest.raises(KubeError, match="larger than 10 bytes"):
            await split(*chunks)


def cited_tests() -> tuple[str, set[tuple[str, str]], dict[tuple[str, str], str]]:
    """docs/operations.md, the (file, function) pairs it cites, and each cited file's text."""
    root = Path(__file__).resolve().parents[2]
    guide = (root / "docs" / "operations.md").read_text(encoding="utf-8")
    cited = set(re.findall(r"((?:providers/\w+/)?tests/[\w/]+\.py)::(\w+)", guide))
    sources = {key: (root / key[0]).read_text(encoding="utf-8") for key in cited}
    sources[("self", "")] = Path(__file__).read_text(encoding="utf-8")
    return guide, cited, sources


async def test_operations_guide_links_only_tests_that_exist() -> None:
    """Every ``file::function`` docs/operations.md cites exists, and it cites every test here."""
    guide, cited, sources = cited_tests()
    assert len(cited) >= 40
    for path, name in sorted(cited):
        source = sources[(path, name)]
        assert re.search(rf"^(async )?def {name}\(", source, re.MULTILINE), f"{path}::{name}"
    for name in re.findall(r"^async def (test_\w+)\(", sources[("self", "")], re.MULTILINE):
        assert f"test_bad_input.py::{name}" in guide or name.startswith("test_operations"), name


async def test_overlapping_pod_cidrs_warn_on_both_nodes_once(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A /20 and a /24 inside it: both routed, a PodCIDROverlap Warning on each Node, once,
    counted; later syncs say nothing new."""
    cluster.server.create_node(node_object("big", "10.244.0.0/20"))
    running = await cluster.start(route_resync_period=120.0)
    await eventually(lambda: ("big", "10.244.0.0/20") in cluster.routes())
    cluster.server.create_node(node_object("small", "10.244.7.0/24"))
    await eventually(lambda: ("small", "10.244.7.0/24") in cluster.routes())
    await asyncio.sleep(400)  # several resyncs
    events = reasons(cluster, "PodCIDROverlap")
    assert sorted(e["involvedObject"]["name"] for e in events) == ["big", "small"]
    assert all(e["type"] == "Warning" for e in events)
    problems = running.service.metrics.problems
    assert problems.labels(reason="PodCIDROverlap")._value.get() == 2
    assert len(logged(caplog, "PodCIDROverlap")) == 2


async def test_a_vpn_route_around_the_pod_range_is_left_alone_and_reported_once(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """10.244.0.0/15 (a VPN route) covers the /16 pod range: upstream deletes it; routectl
    keeps it and says so once (log, metric)."""
    vpn = Route(target_node="", destination_cidr="10.244.0.0/15", name="vpn", blackhole=True)
    cluster.cloud.add_route(CLUSTER, vpn)
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    running = await cluster.start(route_resync_period=120.0)
    await eventually(lambda: ("n1", "10.244.1.0/24") in cluster.routes())
    await asyncio.sleep(400)
    assert ("", "10.244.0.0/15") in cluster.routes()
    assert cluster.cloud.count("delete") == 0
    (line,) = logged(caplog, "ForeignRouteOverlapsClusterCIDR")
    assert "Route vpn to 10.244.0.0/15 overlaps --cluster-cidr" in line
    problems = running.service.metrics.problems
    assert problems.labels(reason="ForeignRouteOverlapsClusterCIDR")._value.get() == 1


async def test_a_node_never_seen_readable_keeps_its_route_and_is_told_once(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """After a restart, the first Node list serves Node u with ``spec: null`` (impossible
    from its first sighting): routectl never knew it, so u is *unknown*: its route is
    neither deleted (as stale) nor replaced through many syncs, one WARNING and one
    ``UnknownNode`` Event say why, and the other Nodes are routed as usual."""
    caplog.set_level(logging.INFO, logger="routectl.informer")
    cluster.cloud.add_route(CLUSTER, Route(target_node="u", destination_cidr="10.244.9.0/24"))
    cluster.server.create_node(node_object("n1", "10.244.1.0/24"))
    impossible = node_object("u") | {"spec": None}
    impossible["metadata"] = impossible["metadata"] | {"uid": "uid-u", "resourceVersion": "1"}
    cluster.server.list_nodes_next_with(impossible)
    running = await cluster.start(route_resync_period=30.0)
    await eventually(lambda: ("n1", "10.244.1.0/24") in cluster.routes())
    await asyncio.sleep(10 * 30)  # ten periodic syncs, each on a fresh listing
    assert ("u", "10.244.9.0/24") in cluster.routes()
    assert cluster.cloud.count("delete") == 0
    (event,) = reasons(cluster, "UnknownNode")
    assert event["involvedObject"]["name"] == "u"
    assert event["involvedObject"]["uid"] == "uid-u"
    assert "spec is null" in event["message"]
    assert len(logged(caplog, "UnknownNode")) == 1
    assert len(logged(caplog, "it is unknown", logging.INFO)) == 2  # informer's, planner's
    await still_serving(cluster, running, "n2", "10.244.2.0/24")

"""Trust without a resync (issue 22), proved on the real process: a Node is never called
routed while its traffic goes elsewhere."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from routectl.model import Route
from routectl_sim.cloudserver import Scripted
from tests.blackbox.conftest import REPO, Bench, node, until

pytestmark = pytest.mark.blackbox

CIDR = "10.244.1.0/24"


def warnings_about(bench: Bench, name: str, reason: str) -> list[str]:
    """The messages of Warning Events of ``reason`` on Node ``name``."""
    return [
        str(e.get("message", ""))
        for e in bench.apiserver.events()
        if e.get("reason") == reason and (e.get("involvedObject") or {}).get("name") == name
    ]


@pytest.mark.parametrize(
    ("holder", "named"),
    [
        pytest.param(
            {"name": "vpn-appliance", "destination": CIDR, "target": "", "blackhole": False},
            "the route vpn-appliance, which leads to no Node of this cluster",
            id="foreign-holder-named",
        ),
        pytest.param(None, "does not list as its own", id="holder-not-named"),
    ],
)
async def test_already_exists_for_someone_elses_route_leaves_the_node_unrouted(
    bench: Bench, holder: dict[str, object] | None, named: str
) -> None:
    """The cloud answers "already exists" for a route that is not the one asked for (a
    foreign route the listing does not show as ours): the Node stays NoRouteCreated, a
    Warning Event names the holder, and no route is counted as made."""
    body: dict[str, object] = {"message": "destination taken"}
    if holder is not None:
        body["holder"] = holder
    bench.cloud.answer_next(
        "create", Scripted(status=409, body=json.dumps(body).encode()), times=1000
    )
    bench.apiserver.create_node(node("n1", CIDR))
    a = await bench.start(bench.args("--leader-elect=false"))
    await until(lambda: warnings_about(bench, "n1", "FailedToCreateRoute"), within=60)
    (message, *_) = warnings_about(bench, "n1", "FailedToCreateRoute")
    assert named in message, message
    assert "not created" in message
    await until(lambda: bench.condition("n1") == ("True", "NoRouteCreated"), within=30)
    assert bench.routes() == set()
    assert not a.logged("^Traceback")
    assert await a.stop() == 0


@pytest.mark.parametrize(("verbosity", "tracebacks"), [("0", 0), ("1", 1)])
async def test_a_plugin_surprise_is_one_line_and_its_traceback_only_at_v1(
    bench: Bench, verbosity: str, tracebacks: int
) -> None:
    """A listing answered with the wrong shape (the fake plugin does not check it: a bug of
    the plugin) fails syncs until the cloud answers right; at the default verbosity that is
    one ERROR line and no traceback, however often it is retried; at -v=1 the traceback is
    there, once."""
    bench.cloud.answer_next("list", Scripted(status=200, body=b'{"routes": "two"}'), times=10)
    bench.apiserver.create_node(node("n1", CIDR))
    a = await bench.start(bench.args("--leader-elect=false", f"-v={verbosity}"))
    await until(lambda: bench.routes() == {("n1", CIDR)}, within=60)
    assert len(a.logged(r"The provider failed unexpectedly in list \(")) == 1
    assert len(a.logged("^Traceback")) == tracebacks
    assert await a.stop() == 0


async def test_a_missing_kubeconfig_says_so_in_one_line(bench: Bench, tmp_path: Path) -> None:
    """Not "Expected key current-context": the file named does not exist."""
    missing = tmp_path / "nowhere" / "kubeconfig"
    a = await bench.start(bench.args(kubeconfig=str(missing)), wait=False)
    assert await a.exit_code() == 2
    (line,) = [line for line in a.lines if line.strip()]
    assert f"--kubeconfig {missing}: the file does not exist" in line
    assert "current-context" not in line


async def test_a_missing_certificate_exits_before_anything_is_served(
    bench: Bench, tmp_path: Path
) -> None:
    """A --tls-cert-file that does not exist is one line and exit 2; nothing says "Serving"
    first (the plain port is not opened)."""
    cert, key = tmp_path / "missing.crt", tmp_path / "missing.key"
    args = bench.args(secure_port="45678", tls_cert_file=str(cert), tls_private_key_file=str(key))
    a = await bench.start(args, wait=False)
    assert await a.exit_code() == 2
    assert not a.logged("Serving")
    (line,) = [line for line in a.lines if line.strip()]
    assert "--tls-cert-file" in line


async def test_a_create_acknowledged_but_not_carried_out_is_caught_and_written_again(
    bench: Bench,
) -> None:
    """The cloud answers 201 to a create and never makes the route: the listing routectl
    makes soon after its writes (not an hour later, at the resync) shows it missing; the
    write is counted in routectl_unconfirmed_writes_total, said, and made again, and the
    Node ends RouteCreated with its route really there."""
    answer = Scripted(
        status=201, body=b'{"name": "lost"}', headers={"Content-Type": "application/json"}
    )
    bench.cloud.answer_next("create", answer)
    bench.apiserver.create_node(node("n1", CIDR))
    a = await bench.start(bench.args("--leader-elect=false", "--route-resync-period=1h"))
    await until(lambda: bench.routes() == {("n1", CIDR)}, within=60)
    creates = [r for r in bench.cloud.requests if r.operation == "create"]
    assert len(creates) == 2, creates  # the one acknowledged and dropped, and the one made
    assert await a.metric("routectl_unconfirmed_writes_total", operation="create") == 1, a.log()
    assert a.logged("acknowledged the create of the route to 10.244.1.0/24 via node n1")
    await until(lambda: bench.condition("n1") == ("False", "RouteCreated"), within=30)
    assert await a.stop() == 0


async def test_a_node_never_seen_readable_keeps_its_route_and_a_warning_says_why(
    bench: Bench,
) -> None:
    """routectl starts (a restart, say) and its first Node list serves Node u with
    ``spec: null``: it never saw u readable. u's route stays through many syncs on fresh
    listings (it is not planned away as stale), and a Warning Event on u says why, once."""
    bench.cloud.cloud.add_route(
        "kubernetes", Route(target_node="u", destination_cidr="10.244.9.0/24")
    )
    bench.apiserver.create_node(node("n1", CIDR))
    impossible = node("u") | {"spec": None}
    impossible["metadata"] = {"name": "u", "uid": "uid-u", "resourceVersion": "1"}
    bench.apiserver.list_nodes_next_with(impossible)
    a = await bench.start(bench.args("--leader-elect=false", "--route-resync-period=1s"))
    await until(lambda: ("n1", CIDR) in bench.routes(), within=60)
    lists = sum(1 for r in bench.cloud.requests if r.operation == "list")
    await until(lambda: sum(1 for r in bench.cloud.requests if r.operation == "list") >= lists + 3)
    assert ("u", "10.244.9.0/24") in bench.routes()
    assert [r for r in bench.cloud.requests if r.operation == "delete"] == []
    (why,) = warnings_about(bench, "u", "UnknownNode")
    assert "spec is null" in why
    assert "neither deleted nor replaced" in why
    assert len(a.logged("UnknownNode: Node u: spec is null")) == 1
    assert not a.logged("^Traceback")
    assert a.process.returncode is None
    assert await a.stop() == 0


@pytest.fixture
async def hanging_cloud() -> AsyncIterator[str]:
    """A cloud endpoint that takes every request and never answers."""
    never = asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        del request
        await never.wait()
        return web.Response()

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", hang)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}"
    await runner.cleanup()


async def test_plan_against_a_hanging_cloud_says_what_it_waited_for_and_ends(
    bench: Bench, hanging_cloud: str
) -> None:
    """``routectl plan`` against a cloud that never answers ends by itself, non-zero, with
    one line saying what it waited for: the cloud's listing, how long each attempt waited,
    how many attempts over how long; and it ends within the time that line states (give or
    take the interpreter's start)."""
    bench.apiserver.create_node(node("n1", CIDR))
    args = [
        a.replace(bench.cloud.url, hanging_cloud)
        for a in bench.args("--cloud-call-timeout=1s", "--cloud-max-attempts=2")
    ]
    loop = asyncio.get_running_loop()
    started = loop.time()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "routectl", "plan", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    took = loop.time() - started
    assert process.returncode == 1
    assert out == b""
    (line,) = err.decode().splitlines()
    assert line.startswith("routectl plan: error: cannot read the cloud (provider fake):"), line
    stated = re.search(r"list did not answer within 1s \(2 attempts over ([\d.]+)(m?s)\)", line)
    assert stated is not None, line
    seconds = float(stated.group(1)) / (1000 if stated.group(2) == "ms" else 1)
    assert 2 <= seconds < took  # both attempts waited their second; the process ended after
    assert took < seconds + 30, f"ended {took:.1f}s after start, the line says {seconds}s"

"""Trust without a resync (issue 22), proved on the real process: a Node is never called
routed while its traffic goes elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from routectl_sim.cloudserver import Scripted
from tests.blackbox.conftest import Bench, node, until

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

"""Safety under faults, proved on the real process: no write without the lease, no silent
stall, no crash on a bad answer, exit 2 with one line on a bad flag."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal

import pytest

from routectl.model import Route
from routectl_sim.cloudserver import Scripted
from tests.blackbox.conftest import FAST_LEASE, Bench, Routectl, node, until

pytestmark = pytest.mark.blackbox


async def leader_of(bench: Bench, *candidates: Routectl) -> Routectl:
    """Wait until one of ``candidates`` holds the Lease; return it."""
    await until(lambda: bench.holder() != "", within=30)
    (leader,) = [c for c in candidates if bench.holder().startswith(f"{c.name}_")]
    return leader


@pytest.mark.slow
async def test_a_paused_leader_writes_nothing_after_the_takeover(bench: Bench) -> None:
    """Leader SIGSTOPped past its lease mid-work; the standby takes over; resumed, the old
    leader sends no cloud write, and exits 1."""
    for i in range(1, 31):
        bench.apiserver.create_node(node(f"n{i}", f"10.244.{i}.0/24"))
    slow = ("--cloud-qps=2", "--cloud-burst=1", *FAST_LEASE)
    a = await bench.start(bench.args(*slow, client="a"), name="a")
    await until(lambda: bench.holder().startswith("a_"))
    b = await bench.start(bench.args(*slow, client="b"), name="b")
    await until(lambda: len(bench.cloud.writes(client="a")) >= 3, within=30)
    a.pause()  # with most of its 30 creates still queued behind its budget
    await until(lambda: bench.holder().startswith("b_"), within=30)
    taken_over = asyncio.get_running_loop().time()
    a.resume()
    assert await a.exit_code(within=30) == 1
    (said,) = a.logged("Leadership lost, exiting")
    assert "TaskGroup" not in said, "the line names the cause, not the task group"
    assert "renew" in said, said
    refused = a.logged("Could not (create|delete) route")
    assert not a.logged("within 0s"), "a paused process is told as such, not as a 0s timeout"
    assert not refused, f"writes the fence refused were logged one by one: {refused[:3]}"
    late = bench.cloud.writes(client="a", since=taken_over)
    assert late == [], f"the old leader wrote after the takeover: {late}"
    await until(lambda: len(bench.routes()) == 30, within=60)
    assert await b.stop() == 0


@pytest.mark.slow
async def test_sigterm_mid_write_lets_the_lease_expire_instead_of_releasing_it(
    bench: Bench,
) -> None:
    """On SIGTERM, writes in flight finish or are cut off at the grace period; none starts
    after. The cloud applies writes late (0.2 s after they arrive, whether or not anyone
    still waits for the answer), so a write cut off may land after the process exits: the
    Lease is then not handed back but left to expire, and the standby's first write comes
    after every write of the old leader has landed."""
    bench.cloud.cloud.settings = dataclasses.replace(bench.cloud.cloud.settings, write_latency=0.2)
    for i in range(1, 101):
        gone = Route(target_node=f"gone{i}", destination_cidr=f"10.244.{i}.0/24")
        bench.cloud.cloud.add_route("kubernetes", gone)  # stale: to be deleted
    flags = (
        "--cloud-qps=20",
        "--cloud-burst=1",
        "--graceful-shutdown-timeout=1s",
        "--allow-mass-delete",
        *FAST_LEASE,
    )
    a = await bench.start(bench.args(*flags, client="a"), name="a")
    await until(lambda: len(bench.cloud.writes(client="a")) >= 10, within=30)
    b = await bench.start(bench.args(*flags, client="b"), name="b")
    released: list[str] = []

    async def watch_release() -> None:
        while not bench.holder().startswith("b_"):
            if bench.holder() == "":
                released.append("released")
            await asyncio.sleep(0.01)

    watcher = asyncio.create_task(watch_release())
    assert await a.stop(signal.SIGTERM) == 0
    stopped = asyncio.get_running_loop().time()
    assert len(bench.cloud.writes(client="a")) < 100  # it really was stopped mid-work
    assert a.logged("Not releasing lease kube-system/routectl: a cloud write was cut off")
    assert not a.logged("Released lease")
    await asyncio.wait_for(watcher, 60)
    assert not released, "the Lease was handed back while a write was in doubt"
    landed = max(r.time for r in bench.cloud.writes(client="a")) + 0.2
    assert all(r.time >= landed for r in bench.cloud.writes(client="b"))
    assert all(r.time <= stopped for r in bench.cloud.writes(client="a")), "a wrote after exit"
    assert await b.stop() == 0


@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.slow
async def test_an_hour_long_retry_after_is_capped_said_and_shown(bench: Bench, status: int) -> None:
    """Retry-After: 3600 on a create, with a 429 or a 503 (HTTP defines the hint for both):
    a WARNING says both waits, the pause gauge shows until when, the Node gets
    FailedToCreateRoute, and the route comes after the cap, not the hour."""
    bench.cloud.answer_next(
        "create",
        Scripted(status=status, body=b'{"message": "slow down"}', headers={"Retry-After": "3600"}),
    )
    bench.apiserver.create_node(node("n1", "10.244.1.0/24"))
    a = await bench.start(bench.args("--cloud-retry-after-cap=3s", "--leader-elect=false"))
    await until(lambda: a.logged("asked routectl to wait 1h0m0s"), within=30)
    (line,) = a.logged("asked routectl to wait")
    assert line.startswith("W")  # klog's header: a WARNING
    assert "holding every cloud call back for 3s (--cloud-retry-after-cap)" in line
    assert await a.metric("routectl_cloud_calls_paused_until_seconds") > 0
    await until(lambda: any(e["reason"] == "FailedToCreateRoute" for e in bench.apiserver.events()))
    await until(lambda: bench.routes() == {("n1", "10.244.1.0/24")}, within=30)
    await until(lambda: bench.condition("n1") == ("False", "RouteCreated"), within=30)
    assert (
        await a.metric("route_controller_route_sync_total", trigger="node_change", outcome="error")
        + await a.metric("route_controller_route_sync_total", trigger="periodic", outcome="error")
        >= 1
    )
    assert await a.stop() == 0


@pytest.mark.parametrize(
    ("answer", "surprise"),
    [
        pytest.param(Scripted(status=200, body=b'{"wrong": "shape"}'), True, id="wrong-shape"),
        pytest.param(Scripted(status=200, body=b"<html>login</html>"), True, id="html-page"),
        pytest.param(Scripted(status=200, body=b'{"routes": [{"name": 1}]}'), True, id="fields"),
        pytest.param(Scripted(reset=True), False, id="connection-reset"),
    ],
)
@pytest.mark.slow
async def test_a_garbage_cloud_answer_is_retried_not_fatal(
    bench: Bench, answer: Scripted, surprise: bool
) -> None:
    """Listings answered with garbage fail the sync, which is retried; the plugin's surprise
    is said in one line, once, without a traceback; the process keeps going and converges."""
    bench.cloud.answer_next("list", answer, times=10)  # more than one call's four attempts
    bench.apiserver.create_node(node("n1", "10.244.1.0/24"))
    a = await bench.start(bench.args("--leader-elect=false"))
    await until(lambda: bench.routes() == {("n1", "10.244.1.0/24")}, within=60)
    assert a.process.returncode is None
    assert (await a.get("/healthz"))[0] == 200
    assert a.logged("Couldn't reconcile node routes")
    if surprise:
        assert len(a.logged(r"The provider failed unexpectedly in list \(")) == 1
        assert not a.logged("failed unexpectedly in list again"), "said once at -v=0"
        assert not a.logged("^Traceback"), "the traceback is for -v=1"
    else:
        assert a.logged("connection failed")
        assert not a.logged("^Traceback")
    assert await a.stop() == 0


@pytest.mark.slow
async def test_listed_routes_of_the_wrong_shape_are_left_out_said_once_and_never_touched(
    bench: Bench,
) -> None:
    """A listing that carries a route with a null destination, one with a numeric
    destination and one with a null target (a garbled answer, or a plugin mapping a cloud's
    prefix-list route badly): the process keeps going and routes its Nodes; those entries
    are never deleted or changed, each is logged once however often it is listed, and
    counted as MalformedRoute."""
    garbage: list[dict[str, object]] = [
        {"name": "vpn-prefix-list", "destination": None, "target": "vpn-gw", "blackhole": False},
        {"name": "as-number", "destination": 167772160, "target": "gw", "blackhole": False},
        {"name": "no-target", "destination": "10.244.9.0/24", "target": None, "blackhole": False},
    ]
    bench.cloud.also_listed.extend(garbage)
    bench.apiserver.create_node(node("n1", "10.244.1.0/24"))
    a = await bench.start(bench.args("--leader-elect=false", "--route-resync-period=2s"))
    await until(lambda: bench.routes() == {("n1", "10.244.1.0/24")}, within=60)
    lists = sum(1 for r in bench.cloud.requests if r.operation == "list")
    await until(lambda: sum(1 for r in bench.cloud.requests if r.operation == "list") >= lists + 3)
    assert a.process.returncode is None
    assert (await a.get("/healthz"))[0] == 200
    assert [r for r in bench.cloud.requests if r.operation == "delete"] == []
    told = a.logged("MalformedRoute: the provider listed a route routectl cannot use")
    assert len(told) == 3, told
    assert any("destination_cidr is NoneType" in line for line in told)
    assert any("destination_cidr is int 167772160" in line for line in told)
    assert any("target_node is NoneType" in line for line in told)
    assert not a.logged("^Traceback")
    listed = await a.metric("routectl_input_problems_total", reason="MalformedRoute")
    assert listed is not None
    assert listed >= 3 * 4
    assert await a.stop() == 0


async def test_an_empty_node_list_after_a_relist_deletes_no_route_in_a_small_cluster(
    bench: Bench,
) -> None:
    """Three Nodes; history expires and the watches drop, so routectl relists, and a broken
    proxy answers that relist with a valid, empty NodeList. Below the mass-delete guard's
    minimum, every route would go; none does: the refusal is logged and told as an Event,
    and once the real list returns nothing has moved."""
    nodes = {f"n{i}": f"10.244.{i}.0/24" for i in range(3)}
    for name, cidr in nodes.items():
        bench.apiserver.create_node(node(name, cidr))
    a = await bench.start(bench.args("--leader-elect=false"))
    await until(lambda: bench.routes() == set(nodes.items()), within=60)
    bench.apiserver.drop_watches()
    bench.apiserver.patch_node("n0", {"metadata": {"labels": {"moved": "on"}}})
    bench.apiserver.expire_history()  # the watch resumes from before the patch: 410
    version = bench.apiserver.resource_version
    empty = json.dumps(
        {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": f"{version}"}}
        | {"items": []}
    ).encode()
    bench.apiserver.fail_next(
        method="GET",
        path_regex="/api/v1/nodes$",
        status=200,
        times=1,
        body=empty,
        content_type="application/json",
        watch=False,
    )
    await until(lambda: a.logged("the Node list is empty"), within=60)
    refused = [e for e in bench.apiserver.events() if e["reason"] == "MassDeleteRefused"]
    assert len(refused) == 1
    assert bench.routes() == set(nodes.items())
    assert [r for r in bench.cloud.requests if r.operation == "delete"] == []
    bench.apiserver.create_node(node("n9", "10.244.9.0/24"))  # the real list is back
    await until(lambda: ("n9", "10.244.9.0/24") in bench.routes(), within=60)
    assert bench.routes() == {*nodes.items(), ("n9", "10.244.9.0/24")}
    assert a.process.returncode is None
    assert await a.stop() == 0


async def test_a_node_list_answered_with_an_html_page_is_not_fatal(bench: Bench) -> None:
    """An auth proxy's HTML page on LIST nodes: not ready, logged, retried; then it works."""
    bench.apiserver.fail_next(
        method="GET",
        path_regex="/api/v1/nodes$",
        status=200,
        times=2,
        body=b"<html>sign in</html>",
        watch=False,
    )
    bench.apiserver.create_node(node("n1", "10.244.1.0/24"))
    a = await bench.start(bench.args("--leader-elect=false"))
    await until(lambda: a.logged("the answer is not JSON"), within=30)
    await until(lambda: bench.routes() == {("n1", "10.244.1.0/24")}, within=60)
    assert (await a.get("/readyz"))[0] == 200
    assert not a.logged("Traceback")
    assert await a.stop() == 0


@pytest.mark.parametrize(
    ("flag", "names"),
    [
        pytest.param("--cloud-qps=inf", "--cloud-qps", id="infinite-qps"),
        pytest.param(
            "--leader-elect-lease-duration=900ms",
            "--leader-elect-lease-duration",
            id="sub-second-lease",
        ),
        pytest.param(
            "--route-resync-period=9999999999h", "--route-resync-period", id="overflowing-duration"
        ),
        pytest.param(
            "--leader-elect-resource-name=cloud-controller-manager",
            "--leader-elect-resource-name",
            id="the-ccms-lease",
        ),
        pytest.param("--cloud-burst=99999999999", "--cloud-burst", id="overflowing-int"),
        pytest.param("--provider-option=seed=1", "'seed' is given twice", id="duplicate-option"),
        pytest.param(
            "--provider-option=write-latency=-1", "write-latency", id="negative-fake-option"
        ),
    ],
)
async def test_bad_flags_exit_2_with_one_line(bench: Bench, flag: str, names: str) -> None:
    """A flag that would pass validation and fail later exits 2 at start-up, one line naming it."""
    args = [a for a in bench.args(flag) if "endpoint=" not in a and "client=" not in a]
    if "seed=1" in flag:
        args.append("--provider-option=seed=2")
    a = await bench.start(args, wait=False)
    assert await a.exit_code() == 2
    (line,) = [line for line in a.lines if line.strip()]
    assert names in line


async def test_a_kubeconfig_that_is_not_yaml_exits_2_with_one_line(bench: Bench) -> None:
    """A broken kubeconfig is one line and exit 2, not a traceback."""
    bench.kubeconfig.write_text("clusters: [\n  - {{{ not yaml")
    a = await bench.start(bench.args(), wait=False)
    assert await a.exit_code() == 2
    (line,) = [line for line in a.lines if line.strip()]
    assert "--kubeconfig" in line
    assert "cannot load Kubernetes configuration" in line


@pytest.mark.slow
async def test_routes_that_are_not_ours_are_left_alone_and_overlaps_are_warned(
    bench: Bench,
) -> None:
    """A VPN route around the pod range survives, said once; two Nodes with overlapping pod
    CIDRs are both routed and each gets a PodCIDROverlap Warning."""
    vpn = Route(target_node="", destination_cidr="10.244.0.0/15", name="vpn", blackhole=True)
    bench.cloud.cloud.add_route("kubernetes", vpn)
    bench.apiserver.create_node(node("big", "10.244.0.0/20"))
    bench.apiserver.create_node(node("small", "10.244.7.0/24"))
    a = await bench.start(bench.args("--leader-elect=false", "--route-resync-period=2s"))
    await until(lambda: {("big", "10.244.0.0/20"), ("small", "10.244.7.0/24")} <= bench.routes())
    await until(lambda: len(bench.cloud.requests) >= 6, within=60)  # a few resyncs later
    assert ("", "10.244.0.0/15") in bench.routes()
    assert [r for r in bench.cloud.requests if r.operation == "delete"] == []
    assert len(a.logged("ForeignRouteOverlapsClusterCIDR")) == 1
    overlaps = [e for e in bench.apiserver.events() if e["reason"] == "PodCIDROverlap"]
    assert sorted(e["involvedObject"]["name"] for e in overlaps) == ["big", "small"]
    assert await a.metric("routectl_input_problems_total", reason="PodCIDROverlap") == 2
    assert await a.stop() == 0


@pytest.mark.parametrize(
    "flags",
    [
        ("--kube-api-qps=0.5", "--kube-api-burst=1"),
        ("--kube-api-qps=1", "--kube-api-burst=1", *FAST_LEASE),
    ],
    ids=["qps-0.5-default-lease", "qps-1-fast-lease"],
)
@pytest.mark.slow
async def test_a_low_kube_api_qps_still_leads_and_routes(
    bench: Bench, flags: tuple[str, ...]
) -> None:
    """The lowest legal pacing still elects a leader and routes: the election has a client
    and a bucket of its own, so its attempts never time out waiting behind the informer."""
    bench.apiserver.create_node(node("n1", "10.244.1.0/24"))
    r = await bench.start(bench.args(*flags), name="r")
    await until(lambda: bench.holder().startswith("r_"), within=60)
    await until(lambda: bench.routes() == {("n1", "10.244.1.0/24")}, within=60)
    assert not r.logged("attempt failed"), r.log()
    assert await r.stop() == 0

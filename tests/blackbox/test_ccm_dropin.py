"""Drop-in beside the CCM, proved on the real process: ``routectl run`` with a real
cloud-controller-manager argument list, seen only as an operator sees it (logs, exit codes,
HTTP, the API server's objects and requests, the cloud's routes).

Each point of the issue is checked: the CCM's command line is taken and acts (the API
server's request budget, the lease lock, the controller list, the feature gates, the
provider and its options file); /metrics, /healthz and /readyz are served over HTTPS with
delegated authentication and authorization; logs are klog's JSON with fields and ``-v``
levels; the metrics an SRE expects are there; Events aggregate across restarts; and
``routectl plan`` fails in one line that names the side, quietly under a closed pipe.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import socket
import ssl
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.blackbox.conftest import REPO, Bench, Routectl, node, until

pytestmark = pytest.mark.blackbox

SCRAPER = "prometheus-token"
SCRAPER_USER = "system:serviceaccount:monitoring:prometheus-k8s"


def free_port() -> int:
    """A port nobody listens on right now (for --secure-port, which cannot be 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def ccm_args(bench: Bench, tmp_path: Path, *, secure_port: int, client: str = "a") -> list[str]:
    """A cloud-controller-manager's arguments, as an operator pastes them from its Deployment
    (only the provider is routectl's: its options come from --cloud-config)."""
    cloud_config = tmp_path / f"cloud-{client}.conf"
    cloud_config.write_text(f"[Global]\nendpoint = {bench.cloud.url}\nclient = {client}\n")
    kubeconfig = str(bench.kubeconfig)
    return [
        "--cloud-provider=fake",
        f"--cloud-config={cloud_config}",
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--cluster-name=kubernetes",
        "--cluster-cidr=10.244.0.0/16",
        "--allocate-node-cidrs=false",
        "--configure-cloud-routes=true",
        "--controllers=*,-cloud-node,-cloud-node-lifecycle,-service",
        (
            "--feature-gates=CloudControllerManagerWatchBasedRoutesReconciliation=true,"
            "CloudControllerManagerWebhook=false"
        ),
        "--leader-elect=true",
        "--leader-elect-resource-lock=leases",
        "--leader-elect-resource-name=routectl",
        "--leader-elect-resource-namespace=kube-system",
        "--leader-elect-lease-duration=4s",
        "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=500ms",
        "--kube-api-qps=5",
        "--kube-api-burst=5",
        "--use-service-account-credentials=true",
        "--profiling=false",
        "--node-monitor-period=5s",
        "--concurrent-service-syncs=1",
        "--route-reconciliation-period=10s",
        "--bind-address=127.0.0.1",
        f"--secure-port={secure_port}",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez",
        "--logging-format=json",
        "--v=2",
        "--metrics-bind-address=127.0.0.1:0",  # plain HTTP too, where the harness finds it
        "--route-sync-batch-window=100ms",
    ]


async def https_get(port: int, path: str, token: str | None = None) -> tuple[int, str]:
    """GET over HTTPS, trusting the self-signed certificate as a ServiceMonitor does."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"https://127.0.0.1:{port}{path}", headers=headers, ssl=insecure) as response,
    ):
        return response.status, await response.text()


def json_lines(running: Routectl) -> list[dict[str, Any]]:
    """The process's log, as klog JSON objects (lines that are not JSON are a failure)."""
    return [json.loads(line) for line in running.lines if line.strip()]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.mark.slow
async def test_a_ccm_argument_list_runs_serves_logs_and_counts_like_the_ccm(
    bench: Bench, tmp_path: Path
) -> None:
    """Items 1 to 4 of issue 14 on one real process."""
    for i in range(1, 21):
        bench.apiserver.create_node(node(f"n{i}", f"10.244.{i}.0/24"))
    bench.apiserver.add_review_token(SCRAPER, username=SCRAPER_USER)
    bench.apiserver.grant_review(SCRAPER_USER, verb="get", path="/metrics")
    port = free_port()
    a = await bench.start(ccm_args(bench, tmp_path, secure_port=port), name="a")

    # 1. The CCM's command line acts: the plugin and its options file, the gates, the lease.
    await until(lambda: len(bench.routes()) == 20, within=60)
    await until(lambda: all(bench.condition(f"n{i}") == ("False", "RouteCreated") for i in range(1, 21)), within=60)  # fmt: skip
    assert bench.holder().startswith("a_")
    logged = json_lines(a)
    messages = [e["msg"] for e in logged]
    assert "Ignoring --profiling: routectl serves no profiling endpoints" in messages
    assert any(m.startswith("Ignoring feature gate CloudControllerManagerWebhook=false") for m in messages)  # fmt: skip
    assert bench.cloud.writes(client="a")  # the options file's client=a reached the plugin

    # 2. HTTPS with delegated authn/authz; the probes open to anyone.
    assert (await https_get(port, "/healthz"))[0] == 200
    assert (await https_get(port, "/readyz"))[0] == 200
    status, text = await https_get(port, "/metrics")
    assert (status, text.strip()) == (403, 'forbidden: User "system:anonymous" cannot get path "/metrics"')  # fmt: skip
    assert (await https_get(port, "/metrics", "not-a-token"))[0] == 401
    status, text = await https_get(port, "/metrics", SCRAPER)
    assert status == 200
    reviews = [r.path for r in bench.apiserver.requests if r.path.endswith("reviews")]
    assert any(p.endswith("/tokenreviews") for p in reviews)
    assert any(p.endswith("/subjectaccessreviews") for p in reviews)

    # 4. The metrics an SRE expects, over that scrape.
    scraped = samples(text)
    names = {name for name, _ in scraped}
    assert {"process_resident_memory_bytes", "python_info", "routectl_build_info"} <= names
    assert not [n for n in names if n.endswith("_created")]
    assert scraped[("workqueue_adds_total", (("name", "routes"),))] >= 1
    assert ("workqueue_depth", (("name", "routes"),)) in scraped
    assert ("workqueue_longest_running_processor_seconds", (("name", "routes"),)) in scraped
    patches = [v for (n, labels), v in scraped.items() if n == "rest_client_requests_total" and ("method", "PATCH") in labels and ("code", "200") in labels]  # fmt: skip
    assert sum(patches) >= 20
    held = [v for (n, labels), v in scraped.items() if n == "rest_client_rate_limiter_duration_seconds_sum" and ("verb", "PATCH") in labels]  # fmt: skip
    assert sum(held) > 0  # --kube-api-qps=5 held the 20 status patches back
    assert ("routectl_cloud_budget_held_seconds_total", ()) in scraped
    buckets = {float(dict(labels)["le"]) for (n, labels) in scraped if n == "routectl_cloud_call_duration_seconds_bucket"}  # fmt: skip
    assert max(b for b in buckets if b != float("inf")) >= 30

    # 3. klog JSON with fields; upstream's status patch line is Info (V(0)).
    creating = [e for e in logged if e["msg"].startswith("Creating route for node n1 ")]
    assert creating
    assert creating[0]["node"] == "n1"
    assert creating[0]["cidr"] == "10.244.1.0/24"
    assert isinstance(creating[0]["sync"], int)
    assert {"ts", "caller", "v"} <= creating[0].keys()
    patched = [e for e in json_lines(a) if e["msg"].startswith("Patching node status n1 ")]
    assert patched
    assert (patched[0]["v"], patched[0]["node"]) == (0, "n1")
    assert any(e.get("lease") == "kube-system/routectl" for e in json_lines(a))
    assert await a.stop() == 0


@pytest.mark.slow
async def test_verbosity_0_hides_the_v2_lines(bench: Bench, tmp_path: Path) -> None:
    """Without -v, upstream's V(2) line ("already set") is not logged; its Info lines are
    (the status patch among them, as upstream logs it)."""
    bench.apiserver.create_node(node("n1", "10.244.1.0/24"))
    args = [a for a in ccm_args(bench, tmp_path, secure_port=free_port()) if a != "--v=2"]
    args.append("--route-resync-period=2s")  # resyncs find the condition already set
    a = await bench.start(args)
    await until(lambda: bench.condition("n1") == ("False", "RouteCreated"), within=60)
    await until(lambda: len([r for r in bench.cloud.requests if r.operation == "list"]) >= 3)
    messages = [e["msg"] for e in json_lines(a)]
    assert any(m.startswith("Creating route for node n1") for m in messages)
    assert any(m.startswith("Patching node status n1") for m in messages)
    assert not any("was canceled because it is already set" in m for m in messages)
    assert await a.stop() == 0


def misconfigured(bench: Bench) -> int:
    """How many times the ClusterCIDRMisconfigured Warning was recorded (counts added up)."""
    events = bench.apiserver.events()
    return sum(
        int(e.get("count") or 1) for e in events if e["reason"] == "ClusterCIDRMisconfigured"
    )


def recorded_at_least(bench: Bench, times: int) -> bool:
    """Whether the Warning was recorded ``times`` times or more."""
    return misconfigured(bench) >= times


@pytest.mark.slow
async def test_the_same_warning_on_four_starts_is_one_event(bench: Bench, tmp_path: Path) -> None:
    """Item 5: four starts that each find the same misconfigured Node: one Event, count 4."""
    bench.apiserver.create_node(node("outside", "10.99.0.0/24"))
    for start in range(1, 5):
        args = ccm_args(bench, tmp_path, secure_port=free_port())
        a = await bench.start(args, name=f"s{start}")
        await until(functools.partial(recorded_at_least, bench, start), within=60)
        assert await a.stop() == 0
    (event,) = [e for e in bench.apiserver.events() if e["reason"] == "ClusterCIDRMisconfigured"]
    assert event["count"] == 4
    assert event["lastTimestamp"] >= event["firstTimestamp"]


@pytest.mark.parametrize(
    ("flag", "needle"),
    [
        ("--controllers=service,cloud-node", "does not enable the route controller"),
        ("--leader-elect-resource-lock=endpointsleases", "resource-lock must be leases"),
        ("--feature-gates=NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
    ],
)
async def test_a_ccm_value_routectl_cannot_honour_exits_2_with_one_line(
    bench: Bench, tmp_path: Path, flag: str, needle: str
) -> None:
    """The reason, in one line, at start-up. (--controllers is a pflag slice: given twice its
    items add up, so the line's own --controllers is taken out first.)"""
    name = flag.split("=", 1)[0]
    args = [
        arg
        for arg in ccm_args(bench, tmp_path, secure_port=free_port())
        if not arg.startswith(f"{name}=")
    ]
    a = await bench.start([*args, flag], wait=False)
    assert await a.exit_code() == 2
    (line,) = [line for line in a.lines if line.strip()]
    assert needle in line


@pytest.mark.parametrize("content", [None, "<html><body>Sign in</body></html>\n"])
@pytest.mark.parametrize("kind", ["authentication", "authorization"])
async def test_a_bad_review_kubeconfig_is_named_in_one_line_before_serving(
    bench: Bench, tmp_path: Path, kind: str, content: str | None
) -> None:
    """A missing or garbled --authentication-kubeconfig (or --authorization-kubeconfig) is
    one line naming that flag, not --kubeconfig, and exit 2 before any port is served."""
    bad = tmp_path / "review.kubeconfig"
    if content is not None:
        bad.write_text(content)
    args = [
        arg
        for arg in ccm_args(bench, tmp_path, secure_port=free_port())
        if not arg.startswith(f"--{kind}-kubeconfig=")
    ]
    a = await bench.start([*args, f"--{kind}-kubeconfig={bad}"], wait=False)
    assert await a.exit_code() == 2
    assert not a.logged("Serving")
    # The start-up lines naming the CCM flags routectl ignores are JSON; the error is not.
    (line,) = [line for line in a.lines if line.strip() and not line.startswith("{")]
    assert f"--{kind}-kubeconfig {bad}: " in line, line
    assert ("does not exist" if content is None else "not a kubeconfig") in line, line


async def plan(bench: Bench, *extra: str, endpoint: str | None = None) -> tuple[int, str, str]:
    """Run ``routectl plan`` to the end: (exit code, stdout, stderr)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "routectl", "plan",
        f"--kubeconfig={bench.kubeconfig}", "--cluster-cidr=10.244.0.0/16", "--provider=fake",
        f"--provider-option=endpoint={endpoint or bench.cloud.url}", "--cloud-max-attempts=1",
        *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_plan_against_an_unreachable_api_server_fails_in_one_line(bench: Bench) -> None:
    """Item 6: exit 1, one line that names the Kubernetes side, no traceback."""
    bench.kubeconfig.write_text(bench.kubeconfig.read_text().replace(bench.apiserver.url, f"http://127.0.0.1:{free_port()}"))  # fmt: skip
    code, out, err = await plan(bench)
    assert (code, out) == (1, "")
    (line,) = err.splitlines()
    assert line.startswith("routectl plan: error: cannot read the Kubernetes API server:")


@pytest.mark.slow
async def test_plan_against_an_unreachable_cloud_fails_in_one_line(bench: Bench) -> None:
    """Item 6: exit 1, one line that names the cloud, no traceback."""
    bench.apiserver.create_node(node("n1", "10.244.1.0/24"))
    code, out, err = await plan(bench, endpoint=f"http://127.0.0.1:{free_port()}")
    assert (code, out) == (1, "")
    (line,) = err.splitlines()
    assert line.startswith("routectl plan: error: cannot read the cloud (provider fake):")


@pytest.mark.slow
async def test_plan_is_quiet_under_a_closed_pipe(bench: Bench) -> None:
    """``routectl plan -o json | head -c 100``: no BrokenPipe traceback, SIGPIPE's exit code."""
    for i in range(1, 1201):
        bench.apiserver.create_node(node(f"n{i}", f"10.244.{i // 250}.{i % 250}/32"))
    read_end, write_end = os.pipe()  # a pipe as a shell makes one: 64 KiB, then the writer waits
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "routectl", "plan", "-o", "json",
            f"--kubeconfig={bench.kubeconfig}", "--cluster-cidr=10.244.0.0/16",
            "--provider=fake", f"--provider-option=endpoint={bench.cloud.url}",
            stdout=write_end, stderr=asyncio.subprocess.PIPE, cwd=REPO,
        )  # fmt: skip
    finally:
        os.close(write_end)
    first = await asyncio.to_thread(os.read, read_end, 100)  # head -c 100
    os.close(read_end)  # head exits: the pipe has no reader any more
    assert first.startswith(b"{")
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 141
    assert err == b""


async def test_plan_into_a_full_disk_fails_in_one_line(bench: Bench) -> None:
    """``routectl plan > /dev/full``: exit 1 and one line saying the plan could not be
    written, no traceback."""
    bench.apiserver.create_node(node("n1", "10.244.1.0/24"))
    with Path("/dev/full").open("wb") as full:  # noqa: ASYNC230 -- a device: no I/O wait
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "routectl", "plan",
            f"--kubeconfig={bench.kubeconfig}", "--cluster-cidr=10.244.0.0/16",
            "--provider=fake", f"--provider-option=endpoint={bench.cloud.url}",
            stdout=full, stderr=asyncio.subprocess.PIPE, cwd=REPO,
        )  # fmt: skip
        _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 1
    (line,) = err.decode().splitlines()
    assert line == "routectl plan: error: cannot write the plan: No space left on device"


async def test_secure_port_alone_opens_no_plain_port(bench: Bench, tmp_path: Path) -> None:
    """Item 4 of issue 19: --secure-port with --bind-address=127.0.0.1 and no
    --metrics-bind-address serves HTTPS on loopback and nothing over plain HTTP."""
    bench.apiserver.create_node(node("n1", "10.244.1.0/24"))
    port = free_port()
    args = [
        a
        for a in ccm_args(bench, tmp_path, secure_port=port)
        if not a.startswith("--metrics-bind-address")
    ]
    a = await bench.start(args, wait=False)
    await until(lambda: bench.condition("n1") == ("False", "RouteCreated"), within=60)
    messages = [e["msg"] for e in json_lines(a)]
    assert f"Serving /metrics, /healthz, /readyz and /livez securely on https://127.0.0.1:{port}" in messages  # fmt: skip
    assert not [m for m in messages if m.startswith("Serving /metrics, /healthz and /readyz on")]
    assert (await https_get(port, "/readyz"))[0] == 200
    assert await a.stop() == 0

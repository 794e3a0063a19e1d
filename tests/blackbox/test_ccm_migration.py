"""Migrating from the CCM in one paste (issue 19), proved on the real ``routectl run``.

A real cloud-controller-manager command line and the CCM's own cloud config are pasted for
AWS (cloud-provider-aws's ``[Global]`` against moto's EC2 server) and OpenStack
(``cloud.conf`` against the openstack plugin's fake Keystone, Nova and Neutron), with
kube-controller-manager's range allocator simulated beside routectl
(:mod:`routectl_sim.kcm`, over HTTP to the same fake API server). Each point of the issue
is checked as an operator sees it (logs, exit codes, HTTPS, the API server's objects, the
cloud's route tables):

1. the pasted ``--allocate-node-cidrs=true`` starts no allocator in routectl: KCM's
   allocations are routed; with ``--routectl-allocate-node-cidrs`` beside KCM's allocator,
   routectl stops allocating and says so (ERROR, Event, ``/readyz``);
2. flags routectl used to refuse (``--allow-untagged-cloud``, ``--disable-http2-serving``,
   ``--tls-curve-preferences``, ``--webhook-*``, ...) are taken;
3. ``RouteTableID`` picks the table; other keys are named once, a typo is a warning;
4. with ``--secure-port`` no plain listener is opened;
5. ``routectl plan`` takes the same line, shows the guard and the owned routes per table,
   and ``--detailed-exitcode`` tells pending changes (2) from none (0);
6. one line per route created, with its Node, CIDR and duration.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import os
import socket
import ssl
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from routectl_sim import kcm
from tests.blackbox.conftest import REPO, Bench, Routectl, node, until

moto_server = pytest.importorskip("moto.server")
routectl_aws_testing = pytest.importorskip("routectl_aws.testing")
routectl_aws_ec2 = pytest.importorskip("routectl_aws.ec2")
openstack_testing = pytest.importorskip("routectl_openstack.testing")

pytestmark = pytest.mark.blackbox

REGION = "us-east-1"
CLUSTER_CIDR = "10.244.0.0/16"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def https(port: int, path: str) -> tuple[int, str]:
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"https://127.0.0.1:{port}{path}", ssl=insecure) as response,
    ):
        return response.status, await response.text()


def messages(process: Routectl) -> list[str]:
    return [json.loads(line)["msg"] for line in process.lines if line.strip()]


def ccm_line(bench: Bench, cloud_config: Path, *, provider: str, secure_port: int) -> list[str]:
    """A cloud-controller-manager's arguments as its Deployment has them (an AWS or OpenStack
    CCM's: route controller on, --allocate-node-cidrs=true as older CCMs required)."""
    return [
        f"--cloud-provider={provider}",
        f"--cloud-config={cloud_config}",
        f"--kubeconfig={bench.kubeconfig}",
        f"--authentication-kubeconfig={bench.kubeconfig}",
        f"--authorization-kubeconfig={bench.kubeconfig}",
        "--cluster-name=prod",
        f"--cluster-cidr={CLUSTER_CIDR}",
        "--allocate-node-cidrs=true",
        "--cidr-allocator-type=RangeAllocator",
        "--configure-cloud-routes=true",
        "--controllers=*,-cloud-node,-cloud-node-lifecycle,-service",
        "--allow-untagged-cloud=true",
        "--concurrent-node-status-updates=5",
        "--disable-http2-serving=true",
        "--tls-curve-preferences=23,29",
        "--webhook-secure-port=0",
        "--webhook-tls-min-version=VersionTLS12",
        "--leader-elect=true",
        "--leader-elect-resource-name=routectl",
        "--leader-elect-resource-namespace=kube-system",
        "--leader-elect-lease-duration=4s",
        "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=500ms",
        "--use-service-account-credentials=true",
        "--bind-address=127.0.0.1",
        f"--secure-port={secure_port}",
        "--logging-format=json",
        "--v=2",
        "--route-reconciliation-period=10s",
    ]


async def plan(args: list[str], *extra: str) -> tuple[int, str, str]:
    """``routectl plan`` with ``args`` (the run line), to the end."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "routectl", "plan", *args, *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 90)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Static fake credentials for the child processes; no profile, no metadata service."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
                 "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def moto_url(aws_env: None) -> Iterator[str]:
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
async def vpc(moto_url: str) -> AsyncIterator[Any]:
    """A VPC in a freshly reset moto (its state is per process, shared by every server)."""
    async with aiohttp.ClientSession() as http, http.post(f"{moto_url}/moto-api/reset") as reset:
        reset.raise_for_status()
    async with routectl_aws_ec2.new_session().create_client(
        "ec2", region_name=REGION, endpoint_url=moto_url
    ) as ec2:
        yield await routectl_aws_testing.Vpc.create(ec2)


async def start_kcm(bench: Bench) -> tuple[Any, asyncio.Task[None]]:
    """kube-controller-manager's range allocator (/24 blocks of the cluster CIDR)."""
    return await kcm.start_kcm(
        kubeconfig=str(bench.kubeconfig),
        cluster_cidr=ipaddress.ip_network(CLUSTER_CIDR),
        node_mask=24,
        wall_clock=lambda: datetime.datetime.now(datetime.UTC),
        seed=19,
    )


async def routed(vpc: Any, table: str, want: dict[str, str], process: Routectl) -> None:
    """Wait until ``table`` routes each CIDR of ``want`` to its instance."""
    for _ in range(300):
        routes = await vpc.instance_routes(table)
        if all(routes.get(cidr) == instance for cidr, instance in want.items()):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{want} not routed in {table}:\n{process.log()}")


def pod_cidrs(bench: Bench, name: str) -> list[str]:
    return list(bench.apiserver.get_node(name)["spec"].get("podCIDRs") or [])


async def stop(started: tuple[Any, asyncio.Task[None]]) -> None:
    """Stop the simulated KCM: its task, then its client."""
    allocator, task = started
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await allocator.kube.aclose()


async def test_aws_ccm_line_and_cloud_config_pasted_beside_kcms_allocator(
    bench: Bench, vpc: Any, moto_url: str, tmp_path: Path
) -> None:
    tagged = await vpc.cluster_table("prod")  # the cluster's tagged table: not the one asked
    pinned = await vpc.route_table()  # RouteTableID: untagged, and the one to program
    instances = await vpc.launch(3)
    for i, instance in enumerate(instances[:2]):  # registered earlier, allocated by KCM then
        bench.apiserver.create_node(node(instance.dns, f"10.244.{i}.0/24"))
    cloud_config = tmp_path / "cloud.conf"
    cloud_config.write_text(
        "[Global]\n"
        f"Zone = {REGION}a\n"
        f"VPC = {vpc.id}\n"
        "KubernetesClusterTag = prod\n"
        f"RouteTableID = {pinned}\n"
        f"SubnetID = {vpc.subnet_id}\n"
        "DisableSecurityGroupIngress = true\n"
        "RouteTabelID = rtb-typo\n"
        '[ServiceOverride "1"]\n'
        "Service = ec2\n"
        f"Region = {REGION}\n"
        f"URL = {moto_url}\n"
        f"SigningRegion = {REGION}\n"
    )
    port = free_port()
    line = ccm_line(bench, cloud_config, provider="aws", secure_port=port)
    run_only = {"--leader-elect", "--bind-address", "--secure-port"}
    plan_line = [a for a in line if a.split("=", 1)[0] not in run_only]

    # 5. Before routectl runs: plan takes the pasted line, two creates pending (exit 2).
    code, out, err = await plan(plan_line, "--detailed-exitcode")
    assert code == 2
    (warning,) = err.splitlines()  # the typo, as run logs it: the preview shows it too
    assert warning.startswith("routectl plan: warning: Unknown key [Global] RouteTabelID"), err
    assert "routectl plan: 2 to create, 0 to delete" in out
    assert "mass-delete guard: nothing to delete" in out
    assert f"table {pinned}: 0 routes, 0 owned by this cluster" in out  # local routes aside

    kcm_task = await start_kcm(bench)
    try:
        process = await bench.start(line, wait=False)
        await until(lambda: len(process.lines) > 0, within=60)
        # 1 and 3: KCM's allocations are routed into the RouteTableID table only.
        want = {"10.244.0.0/24": instances[0].id, "10.244.1.0/24": instances[1].id}
        await routed(vpc, pinned, want, process)
        # a Node registering now gets its pod CIDR from KCM (routectl does not allocate) and
        # its route from routectl
        bench.apiserver.create_node(node(instances[2].dns))
        await until(lambda: pod_cidrs(bench, instances[2].dns) != [], within=60)
        (kcms,) = pod_cidrs(bench, instances[2].dns)
        await routed(vpc, pinned, {kcms: instances[2].id}, process)
        assert await vpc.instance_routes(tagged) == {}
        claims = [
            lease
            for lease in bench.apiserver.leases()
            if lease["metadata"].get("labels", {}).get("routectl.io/pod-cidr-claim")
        ]
        assert claims == []
        said = messages(process)
        assert any(m.startswith("Ignoring --allocate-node-cidrs: the generic CCM does nothing") for m in said)  # fmt: skip
        assert "Ignoring [Global] SubnetID: the service controller's (load-balancer subnets)" in said  # fmt: skip
        assert any(m.startswith("Unknown key [Global] RouteTabelID in --cloud-config") for m in said)  # fmt: skip
        # 2: flags once refused are taken (and the webhook ones named).
        assert any(m.startswith("Ignoring --allow-untagged-cloud: ") for m in said)
        assert any(m.startswith("Ignoring --webhook-tls-min-version: ") for m in said)
        # 4: HTTPS on loopback only; no plain listener.
        assert f"Serving /metrics, /healthz, /readyz and /livez securely on https://127.0.0.1:{port}" in said  # fmt: skip
        assert not [m for m in said if m.startswith("Serving /metrics, /healthz and /readyz on")]
        await until(lambda: bench.condition(instances[2].dns) == ("False", "RouteCreated"), within=60)  # fmt: skip
        assert (await https(port, "/readyz"))[0] == 200
        # 6: one line per route created, with Node, CIDR and duration.
        assert any(f"Created route for node {instances[2].dns} {kcms} with hint " in m and " after " in m for m in messages(process))  # fmt: skip

        # 5. After the sync: nothing pending (exit 0), three routes owned in the table.
        code, out, err = await plan(plan_line, "--detailed-exitcode")
        assert code == 0, out
        assert "RouteTabelID" in err, err  # the only line on stderr: the typo's warning
        assert len(err.splitlines()) == 1, err
        assert f"table {pinned}: 3 routes, 3 owned by this cluster" in out
        assert await process.stop() == 0
    finally:
        await stop(kcm_task)


async def test_routectl_allocating_stops_when_kcms_allocator_is_still_on(
    bench: Bench, vpc: Any, moto_url: str, tmp_path: Path
) -> None:
    """Migration with routectl allocating, done wrong: KCM's allocator left on. routectl
    adopts what exists, then sees KCM write a pod CIDR in its pool and stops allocating."""
    pinned = await vpc.route_table()
    instances = await vpc.launch(2)
    bench.apiserver.create_node(node(instances[0].dns, "10.244.0.0/24"))  # KCM's, adopted
    cloud_config = tmp_path / "cloud.conf"
    cloud_config.write_text(
        f"[Global]\nRegion = {REGION}\nRouteTableID = {pinned}\n"
        f'[ServiceOverride "1"]\nService = ec2\nRegion = {REGION}\nURL = {moto_url}\n'
    )
    port = free_port()
    line = [
        *ccm_line(bench, cloud_config, provider="aws", secure_port=port),
        "--routectl-allocate-node-cidrs",
        "--leader-elect=false",  # the pause below must not cost the Lease
    ]
    process = await bench.start(line, wait=False)
    await until(lambda: any(m.startswith("Node IPAM rebuilt") for m in messages(process)), within=60)  # fmt: skip
    kcm_task = await start_kcm(bench)
    try:
        # KCM writes first, deterministically: routectl is paused (SIGSTOP) while a Node
        # registers and KCM's allocator gives it a pod CIDR in routectl's pool.
        process.pause()
        try:
            bench.apiserver.create_node(node(instances[1].dns))
            await until(lambda: pod_cidrs(bench, instances[1].dns) != [], within=60)
        finally:
            process.resume()
        await until(lambda: any(m.startswith("Node IPAM stopped") for m in messages(process)), within=60)  # fmt: skip
        status, text = await https(port, "/readyz")
        assert status == 503
        assert text.startswith("node IPAM stopped: node ")
        events = [e for e in bench.apiserver.events() if e["reason"] == "OtherPodCIDRAllocator"]
        assert {e["type"] for e in events} == {"Warning"}
        logged = [json.loads(x) for x in process.lines if x.strip()]
        stopped = [e for e in logged if e["msg"].startswith("Node IPAM stopped: ")]
        assert [e.get("level") for e in stopped] == ["error"]  # said once, at ERROR
        assert pod_cidrs(bench, instances[0].dns) == ["10.244.0.0/24"]  # adopted as it was
        assert await process.stop() == 0
    finally:
        await stop(kcm_task)


async def test_openstack_ccm_line_and_cloud_conf(
    bench: Bench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cloud-provider-openstack's cloud.conf: [Global] auth and region, [Route] router-id."""
    for name in list(os.environ):
        if name.startswith("OS_"):
            monkeypatch.delenv(name)
    async with openstack_testing.FakeOpenStack(atomic=True) as fake:
        router = fake.add_router("10.0.0.0/24")
        fake.add_server("node-a", "10.0.0.10")
        bench.apiserver.create_node(node("node-a", "10.244.7.0/24", address="10.0.0.10"))
        cloud_config = tmp_path / "cloud.conf"
        cloud_config.write_text(
            "[Global]\n"
            f"auth-url = {fake.auth_url}\n"
            "username = routectl\n"
            f'password = "{openstack_testing.PASSWORD}"\n'
            "tenant-name = k8s\n"
            "domain-name = Default\n"
            "region = RegionOne\n"
            "[LoadBalancer]\n"
            "use-octavia = true\n"
            "[Route]\n"
            f"router-id = {router.id}\n"
        )
        port = free_port()
        line = [
            *ccm_line(bench, cloud_config, provider="openstack", secure_port=port),
            "--provider-option=node-cidrs=10.0.0.0/24",
        ]
        process = await bench.start(line, wait=False)
        await until(lambda: {"destination": "10.244.7.0/24", "nexthop": "10.0.0.10"} in router.routes, within=60)  # fmt: skip
        said = messages(process)
        assert "Ignoring [LoadBalancer] use-octavia: the service controller's" in said
        assert openstack_testing.PASSWORD not in process.log()
        await until(lambda: any(m.startswith("Created route for node node-a 10.244.7.0/24") for m in messages(process)), within=30)  # fmt: skip
        assert await process.stop() == 0

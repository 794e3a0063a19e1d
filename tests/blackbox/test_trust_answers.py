"""A shipped plugin's malformed cloud answer, on the real process (issue 22, point 5): the
aws plugin against moto's EC2 through a proxy that answers with a captive portal's HTML
page, or garbles a route's destination. The listing fails with one line naming the field,
no traceback at the default verbosity; the process keeps running; nothing is created,
replaced or deleted; and no Node is flipped to NetworkUnavailable=True on a listing it
could not read (the red team's F1: an HTML page read as "no instances")."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest

from tests.blackbox.conftest import Bench, until

moto_server = pytest.importorskip("moto.server")
aws_testing = pytest.importorskip("routectl_aws.testing")
aws_ec2 = pytest.importorskip("routectl_aws.ec2")

pytestmark = pytest.mark.blackbox

REGION = "us-east-1"
WRITES = {"CreateRoute", "ReplaceRoute", "DeleteRoute"}


@pytest.fixture
def moto_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """moto's EC2 on 127.0.0.1; static fake credentials for the child process."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/nonexistent/aws-config",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2"):
        monkeypatch.delenv(name, raising=False)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
async def scene(moto_url: str) -> AsyncIterator[tuple[Any, Any, str, list[Any]]]:
    """A VPC with the cluster's tagged table and two instances; the proxy routectl talks to."""
    async with aiohttp.ClientSession() as http, http.post(f"{moto_url}/moto-api/reset") as reset:
        reset.raise_for_status()
    async with (
        aws_ec2.new_session().create_client(
            "ec2", region_name=REGION, endpoint_url=moto_url
        ) as ec2,
        aws_testing.FaultProxy(moto_url) as proxy,
    ):
        vpc = await aws_testing.Vpc.create(ec2)
        table = await vpc.cluster_table("prod")
        instances = await vpc.launch(2)
        yield vpc, proxy, table, instances


def aws_node(name: str, cidr: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"podCIDRs": [cidr], "podCIDR": cidr},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.1.9"}]},
    }


def since(proxy: Any, start: int) -> list[str]:
    return [str(action) for action in proxy.actions[start:]]


@pytest.mark.parametrize(
    ("inject", "field"),
    [
        pytest.param(
            lambda proxy: proxy.fail_next("html-page", times=10_000, action="DescribeInstances"),
            r"EC2 DescribeInstances: the answer has no reservationSet",
            id="html-page-for-instances",
        ),
        pytest.param(
            lambda proxy: [
                proxy.rewrite_next(
                    "DescribeRouteTables",
                    lambda xml: re.sub(
                        r"<destinationCidrBlock>10\.244\.1\.0/24<",
                        "<destinationCidrBlock>two<",
                        xml,
                    ),
                )
                for _ in range(10_000)
            ],
            r"EC2 DescribeRouteTables: malformed answer: RouteTables\[0\]\.Routes\[\d+\]"
            r"\.DestinationCidrBlock is 'two', expected a CIDR",
            id="word-for-a-destination",
            marks=pytest.mark.slow,
        ),
    ],
)
async def test_a_malformed_ec2_answer_is_one_line_and_changes_nothing(
    bench: Bench, scene: tuple[Any, Any, str, list[Any]], inject: Any, field: str
) -> None:
    """Two Nodes routed; then every answer of one kind is malformed. Syncs fail and are
    retried; each failure is a line naming the field (no traceback at -v=0); the process
    keeps serving; no route is written; both Nodes stay RouteCreated."""
    vpc, proxy, table, instances = scene
    nodes = {i.dns: f"10.244.{n}.0/24" for n, i in enumerate(instances, start=1)}
    for name, cidr in nodes.items():
        bench.apiserver.create_node(aws_node(name, cidr))
    args = [
        f"--kubeconfig={bench.kubeconfig}",
        "--cluster-cidr=10.244.0.0/16",
        "--cloud-provider=aws",
        "--cluster-name=prod",
        f"--provider-option=region={REGION}",
        f"--provider-option=endpoint-url={proxy.url}",
        "--provider-option=cache-seconds=0",
        "--leader-elect=false",
        "--metrics-bind-address=127.0.0.1:0",
        "--route-reconciliation-period=1s",
        "--route-resync-period=2s",
        "--v=0",
    ]
    a = await bench.start(args)
    want = {cidr: i.id for i, cidr in zip(instances, nodes.values(), strict=True)}
    await until(lambda: _routed(vpc, table, want), within=60)
    await until(lambda: all(bench.condition(n) == ("False", "RouteCreated") for n in nodes))
    start = len(proxy.actions)
    inject(proxy)
    await until(lambda: a.logged(field), within=60)
    await until(lambda: len(a.logged(field)) >= 2, within=60)  # listed again: still failing
    assert a.process.returncode is None
    assert (await a.get("/healthz"))[0] == 200
    assert not WRITES & set(since(proxy, start)), since(proxy, start)
    assert await vpc.instance_routes(table) == want
    for name in nodes:
        assert bench.condition(name) == ("False", "RouteCreated")
    assert not a.logged("^Traceback")
    assert not a.logged(r"^\s+File ")
    for line in a.logged(field):
        assert "\n" not in line
    assert await a.stop() == 0


async def _routed(vpc: Any, table: str, want: dict[str, str]) -> bool:
    return bool(await vpc.instance_routes(table) == want)

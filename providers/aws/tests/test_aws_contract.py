"""The ``aws`` plugin passes routectl's conformance suite against moto's EC2 over real HTTP,
loads through its entry point and closes cleanly.
"""

from __future__ import annotations

import re
from typing import ClassVar

import pytest
from aws_scene import (
    CLUSTER,
    REGION,
    THROTTLED_7S,
    MakeProvider,
)
from routectl_aws import AwsProvider
from routectl_aws.testing import FaultProxy, Instance, Vpc

from routectl.errors import (
    ProviderTerminalError,
)
from routectl.provider import RequestBudget, load_factory
from routectl.testing.contract import ProviderContract


class TestAwsContract(ProviderContract):
    """The contract, with two instances in a VPC whose route table is tagged for the cluster.

    Another cluster's routes live in its own tagged table; an operator's route goes to an
    internet gateway in ours. Instances are looked up afresh for each listing
    (``cache-seconds=0``) so a terminated one shows as a blackhole at once.
    """

    node_name: ClassVar[str] = "private-dns-name"
    """The naming rule (``node-name``); every rule's restart equivalence is tested below."""
    foreign_kinds_elsewhere: tuple[str, ...] = ("other-cluster",)
    throttle_retry_after: float | None = 7.0
    _proxy: FaultProxy
    _vpc: Vpc
    _table: str
    _instances: dict[str, Instance]

    @pytest.fixture
    async def cloud(self, vpc: Vpc, proxy: FaultProxy) -> Vpc:
        """Two instances named after this class's ``node_name`` rule, one tagged table."""
        self._vpc, self._proxy = vpc, proxy
        self._table = await vpc.cluster_table("contract")
        first, second = await vpc.launch(1, name="worker-a") + await vpc.launch(1, name="worker-b")
        self._instances = {
            self.name_of(i, tag): i for i, tag in ((first, "worker-a"), (second, "worker-b"))
        }
        self.nodes = (self.name_of(first, "worker-a"), self.name_of(second, "worker-b"))
        return vpc

    def name_of(self, instance: Instance, tag: str) -> str:
        """The Node name of ``instance`` under this class's rule."""
        return {"private-dns-name": instance.dns, "name-tag": tag, "instance-id": instance.id}[
            self.node_name
        ]

    def make_provider(self, *, budget: RequestBudget) -> AwsProvider:
        """A provider of cluster ``contract`` through the proxy."""
        options = {
            "region": REGION,
            "endpoint-url": self._proxy.url,
            "cache-seconds": "0",
            "node-name": self.node_name,
        }
        return AwsProvider(cluster_name="contract", options=options, budget=budget)

    def requests_made(self) -> int:
        """EC2 requests that reached the proxy."""
        return len(self._proxy.actions)

    async def inject_fault(self, kind: str, *, after: int = 0) -> None:
        """The proxy throttles (asking 7 s), fails or forbids (after ``after`` requests),
        or loses the answer of the next CreateRoute or DeleteRoute."""
        if kind == "lost-answer":
            self._proxy.lose_next_answer("write")
        elif kind == "throttled":
            self._proxy.fail_next(THROTTLED_7S, after=after)
        else:
            self._proxy.fail_next(kind, after=after)

    async def inject_malformed_answer(self) -> str:
        """The next DescribeRouteTables answers ``two`` where a route's destination belongs."""
        self._proxy.rewrite_next(
            "DescribeRouteTables",
            lambda xml: re.sub(
                r"<destinationCidrBlock>[^<]*<", "<destinationCidrBlock>two<", xml, count=1
            ),
        )
        return "DestinationCidrBlock"

    async def add_foreign_route(self, kind: str, destination: str) -> None:
        """Another cluster's route in its own table, or a gateway route in ours."""
        if kind == "other-cluster":
            table = await self._vpc.cluster_table("other-cluster")
            (theirs,) = await self._vpc.launch()
            await self._vpc.ec2.create_route(
                RouteTableId=table, DestinationCidrBlock=destination, InstanceId=theirs.id
            )
            return
        gateway = (await self._vpc.ec2.create_internet_gateway())["InternetGateway"].get(
            "InternetGatewayId", ""
        )
        await self._vpc.ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=self._vpc.id)
        await self._vpc.ec2.create_route(
            RouteTableId=self._table, DestinationCidrBlock=destination, GatewayId=gateway
        )

    async def cloud_routes(self) -> list[tuple[str, str]]:
        """Every route of every table of the VPC, as EC2 describes it."""
        tables = await self._vpc.ec2.describe_route_tables(
            Filters=[{"Name": "vpc-id", "Values": [self._vpc.id]}]
        )
        return [
            (
                r.get("DestinationCidrBlock") or r.get("DestinationIpv6CidrBlock", ""),
                f"{t.get('RouteTableId')}:{r.get('InstanceId') or r.get('GatewayId')}",
            )
            for t in tables.get("RouteTables", [])
            for r in t.get("Routes", [])
        ]

    async def remove_node(self, node: str) -> None:
        """Terminate the node's instance."""
        await self._vpc.terminate(self._instances[node])


async def test_aclose_is_idempotent(vpc: Vpc, make_provider: MakeProvider) -> None:
    """aclose may be called twice, and a closed provider refuses further calls."""
    await vpc.cluster_table(CLUSTER)
    provider = make_provider()
    await provider.list_routes()
    await provider.aclose()
    await provider.aclose()
    with pytest.raises(ProviderTerminalError, match="closed"):
        await provider.list_routes()


async def test_entry_point_resolves_to_the_provider() -> None:
    """The distribution registers ``aws`` in routectl's entry-point group."""
    assert load_factory("aws") is AwsProvider

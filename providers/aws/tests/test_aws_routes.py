"""What the ``aws`` provider does to a VPC's route tables, against moto's EC2 over real HTTP.

moto runs as a threaded server on 127.0.0.1 for the session and is reset before each test; a
:class:`~routectl_aws.testing.FaultProxy` in front of it (in the test's own loop) counts EC2
actions and injects throttling, 5xx and permission errors. Scenes are set directly in moto
through :class:`~routectl_aws.testing.Vpc`, so they are neither counted nor failed. The
contract suite runs first, then the behaviour specific to EC2.
"""

from __future__ import annotations

import email.utils
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar

import pytest
from botocore.exceptions import ClientError
from routectl_aws import AwsProvider
from routectl_aws.errors import map_client_error
from routectl_aws.testing import FaultProxy, InjectedFault, Instance, Vpc

from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import RequestBudget, load_factory
from routectl.testing.contract import ProviderContract

REGION = "us-east-1"
CLUSTER = "prod"
CIDR_A = "10.244.1.0/24"
CIDR_B = "10.244.2.0/24"
CIDR_V6 = "fd00:10:244:1::/64"
THROTTLED_7S = InjectedFault(
    status=503, code="RequestLimitExceeded", message="Slow down", retry_after="7"
)

MakeProvider = Callable[..., AwsProvider]


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

    async def inject_fault(self, kind: str) -> None:
        """The proxy throttles (asking 7 s), fails, forbids, or loses a CreateRoute's answer."""
        if kind == "lost-answer":
            self._proxy.lose_next_answer("CreateRoute")
        elif kind == "throttled":
            self._proxy.fail_next(THROTTLED_7S)
        else:
            self._proxy.fail_next(kind)

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


@pytest.fixture
async def make_provider(proxy: FaultProxy) -> AsyncIterator[MakeProvider]:
    """Build providers that talk to moto through the proxy; all are closed after the test."""
    made: list[AwsProvider] = []

    def make(cluster: str = CLUSTER, **options: str) -> AwsProvider:
        provider = AwsProvider(
            cluster_name=cluster,
            options={"region": REGION, "endpoint-url": proxy.url, **options},
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()


def route(node: Instance | str, cidr: str) -> Route:
    """The route routectl would ask for."""
    return Route(target_node=node if isinstance(node, str) else node.dns, destination_cidr=cidr)


def keys(routes: object) -> set[tuple[str, str, bool]]:
    """(target, destination, blackhole) of listed routes."""
    assert isinstance(routes, list | tuple)
    return {(r.target_node, r.destination_cidr, r.blackhole) for r in routes}


async def test_routes_go_into_tagged_tables_only(vpc: Vpc, make_provider: MakeProvider) -> None:
    """An untagged table and another cluster's table are never written."""
    tagged = await vpc.cluster_table(CLUSTER)
    untagged = await vpc.route_table()
    other = await vpc.cluster_table("other-cluster")
    wrong_value = await vpc.route_table(tags={f"kubernetes.io/cluster/{CLUSTER}": "foreign"})
    (node,) = await vpc.launch()
    await make_provider().create_route(route(node, CIDR_A), name_hint="uid")
    assert await vpc.instance_routes(tagged) == {CIDR_A: node.id}
    for table in (untagged, other, wrong_value):
        assert await vpc.instance_routes(table) == {}


async def test_route_goes_into_every_tagged_table(vpc: Vpc, make_provider: MakeProvider) -> None:
    """Owned and shared tables all get the route; it is listed once and deleted from all."""
    owned = await vpc.cluster_table(CLUSTER)
    shared = await vpc.cluster_table(CLUSTER, value="shared")
    (node,) = await vpc.launch()
    provider = make_provider()
    await provider.create_route(route(node, CIDR_A), name_hint="uid")
    assert await vpc.instance_routes(owned) == {CIDR_A: node.id}
    assert await vpc.instance_routes(shared) == {CIDR_A: node.id}
    listed = list(await provider.list_routes())
    assert keys(listed) == {(node.dns, CIDR_A, False)}
    await provider.delete_route(listed[0])
    assert await vpc.instance_routes(owned) == {}
    assert await vpc.instance_routes(shared) == {}


async def test_vpc_id_option_restricts_tables(vpc: Vpc, make_provider: MakeProvider) -> None:
    """With vpc-id, a tagged table in another VPC is left alone."""
    mine = await vpc.cluster_table(CLUSTER)
    elsewhere = await Vpc.create(vpc.ec2, cidr="10.1.0.0/16")
    theirs = await elsewhere.cluster_table(CLUSTER)
    (node,) = await vpc.launch()
    await make_provider(**{"vpc-id": vpc.id}).create_route(route(node, CIDR_A), name_hint="u")
    assert await vpc.instance_routes(mine) == {CIDR_A: node.id}
    assert await elsewhere.instance_routes(theirs) == {}


async def test_other_clusters_routes_are_not_listed(vpc: Vpc, make_provider: MakeProvider) -> None:
    """Routes in another cluster's table are invisible, and deleting the same CIDR spares them."""
    await vpc.cluster_table(CLUSTER)
    other = await vpc.cluster_table("other-cluster")
    (node,) = await vpc.launch()
    await vpc.ec2.create_route(RouteTableId=other, DestinationCidrBlock=CIDR_A, InstanceId=node.id)
    provider = make_provider()
    assert keys(await provider.list_routes()) == set()
    with pytest.raises(RouteNotFoundError):
        await provider.delete_route(route(node, CIDR_A))
    assert await vpc.instance_routes(other) == {CIDR_A: node.id}


async def test_gateway_routes_are_not_ours(vpc: Vpc, make_provider: MakeProvider) -> None:
    """An internet-gateway route in the cluster's table is neither listed nor replaced."""
    table = await vpc.cluster_table(CLUSTER)
    gateway = (await vpc.ec2.create_internet_gateway())["InternetGateway"].get(
        "InternetGatewayId", ""
    )
    await vpc.ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc.id)
    await vpc.ec2.create_route(RouteTableId=table, DestinationCidrBlock=CIDR_A, GatewayId=gateway)
    (node,) = await vpc.launch()
    provider = make_provider()
    assert keys(await provider.list_routes()) == set()
    with pytest.raises(ProviderTerminalError, match="gateway"):
        await provider.create_route(route(node, CIDR_A), name_hint="u")
    with pytest.raises(RouteNotFoundError):
        await provider.delete_route(route("", CIDR_A))
    (kept,) = [r for r in await vpc.routes(table) if r.get("DestinationCidrBlock") == CIDR_A]
    assert kept.get("GatewayId") == gateway


async def test_ipv6_route_uses_the_ipv6_destination(vpc: Vpc, make_provider: MakeProvider) -> None:
    """An IPv6 pod CIDR becomes a DestinationIpv6CidrBlock route to the instance."""
    table = await vpc.cluster_table(CLUSTER)
    (node,) = await vpc.launch()
    provider = make_provider()
    await provider.create_route(route(node, CIDR_V6), name_hint="uid")
    (v6,) = [r for r in await vpc.routes(table) if r.get("InstanceId")]
    assert v6.get("DestinationIpv6CidrBlock") == CIDR_V6
    assert "DestinationCidrBlock" not in v6
    assert keys(await provider.list_routes()) == {(node.dns, CIDR_V6, False)}


async def test_route_to_terminated_instance_is_a_blackhole(
    vpc: Vpc, make_provider: MakeProvider
) -> None:
    """Once the instance is gone the route is listed as a blackhole without target, and deletes."""
    table = await vpc.cluster_table(CLUSTER)
    node, survivor = await vpc.launch(2)
    provider = make_provider(**{"cache-seconds": "0"})
    await provider.create_route(route(node, CIDR_A), name_hint="a")
    await provider.create_route(route(survivor, CIDR_B), name_hint="b")
    await vpc.terminate(node)
    listed = list(await provider.list_routes())
    assert keys(listed) == {("", CIDR_A, True), (survivor.dns, CIDR_B, False)}
    (blackhole,) = [r for r in listed if r.blackhole]
    await provider.delete_route(blackhole)
    assert await vpc.instance_routes(table) == {CIDR_B: survivor.id}


async def test_blackhole_with_the_same_cidr_is_replaced(
    vpc: Vpc, make_provider: MakeProvider
) -> None:
    """Creating a CIDR whose route points at a terminated instance repoints it."""
    table = await vpc.cluster_table(CLUSTER)
    gone, node = await vpc.launch(2)
    await vpc.ec2.create_route(RouteTableId=table, DestinationCidrBlock=CIDR_A, InstanceId=gone.id)
    await vpc.terminate(gone)
    provider = make_provider()
    assert keys(await provider.list_routes()) == {("", CIDR_A, True)}
    await provider.create_route(route(node, CIDR_A), name_hint="u")
    assert await vpc.instance_routes(table) == {CIDR_A: node.id}


async def test_source_dest_check_is_disabled_once(
    vpc: Vpc, proxy: FaultProxy, make_provider: MakeProvider
) -> None:
    """Creating a node's routes turns its source/destination check off, with a single call."""
    await vpc.cluster_table(CLUSTER)
    node, other = await vpc.launch(2)
    assert await vpc.source_dest_check(node)
    provider = make_provider()
    await provider.create_route(route(node, CIDR_A), name_hint="u")
    await provider.create_route(route(node, CIDR_V6), name_hint="u")
    assert not await vpc.source_dest_check(node)
    assert await vpc.source_dest_check(other)
    assert proxy.count("ModifyInstanceAttribute") == 1


async def test_conflicting_route_raises_already_exists(
    vpc: Vpc, make_provider: MakeProvider
) -> None:
    """A CIDR already routed to another live instance is not taken over."""
    table = await vpc.cluster_table(CLUSTER)
    node, holder = await vpc.launch(2)
    await vpc.ec2.create_route(
        RouteTableId=table, DestinationCidrBlock=CIDR_A, InstanceId=holder.id
    )
    with pytest.raises(RouteAlreadyExistsError, match=holder.id):
        await make_provider().create_route(route(node, CIDR_A), name_hint="u")
    assert await vpc.instance_routes(table) == {CIDR_A: holder.id}


async def test_conflicting_tables_are_listed_without_target(
    vpc: Vpc, make_provider: MakeProvider
) -> None:
    """A CIDR routed to different nodes in different tables is listed with no target node."""
    first = await vpc.cluster_table(CLUSTER)
    second = await vpc.cluster_table(CLUSTER)
    a, b = await vpc.launch(2)
    await vpc.ec2.create_route(RouteTableId=first, DestinationCidrBlock=CIDR_A, InstanceId=a.id)
    await vpc.ec2.create_route(RouteTableId=second, DestinationCidrBlock=CIDR_A, InstanceId=b.id)
    provider = make_provider()
    (listed,) = await provider.list_routes()
    assert (listed.target_node, listed.blackhole) == ("", False)
    await provider.delete_route(listed)
    assert await vpc.instance_routes(first) == {}
    assert await vpc.instance_routes(second) == {}


async def test_replace_repoints_every_table_with_replace_route_only(
    vpc: Vpc, proxy: FaultProxy, make_provider: MakeProvider
) -> None:
    """A replace is one ReplaceRoute per table: no delete, no create, no gap without a route."""
    tables = [await vpc.cluster_table(CLUSTER), await vpc.cluster_table(CLUSTER)]
    a, b = await vpc.launch(2)
    for table in tables:
        await vpc.ec2.create_route(RouteTableId=table, DestinationCidrBlock=CIDR_A, InstanceId=a.id)
    provider = make_provider()
    (old,) = await provider.list_routes()
    await provider.replace_route(old, route(b, CIDR_A), name_hint="u")
    assert [await vpc.instance_routes(t) for t in tables] == [{CIDR_A: b.id}] * 2
    assert (
        proxy.count("ReplaceRoute"),
        proxy.count("DeleteRoute"),
        proxy.count("CreateRoute"),
    ) == (
        2,
        0,
        0,
    )
    assert keys(await provider.list_routes()) == {(b.dns, CIDR_A, False)}


async def test_replace_of_a_conflicting_destination_repoints_every_table(
    vpc: Vpc, make_provider: MakeProvider
) -> None:
    """A destination listed without a target (tables disagree) is repointed in all of them."""
    first = await vpc.cluster_table(CLUSTER)
    second = await vpc.cluster_table(CLUSTER)
    a, b, c = await vpc.launch(3)
    await vpc.ec2.create_route(RouteTableId=first, DestinationCidrBlock=CIDR_A, InstanceId=a.id)
    await vpc.ec2.create_route(RouteTableId=second, DestinationCidrBlock=CIDR_A, InstanceId=b.id)
    provider = make_provider()
    (listed,) = await provider.list_routes()
    await provider.replace_route(listed, route(c, CIDR_A), name_hint="u")
    assert await vpc.instance_routes(first) == await vpc.instance_routes(second) == {CIDR_A: c.id}


async def test_replace_of_a_vanished_route_raises_not_found_and_writes_nothing(
    vpc: Vpc, proxy: FaultProxy, make_provider: MakeProvider
) -> None:
    """A replace of a route no table holds any more is RouteNotFoundError (routectl creates)."""
    await vpc.cluster_table(CLUSTER)
    a, b = await vpc.launch(2)
    provider = make_provider()
    await provider.create_route(route(a, CIDR_A), name_hint="u")
    (old,) = await provider.list_routes()
    await provider.delete_route(old)
    writes = proxy.count("ReplaceRoute") + proxy.count("CreateRoute")
    with pytest.raises(RouteNotFoundError):
        await provider.replace_route(old, route(b, CIDR_A), name_hint="u")
    assert proxy.count("ReplaceRoute") + proxy.count("CreateRoute") == writes


async def test_route_missing_from_a_table_is_recreated(
    vpc: Vpc, proxy: FaultProxy, make_provider: MakeProvider
) -> None:
    """A route present in only some tables is not listed; creating it again fills the gap only."""
    first = await vpc.cluster_table(CLUSTER)
    (node,) = await vpc.launch()
    await vpc.ec2.create_route(RouteTableId=first, DestinationCidrBlock=CIDR_A, InstanceId=node.id)
    second = await vpc.cluster_table(CLUSTER)
    provider = make_provider()
    assert keys(await provider.list_routes()) == set()
    await provider.create_route(route(node, CIDR_A), name_hint="u")
    assert proxy.count("CreateRoute") == 1
    assert await vpc.instance_routes(second) == {CIDR_A: node.id}
    assert keys(await provider.list_routes()) == {(node.dns, CIDR_A, False)}


async def test_node_found_by_name_tag(vpc: Vpc, make_provider: MakeProvider) -> None:
    """With node-name=name-tag a node named after the Name tag is routed and listed so."""
    table = await vpc.cluster_table(CLUSTER)
    (node,) = await vpc.launch(name="worker-1")
    provider = make_provider(**{"node-name": "name-tag"})
    await provider.create_route(route("worker-1", CIDR_A), name_hint="u")
    assert await vpc.instance_routes(table) == {CIDR_A: node.id}
    assert keys(await provider.list_routes()) == {("worker-1", CIDR_A, False)}


@pytest.mark.parametrize("rule", ["private-dns-name", "name-tag", "instance-id"])
async def test_a_fresh_provider_lists_the_same_node_names(
    vpc: Vpc, make_provider: MakeProvider, rule: str
) -> None:
    """Under every naming rule a restarted provider maps routes to the same Nodes (issue 12.5)."""
    await vpc.cluster_table(CLUSTER)
    a, b = await vpc.launch(1, name="worker-a") + await vpc.launch(1, name="worker-b")
    names = {
        "private-dns-name": (a.dns, b.dns),
        "name-tag": ("worker-a", "worker-b"),
        "instance-id": (a.id, b.id),
    }[rule]
    first = make_provider(**{"node-name": rule})
    await first.create_route(route(names[0], CIDR_A), name_hint="a")
    await first.create_route(route(names[1], CIDR_B), name_hint="b")
    made = sorted(await first.list_routes(), key=lambda r: r.destination_cidr)
    fresh = sorted(
        await make_provider(**{"node-name": rule}).list_routes(), key=lambda r: r.destination_cidr
    )
    assert fresh == made
    assert [r.target_node for r in fresh] == list(names)


async def test_a_node_named_under_another_rule_is_refused_with_the_fix(
    vpc: Vpc, make_provider: MakeProvider
) -> None:
    """A Name-tag node under the default rule is a terminal error naming the option to set."""
    table = await vpc.cluster_table(CLUSTER)
    await vpc.launch(name="worker-1")
    with pytest.raises(ProviderTerminalError, match="node-name=name-tag"):
        await make_provider().create_route(route("worker-1", CIDR_A), name_hint="u")
    assert await vpc.instance_routes(table) == {}


async def test_unknown_node_is_a_transient_error(vpc: Vpc, make_provider: MakeProvider) -> None:
    """A node without an instance fails the create transiently and is not looked up again soon."""
    await vpc.cluster_table(CLUSTER)
    provider = make_provider()
    with pytest.raises(ProviderError, match="no EC2 instance") as caught:
        await provider.create_route(route("ghost", CIDR_A), name_hint="u")
    assert not isinstance(caught.value, ProviderTerminalError)


async def test_missing_tables_are_a_terminal_error(vpc: Vpc, make_provider: MakeProvider) -> None:
    """Without a tagged table there is nothing to write to, and retrying cannot help."""
    (node,) = await vpc.launch()
    with pytest.raises(ProviderTerminalError, match=f"kubernetes.io/cluster/{CLUSTER}=owned"):
        await make_provider().create_route(route(node, CIDR_A), name_hint="u")


async def test_instance_lookups_are_cached_and_batched(
    vpc: Vpc, proxy: FaultProxy, make_provider: MakeProvider
) -> None:
    """Many routes to gone instances cost one DescribeInstances per cache period, not one each."""
    table = await vpc.cluster_table(CLUSTER)
    instances = await vpc.launch(3)
    for index, instance in enumerate(instances):
        await vpc.ec2.create_route(
            RouteTableId=table, DestinationCidrBlock=f"10.244.{index}.0/24", InstanceId=instance.id
        )
        await vpc.terminate(instance)
    provider = make_provider()
    for _ in range(3):
        assert {r.blackhole for r in await provider.list_routes()} == {True}
    assert proxy.count("DescribeRouteTables") == 3
    assert proxy.count("DescribeInstances") == 1


async def test_node_lookups_are_cached(
    vpc: Vpc, proxy: FaultProxy, make_provider: MakeProvider
) -> None:
    """Both pod CIDRs of a node cost one instance lookup; a list reuses the table listing."""
    await vpc.cluster_table(CLUSTER)
    (node,) = await vpc.launch()
    provider = make_provider()
    await provider.list_routes()
    await provider.create_route(route(node, CIDR_A), name_hint="u")
    await provider.create_route(route(node, CIDR_V6), name_hint="u")
    assert proxy.count("DescribeInstances") == 1
    assert proxy.count("DescribeRouteTables") == 1
    assert proxy.count("CreateRoute") == 2


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        pytest.param("throttled", (ProviderThrottledError, 1.0), id="throttled-default-pause"),
        pytest.param(
            InjectedFault(status=400, code="Throttling", message="Rate exceeded", retry_after="7"),
            (ProviderThrottledError, 7.0),
            id="throttled-retry-after",
        ),
        pytest.param("transient", (ProviderError, None), id="500"),
        pytest.param("unavailable", (ProviderError, None), id="503"),
        pytest.param(
            InjectedFault(status=503, code="Unavailable", message="Busy", retry_after="30"),
            (ProviderThrottledError, 30.0),
            id="503-retry-after",
        ),
        pytest.param(
            InjectedFault(status=503, code="Unavailable", message="Busy", retry_after="soon"),
            (ProviderError, None),
            id="503-unreadable-retry-after",
        ),
        pytest.param("terminal", (ProviderTerminalError, None), id="unauthorized"),
        pytest.param("auth", (ProviderTerminalError, None), id="auth-failure"),
    ],
)
async def test_ec2_errors_map_to_the_error_tree(
    vpc: Vpc,
    proxy: FaultProxy,
    make_provider: MakeProvider,
    fault: str | InjectedFault,
    expected: tuple[type[ProviderError], float | None],
) -> None:
    """Each EC2 error response becomes the matching routectl error, throttling with a pause."""
    await vpc.cluster_table(CLUSTER)
    proxy.fail_next(fault)
    with pytest.raises(ProviderError) as caught:
        await make_provider().list_routes()
    error_type, retry_after = expected
    assert type(caught.value) is error_type
    if retry_after is not None:
        assert isinstance(caught.value, ProviderThrottledError)
        assert caught.value.retry_after == retry_after


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "Wed, 21 Oct 2037 07:28:00 GMT"}, 45.0),
        ({"retry-after": "12"}, 12.0),
        ({}, None),
    ],
    ids=["http-date", "seconds", "no-hint"],
)
def test_a_503_that_says_when_to_come_back_is_throttling_with_that_hint(
    headers: dict[str, str], expected: float | None
) -> None:
    """A 503 with Retry-After (an HTTP-date is read against ``now``) is throttling with the
    hint; a 503 without one stays a plain transient error."""
    now = email.utils.parsedate_to_datetime("Wed, 21 Oct 2037 07:27:15 GMT").timestamp()
    response: Any = {
        "Error": {"Code": "Unavailable", "Message": "Busy"},
        "ResponseMetadata": {"HTTPStatusCode": 503, "HTTPHeaders": headers},
    }
    error = map_client_error("DescribeRouteTables", ClientError(response, "x"), now=now)
    if expected is None:
        assert type(error) is ProviderError
    else:
        assert isinstance(error, ProviderThrottledError)
        assert error.retry_after == expected


async def test_route_limit_is_terminal_with_a_clear_message(
    vpc: Vpc, proxy: FaultProxy, make_provider: MakeProvider
) -> None:
    """A full route table (RouteLimitExceeded) is a terminal error that names the quota."""
    await vpc.cluster_table(CLUSTER)
    (node,) = await vpc.launch()
    proxy.fail_next("route-limit", action="CreateRoute")
    with pytest.raises(ProviderTerminalError, match="50 routes per table"):
        await make_provider().create_route(route(node, CIDR_A), name_hint="u")


async def test_unreachable_endpoint_is_transient(make_provider: MakeProvider) -> None:
    """A connection refused is a transient error that does not leak the endpoint URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://user:secret@127.0.0.1:{port}"
    with pytest.raises(ProviderError, match="cannot reach") as caught:
        await make_provider(**{"endpoint-url": url}).list_routes()
    assert not isinstance(caught.value, ProviderTerminalError)
    assert "secret" not in str(caught.value)


async def test_missing_credentials_are_terminal(
    monkeypatch: pytest.MonkeyPatch, vpc: Vpc, make_provider: MakeProvider
) -> None:
    """Without credentials anywhere in the chain the error is terminal and says so."""
    del vpc
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(ProviderTerminalError, match="credentials"):
        await make_provider().list_routes()


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

"""What the ``aws`` provider does to a VPC's route tables, against moto's EC2 over real HTTP.

moto runs as a threaded server on 127.0.0.1 for the session and is reset before each test; a
:class:`~routectl_aws.testing.FaultProxy` in front of it (in the test's own loop) counts EC2
actions and injects throttling, 5xx and permission errors. Scenes are set directly in moto
through :class:`~routectl_aws.testing.Vpc`, so they are neither counted nor failed. The
conformance suite is in ``test_aws_contract.py``, Node naming and look-ups in
``test_aws_nodes.py``, EC2's failures in ``test_aws_errors.py``.
"""

from __future__ import annotations

import ipaddress

import pytest
from aws_scene import (
    CIDR_A,
    CIDR_B,
    CIDR_V6,
    CLUSTER,
    MakeProvider,
    keys,
    route,
)
from routectl_aws.testing import FaultProxy, Vpc

from routectl.errors import (
    ProviderTerminalError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import NodeView
from routectl.plan.reconcile import Plan, plan


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


async def test_no_table_of_the_cluster_fails_the_listing(
    vpc: Vpc, make_provider: MakeProvider
) -> None:
    """A wrong --cluster-name (or tag) selects no table: the listing fails, as upstream's
    findRouteTable fails ListRoutes, instead of showing an empty cloud whose every route
    routectl would then try to create (and mark each Node NoRouteCreated when it cannot)."""
    other = await vpc.cluster_table("prod-real")
    (node,) = await vpc.launch()
    await vpc.ec2.create_route(RouteTableId=other, DestinationCidrBlock=CIDR_A, InstanceId=node.id)
    provider = make_provider()
    message = f"no route table has the tag kubernetes.io/cluster/{CLUSTER}=owned"
    with pytest.raises(ProviderTerminalError, match=message):
        await provider.list_routes()
    with pytest.raises(ProviderTerminalError, match=message):
        await provider.route_tables()
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


def _plan(routes: object, *nodes: tuple[str, str]) -> Plan:
    """routectl's plan of ``routes`` against Nodes given as (name, pod CIDR)."""
    assert isinstance(routes, list | tuple)
    views = [
        NodeView(name=name, uid=f"uid-{name}", pod_cidrs=(cidr,), addresses=())
        for name, cidr in nodes
    ]
    return plan(nodes=views, routes=routes, cluster_cidrs=[ipaddress.ip_network("10.244.0.0/16")])


async def test_route_missing_from_a_table_is_repaired_by_one_create(
    vpc: Vpc, proxy: FaultProxy, make_provider: MakeProvider
) -> None:
    """A route present in only some tables is listed without a target, so routectl repoints
    it: one CreateRoute in the table that lacks it, nothing in the one that has it."""
    first = await vpc.cluster_table(CLUSTER)
    (node,) = await vpc.launch()
    await vpc.ec2.create_route(RouteTableId=first, DestinationCidrBlock=CIDR_A, InstanceId=node.id)
    second = await vpc.cluster_table(CLUSTER)
    provider = make_provider()
    listed = list(await provider.list_routes())
    assert keys(listed) == {("", CIDR_A, False)}
    (create,) = _plan(listed, (node.dns, CIDR_A)).creates
    assert create.replaces == tuple(listed)
    await provider.replace_route(listed[0], create.route, name_hint="u")
    assert (proxy.count("CreateRoute"), proxy.count("ReplaceRoute")) == (1, 0)
    assert (
        await vpc.instance_routes(first) == await vpc.instance_routes(second) == {CIDR_A: node.id}
    )
    assert keys(await provider.list_routes()) == {(node.dns, CIDR_A, False)}


async def test_a_stale_route_left_in_one_table_only_is_deleted(
    vpc: Vpc, make_provider: MakeProvider
) -> None:
    """A route in one of two tables that no Node claims is planned away and deleted there."""
    first = await vpc.cluster_table(CLUSTER)
    second = await vpc.cluster_table(CLUSTER)
    a, b = await vpc.launch(2)
    await vpc.ec2.create_route(RouteTableId=first, DestinationCidrBlock=CIDR_A, InstanceId=a.id)
    await vpc.ec2.create_route(RouteTableId=second, DestinationCidrBlock=CIDR_B, InstanceId=b.id)
    provider = make_provider()
    listed = list(await provider.list_routes())
    planned = _plan(listed, (a.dns, "10.244.9.0/24"))
    assert {r.destination_cidr for r in planned.deletes} == {CIDR_A, CIDR_B}
    for stale in planned.deletes:
        await provider.delete_route(stale)
    assert await vpc.instance_routes(first) == await vpc.instance_routes(second) == {}


async def test_route_table_id_picks_that_table_whatever_its_tags(
    vpc: Vpc, make_provider: MakeProvider
) -> None:
    """route-table-id (cloud-provider-aws's RouteTableID): that table only, even untagged;
    the cluster's tagged tables are left alone."""
    tagged = await vpc.cluster_table(CLUSTER)
    pinned = await vpc.route_table()
    (node,) = await vpc.launch()
    provider = make_provider(**{"route-table-id": pinned})
    await provider.create_route(route(node, CIDR_A), name_hint="uid")
    assert await vpc.instance_routes(pinned) == {CIDR_A: node.id}
    assert await vpc.instance_routes(tagged) == {}
    assert keys(await provider.list_routes()) == {(node.dns, CIDR_A, False)}


async def test_cluster_id_selects_by_its_tag_and_the_legacy_tag(
    vpc: Vpc, make_provider: MakeProvider
) -> None:
    """cluster-id (KubernetesClusterID/Tag): tables tagged kubernetes.io/cluster/<id> or
    KubernetesCluster=<id> are the cluster's, whatever --cluster-name says."""
    new_style = await vpc.cluster_table("prod-id")
    legacy = await vpc.route_table(tags={"KubernetesCluster": "prod-id"})
    other_legacy = await vpc.route_table(tags={"KubernetesCluster": "other"})
    by_name = await vpc.cluster_table(CLUSTER)
    (node,) = await vpc.launch()
    provider = make_provider(**{"cluster-id": "prod-id"})
    await provider.create_route(route(node, CIDR_A), name_hint="uid")
    assert await vpc.instance_routes(new_style) == {CIDR_A: node.id}
    assert await vpc.instance_routes(legacy) == {CIDR_A: node.id}
    assert await vpc.instance_routes(other_legacy) == {}
    assert await vpc.instance_routes(by_name) == {}


async def test_route_tables_describe_every_route_of_each_selected_table(
    vpc: Vpc, make_provider: MakeProvider
) -> None:
    """route_tables() (for routectl plan): each selected table with the destinations of its
    instance routes, whatever their CIDR; the VPC's local route and other tables are not."""
    tagged = await vpc.cluster_table(CLUSTER)
    await vpc.route_table()
    (node,) = await vpc.launch()
    provider = make_provider()
    await provider.create_route(route(node, CIDR_A), name_hint="uid")
    tables = await provider.route_tables()
    assert set(tables) == {tagged}
    assert tables[tagged] == {CIDR_A}  # not the VPC's local route
    other = await vpc.launch()
    await vpc.ec2.create_route(
        RouteTableId=tagged, DestinationCidrBlock="192.168.7.0/24", InstanceId=other[0].id
    )
    assert (await provider.route_tables())[tagged] == {CIDR_A, "192.168.7.0/24"}


async def test_role_arn_signs_ec2_calls_with_the_assumed_role(
    vpc: Vpc,
    make_provider: MakeProvider,
    proxy: FaultProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """role-arn (cloud-provider-aws's RoleARN): STS AssumeRole with the pod's credentials
    first, then EC2 calls signed with the role's; a refused AssumeRole is a clear error."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", proxy.url)
    tagged = await vpc.cluster_table(CLUSTER)
    (node,) = await vpc.launch()
    role = "arn:aws:iam::123456789012:role/routectl"
    provider = make_provider(**{"role-arn": role})
    await provider.create_route(route(node, CIDR_A), name_hint="uid")
    assert await vpc.instance_routes(tagged) == {CIDR_A: node.id}
    assert proxy.count("AssumeRole") == 1
    signed = dict(zip(proxy.actions, proxy.access_keys, strict=True))
    assert signed["AssumeRole"] == "testing"  # the pod's own credentials ask STS
    assert signed["CreateRoute"].startswith("ASIA")  # the role's temporary credentials
    await make_provider().list_routes()
    assert proxy.access_keys[-1] == "testing"  # without role-arn: the pod's own
    proxy.fail_next("terminal", action="AssumeRole")
    with pytest.raises(ProviderTerminalError, match="assume role"):
        await make_provider(**{"role-arn": role}).list_routes()

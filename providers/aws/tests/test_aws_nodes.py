"""How the ``aws`` plugin maps Nodes to instances and back (private DNS name, Name tag,
instance id), the same in a fresh process, and how often it looks instances up.
"""

from __future__ import annotations

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
    ProviderError,
    ProviderTerminalError,
)


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

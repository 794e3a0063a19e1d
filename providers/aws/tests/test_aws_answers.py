"""The ``aws`` plugin checks what EC2 answers: XML that does not parse, a value botocore's
model cannot take, a route table without id, a route without destination or whose destination
is no CIDR, an instance without id or state, are each one MalformedAnswerError naming the
field, never a ValueError traceback nor a route or instance silently left out (which would
make a route look missing, or a blackhole, and be written over)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from aws_scene import CIDR_A, CLUSTER, MakeProvider, keys, route
from routectl_aws.testing import FaultProxy, Vpc

from routectl.errors import MalformedAnswerError


def sub(pattern: str, replacement: str) -> Callable[[str], str]:
    """An edit of EC2's XML: the first match of ``pattern`` replaced."""
    return lambda xml: re.sub(pattern, replacement, xml, count=1, flags=re.DOTALL)


POD_ROUTE = r"<destinationCidrBlock>10\.244\.1\.0/24</destinationCidrBlock>"


@pytest.mark.parametrize(
    "case",
    [
        (
            "DescribeRouteTables",
            sub(POD_ROUTE, "<destinationCidrBlock>two</destinationCidrBlock>"),
            "RouteTables[0].Routes[",
        ),
        ("DescribeRouteTables", sub(POD_ROUTE, ""), "].DestinationCidrBlock is missing"),
        (
            "DescribeRouteTables",
            lambda xml: re.sub(r"<routeTableId>[^<]*</routeTableId>", "", xml),
            "RouteTables[0].RouteTableId",
        ),
        ("DescribeRouteTables", lambda xml: xml[: len(xml) // 2], "the body: Unable to parse"),
        (
            "DescribeInstances",
            sub(r"<amiLaunchIndex>[^<]*<", "<amiLaunchIndex>two<"),
            "Reservations.Instances.AmiLaunchIndex: invalid literal",
        ),
        (
            "DescribeInstances",
            sub(r"<instanceId>[^<]*</instanceId>", ""),
            "Instances[0].InstanceId is missing",
        ),
        (
            "DescribeInstances",
            sub(r"<instanceState>.*?</instanceState>", ""),
            "Instances[0].State",
        ),
    ],
    ids=[
        "word-for-cidr",
        "no-destination",
        "no-table-id",
        "cut-xml",
        "word-for-number",
        "no-instance-id",
        "no-state",
    ],
)
async def test_a_malformed_answer_is_one_error_naming_the_field(
    vpc: Vpc,
    proxy: FaultProxy,
    make_provider: MakeProvider,
    case: tuple[str, Callable[[str], str], str],
) -> None:
    """The listing fails with one transient error naming the field; the next, well-formed
    answer lists the route as before (never as a blackhole, never left out)."""
    action, edit, field = case
    await vpc.cluster_table(CLUSTER)
    (node,) = await vpc.launch()
    await make_provider().create_route(route(node, CIDR_A), name_hint="u")
    provider = make_provider()  # a new process: it knows no instance yet
    proxy.rewrite_next(action, edit)
    with pytest.raises(MalformedAnswerError, match=f"EC2 {action}: malformed answer") as caught:
        await provider.list_routes()
    assert field in str(caught.value)
    assert caught.value.field
    assert keys(await provider.list_routes()) == {(node.dns, CIDR_A, False)}


async def test_no_route_written_on_a_table_it_could_not_read(
    vpc: Vpc, proxy: FaultProxy, make_provider: MakeProvider
) -> None:
    """A create whose listing of the tables is garbled writes nothing."""
    table = await vpc.cluster_table(CLUSTER)
    (node,) = await vpc.launch()
    proxy.rewrite_next(
        "DescribeRouteTables", lambda xml: re.sub(r"<routeTableId>[^<]*</routeTableId>", "", xml)
    )
    with pytest.raises(MalformedAnswerError):
        await make_provider().create_route(route(node, CIDR_A), name_hint="u")
    assert proxy.count("CreateRoute") == 0
    assert await vpc.instance_routes(table) == {}

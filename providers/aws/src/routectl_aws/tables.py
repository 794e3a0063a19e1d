"""Route-table selection and parsing: which VPC route tables and routes are the cluster's.

Promises: a table is selected only when it has the tag ``kubernetes.io/cluster/<cluster-name>``
(or ``<cluster-id>``) with the value ``owned`` or ``shared`` (case and surrounding blanks
ignored), or, with ``cluster-id``, the legacy tag ``KubernetesCluster=<cluster-id>``, as
cloud-provider-aws reads both; and lies in the ``vpc-id`` option's VPC when that is set. With
``route-table-id`` that table alone is selected, whatever its tags (cloud-provider-aws's
``RouteTableID``). Within a selected table only instance routes and blackholes are entries
(keyed by canonical CIDR); gateway, NAT, peering, local, propagated and other foreign routes
are recorded as foreign destinations, never as entries, and prefix-list destinations are
skipped; a table without id or a route without destination, or whose destination is no CIDR, is
a :class:`~routectl.errors.MalformedAnswerError` naming the field (never a route skipped: a
route left out could be created over). :class:`RouteTables` reuses the last listing for writes
while it is younger than ``cache-seconds`` (concurrent writes share one listing) and forgets it
when EC2 says a table is gone.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routectl.answers import Answer
from routectl.cidr import canonical
from routectl.errors import MalformedAnswerError
from routectl_aws.ec2 import cause_code

if TYPE_CHECKING:
    from types_aiobotocore_ec2.type_defs import FilterTypeDef, RouteTableTypeDef

    from routectl.errors import ProviderError
    from routectl_aws.ec2 import Ec2
    from routectl_aws.options import AwsOptions

__all__ = [
    "CLUSTER_TAG_PREFIX",
    "CLUSTER_TAG_VALUES",
    "LEGACY_CLUSTER_TAG",
    "Entry",
    "RouteTables",
    "Selection",
    "Table",
    "check_tables",
    "parse_table",
]

CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"
LEGACY_CLUSTER_TAG = "KubernetesCluster"
CLUSTER_TAG_VALUES = frozenset({"owned", "shared"})
_FOREIGN_TARGETS = (
    "GatewayId",
    "NatGatewayId",
    "VpcPeeringConnectionId",
    "TransitGatewayId",
    "EgressOnlyInternetGatewayId",
    "CarrierGatewayId",
    "LocalGatewayId",
    "CoreNetworkArn",
    "OdbNetworkArn",
)


@dataclasses.dataclass(slots=True, kw_only=True)
class Entry:
    """One route of ours in one table."""

    destination: str
    """As EC2 spells it."""
    ipv6: bool
    instance_id: str
    blackhole: bool


@dataclasses.dataclass(slots=True, kw_only=True)
class Table:
    """A route table of the cluster, with the routes that are ours keyed by canonical CIDR."""

    id: str
    vpc_id: str
    entries: dict[str, Entry]
    foreign: set[str]
    """Canonical destinations routed elsewhere (gateways, peering...): never touched."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    """Which tables are the cluster's: by tag (and legacy tag), or the one pinned by id."""

    tag_key: str
    legacy_id: str = ""
    pinned: str = ""

    def selects(self, raw: RouteTableTypeDef) -> bool:
        """Whether ``raw`` is one of the cluster's tables."""
        if self.pinned:
            return raw.get("RouteTableId") == self.pinned
        tags = {tag.get("Key", ""): tag.get("Value", "") for tag in raw.get("Tags", [])}
        if tags.get(self.tag_key, "").strip().lower() in CLUSTER_TAG_VALUES:
            return True
        return bool(self.legacy_id) and tags.get(LEGACY_CLUSTER_TAG) == self.legacy_id

    def filters(self) -> list[FilterTypeDef]:
        """DescribeRouteTables filters that keep at least the selected tables."""
        if self.pinned:
            return [{"Name": "route-table-id", "Values": [self.pinned]}]
        keys = [self.tag_key, *([LEGACY_CLUSTER_TAG] if self.legacy_id else [])]
        return [{"Name": "tag-key", "Values": keys}]


def _text(answer: Answer) -> str:
    """A string that must be there and not be empty."""
    value = answer.text()
    if not value:
        raise MalformedAnswerError(
            f"{answer.what}: malformed answer: {answer.path} is empty", field=answer.path
        )
    return value


def check_tables(raw: Sequence[RouteTableTypeDef]) -> Sequence[RouteTableTypeDef]:
    """``raw`` (``DescribeRouteTables``' tables) if every table has what this module reads:
    an id, tags with keys, and routes whose destination is a CIDR (or a prefix list); else a
    :class:`~routectl.errors.MalformedAnswerError` naming the first field that is not so
    (botocore leaves a field out when EC2's XML lacks it or holds another element)."""
    tables = Answer(list(raw), what="EC2 DescribeRouteTables", path="RouteTables")
    for table in tables.items():
        _text(table.field("RouteTableId"))
        for tag in table.field("Tags").items():
            tag.field("Key").text()
        for route in table.field("Routes").items():
            v4 = route.field("DestinationCidrBlock")
            v6 = route.field("DestinationIpv6CidrBlock")
            destination = v4 if not v4.missing else v6
            if destination.missing:
                if route.field("DestinationPrefixListId").text(default=""):
                    continue
                raise MalformedAnswerError(
                    f"EC2 DescribeRouteTables: malformed answer: {v4.path} is missing (and no "
                    "IPv6 or prefix-list destination either)",
                    field=v4.path,
                )
            destination.cidr()
            route.field("InstanceId").text(default="")
            route.field("State").text(default="")
    return raw


def parse_table(raw: RouteTableTypeDef, *, tag_key: str | Selection) -> Table | None:
    """``raw`` as a :class:`Table`, or ``None`` when it is not one of the cluster's."""
    selection = tag_key if isinstance(tag_key, Selection) else Selection(tag_key=tag_key)
    if not selection.selects(raw):
        return None
    table = Table(
        id=raw.get("RouteTableId", ""), vpc_id=raw.get("VpcId", ""), entries={}, foreign=set()
    )
    for item in raw.get("Routes", []):
        ipv6_destination = item.get("DestinationIpv6CidrBlock", "")
        destination = item.get("DestinationCidrBlock", "") or ipv6_destination
        if not destination:
            continue  # prefix-list destinations are never ours
        key = canonical(destination)
        instance_id = item.get("InstanceId", "")
        blackhole = item.get("State") == "blackhole"
        if (
            item.get("Origin") == "EnableVgwRoutePropagation"
            or any(item.get(target) for target in _FOREIGN_TARGETS)
            or not (instance_id or blackhole)
        ):
            table.foreign.add(key)
            continue
        table.entries[key] = Entry(
            destination=destination,
            ipv6=bool(ipv6_destination),
            instance_id=instance_id,
            blackhole=blackhole,
        )
    return table


class RouteTables:
    """The cluster's route tables, as of the last ``DescribeRouteTables`` (kept current by the
    provider's writes)."""

    def __init__(self, ec2: Ec2, *, tag_key: str | Selection, options: AwsOptions) -> None:
        self._ec2 = ec2
        self._tag_key = tag_key if isinstance(tag_key, Selection) else Selection(tag_key=tag_key)
        self._options = options
        self._tables: list[Table] = []
        self._tables_stamp: float | None = None
        self._loading = asyncio.Lock()

    async def load(self) -> list[Table]:
        """List the selected tables afresh, sorted by id, and remember them."""
        filters = self._tag_key.filters()
        if self._options.vpc_id:
            filters.append({"Name": "vpc-id", "Values": [self._options.vpc_id]})
        raw = check_tables(await self._ec2.describe_route_tables(filters))
        tables = [
            t for t in (parse_table(item, tag_key=self._tag_key) for item in raw) if t is not None
        ]
        tables.sort(key=lambda t: t.id)
        self._tables = tables
        self._tables_stamp = asyncio.get_running_loop().time()
        return tables

    async def for_write(self) -> list[Table]:
        """The selected tables: the last listing's if fresh (kept current with our writes).

        Concurrent writers that find the listing stale wait for one listing, not one each.
        """
        async with self._loading:
            stamp = self._tables_stamp
            now = asyncio.get_running_loop().time()
            if stamp is not None and now - stamp < self._options.cache_seconds:
                return self._tables
            return await self.load()

    def forget_if_gone(self, err: ProviderError) -> None:
        """Make the next write list afresh when ``err`` says a route table no longer exists."""
        if cause_code(err) == "InvalidRouteTableID.NotFound":
            self._tables_stamp = None

    async def fresh_entry(self, table: Table, key: str) -> tuple[Entry | None, bool]:
        """Re-read ``table``; its entry for ``key`` and whether a foreign route holds ``key``."""
        raw = check_tables(
            await self._ec2.describe_route_tables(
                [{"Name": "route-table-id", "Values": [table.id]}]
            )
        )
        for item in raw:
            fresh = parse_table(item, tag_key=self._tag_key)
            if fresh is not None and fresh.id == table.id:
                table.entries, table.foreign = fresh.entries, fresh.foreign
                return fresh.entries.get(key), key in fresh.foreign
        return None, False

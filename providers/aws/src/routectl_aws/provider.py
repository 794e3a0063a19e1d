"""The ``aws`` provider: a cluster's pod routes as instance routes in tagged VPC route tables.

Like cloud-provider-aws, ownership is at table level: a table is the cluster's when it has the
tag ``kubernetes.io/cluster/<cluster-name>`` with the value ``owned`` or ``shared`` (and lies
in the ``vpc-id`` option's VPC, if set). Unlike it, any number of tables is fine: every route
goes into every selected table. In those tables, routes whose target is an instance (or that
are blackholes) are the cluster's; gateway, NAT, peering, local and propagated routes are never
listed nor touched, and untagged tables are never written.

Nodes are EC2 instances found by private DNS name (the kubelet's default node name), falling
back to the ``Name`` tag. Lookups are cached for ``cache-seconds`` and batched: one listing
costs one ``DescribeRouteTables`` and at most one ``DescribeInstances``, however many routes
point at unknown or terminated instances. Calls are made once: botocore's own retries are off,
because routectl's ``RateLimitedProvider`` owns pacing and retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import functools
import ipaddress
import logging
import os
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession, get_session
from botocore.exceptions import BotoCoreError, ClientError
from botocore.loaders import Loader

from routectl.cidr import canonical, parse_cidr
from routectl.errors import (
    ConfigError,
    ProviderError,
    ProviderTerminalError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl_aws.errors import error_code, map_botocore_error, map_client_error
from routectl_aws.options import AwsOptions, parse_options

if TYPE_CHECKING:
    from types_aiobotocore_ec2 import EC2Client
    from types_aiobotocore_ec2.type_defs import (
        CreateRouteRequestTypeDef,
        DeleteRouteRequestTypeDef,
        FilterTypeDef,
        InstanceTypeDef,
        ReplaceRouteRequestTypeDef,
        RouteTableTypeDef,
    )

__all__ = ["AwsProvider"]

T = TypeVar("T")
_log = logging.getLogger(__name__)

CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"
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
_GONE_STATES = frozenset({"shutting-down", "terminated"})
_LIVE_STATES = ["pending", "running", "stopping", "stopped"]
_FILTER_VALUES_LIMIT = 200  # EC2 accepts at most 200 values per filter


@dataclasses.dataclass(slots=True, kw_only=True)
class _Entry:
    """One route of ours in one table."""

    destination: str
    """As EC2 spells it."""
    ipv6: bool
    instance_id: str
    blackhole: bool


@dataclasses.dataclass(slots=True, kw_only=True)
class _Table:
    """A route table of the cluster, with the routes that are ours keyed by canonical CIDR."""

    id: str
    vpc_id: str
    entries: dict[str, _Entry]
    foreign: set[str]
    """Canonical destinations routed elsewhere (gateways, peering...): never touched."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Instance:
    id: str
    private_dns_name: str
    name_tag: str
    state: str
    source_dest_check: bool

    @property
    def alive(self) -> bool:
        return self.state not in _GONE_STATES


@functools.cache
def _data_loader() -> Loader:
    """botocore's model loader, shared: EC2's service model is large and read-only."""
    loader: Loader = get_session().get_component("data_loader")
    return loader


def new_session() -> AioSession:
    """An aiobotocore session of its own (credentials), sharing the parsed service models."""
    session = get_session()
    session.register_component("data_loader", _data_loader())
    return session


def _wall_clock() -> float:
    """Unix time, only to read an HTTP-date ``Retry-After``."""
    return datetime.datetime.now(datetime.UTC).timestamp()


def _chunks(items: Sequence[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _cause_code(err: ProviderError) -> str:
    """The EC2 error code behind a mapped error, if it came from an error response."""
    cause = err.__cause__
    return error_code(cause) if isinstance(cause, ClientError) else ""


class AwsProvider:
    """The ``aws`` route provider (options: ``region``, ``vpc-id``, ``endpoint-url``,
    ``cache-seconds``); the class is its own factory."""

    def __init__(self, *, cluster_name: str, options: Mapping[str, str]) -> None:
        if not cluster_name.strip():
            raise ConfigError("--provider-option: provider aws: the cluster name is empty")
        self.cluster_name = cluster_name
        self.options: AwsOptions = parse_options(options, environ=os.environ)
        self.tag_key = CLUSTER_TAG_PREFIX + cluster_name
        self._session = new_session()
        self._client_lock = asyncio.Lock()
        self._stack: contextlib.AsyncExitStack | None = None
        self._ec2: EC2Client | None = None
        self._closed = False
        # route tables, as of the last DescribeRouteTables (kept up to date with our writes)
        self._tables: list[_Table] = []
        self._tables_stamp: float | None = None
        # instances: id -> (instance, loop time fetched); misses expire too (eventual consistency)
        self._instances: dict[str, tuple[_Instance, float]] = {}
        self._missing_ids: dict[str, float] = {}
        self._node_instance: dict[str, tuple[str, float]] = {}
        self._missing_nodes: dict[str, float] = {}
        self._node_of: dict[str, str] = {}
        """instance id -> the node name it was resolved from (so listing gives it back)."""

    # -- the contract ---------------------------------------------------------------------

    async def list_routes(self) -> Collection[Route]:
        """The cluster's instance and blackhole routes, one per destination, nodes resolved.

        A destination missing from some selected table is left out, so routectl creates it
        again and the create fills the gap; one that points at different instances in different
        tables is listed without a target, so routectl replaces it.
        """
        tables = await self._load_tables()
        by_destination: dict[str, list[_Entry]] = {}
        for table in tables:
            for key, entry in table.entries.items():
                by_destination.setdefault(key, []).append(entry)
        instances = await self._resolve_ids(
            {e.instance_id for es in by_destination.values() for e in es if e.instance_id}
        )
        routes: list[Route] = []
        for entries in by_destination.values():
            destination = entries[0].destination
            name = f"{self.cluster_name}-{destination}"
            nodes: set[str] = set()
            blackhole = False
            for entry in entries:
                instance = instances.get(entry.instance_id)
                if entry.blackhole or instance is None or not instance.alive:
                    blackhole = True
                else:
                    nodes.add(self._node_name(instance))
            if blackhole:
                routes.append(
                    Route(target_node="", destination_cidr=destination, name=name, blackhole=True)
                )
            elif len(nodes) > 1:
                _log.warning(
                    "Route to %s targets different nodes in different tables: %s",
                    destination,
                    ", ".join(sorted(nodes)),
                )
                routes.append(Route(target_node="", destination_cidr=destination, name=name))
            elif len(entries) < len(tables):
                _log.info(
                    "Route to %s is missing from %d of %d route tables; it will be created again",
                    destination,
                    len(tables) - len(entries),
                    len(tables),
                )
            else:
                (node,) = nodes
                routes.append(Route(target_node=node, destination_cidr=destination, name=name))
        return routes

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Route ``route.destination_cidr`` to the node's instance in every selected table.

        The instance's source/destination check is turned off first (only if it is on). A table
        already routing the CIDR to the same instance is fine; a blackhole is replaced; another
        instance's route raises :class:`RouteAlreadyExistsError` (routectl deletes it first).
        ``name_hint`` is not used: EC2 routes have no names.
        """
        del name_hint
        network = self._network(route.destination_cidr)
        if not route.target_node:
            raise ProviderTerminalError(f"route to {route.destination_cidr} has no target node")
        tables = await self._write_tables()
        if not tables:
            raise ProviderTerminalError(self._no_tables_message())
        instance = await self._resolve_node(route.target_node)
        if instance is None:
            raise ProviderError(
                f"no EC2 instance found for node {route.target_node!r} "
                "(by private DNS name or Name tag)"
            )
        await self._disable_source_dest_check(instance)
        conflicts: list[str] = []
        for table in tables:
            conflict = await self._create_in_table(table, network=network, instance=instance)
            if conflict:
                conflicts.append(conflict)
        if conflicts:
            raise RouteAlreadyExistsError(
                f"route to {network} already exists for another target: {'; '.join(conflicts)}"
            )

    async def delete_route(self, route: Route) -> None:
        """Delete the route from every selected table that has it.

        A table whose route to that CIDR now targets a different, live node is left alone.
        Raises :class:`RouteNotFoundError` when no table had it.
        """
        network = self._network(route.destination_cidr)
        key = str(network)
        deleted = False
        for table in await self._write_tables():
            entry = table.entries.get(key)
            if entry is None or not self._may_delete(entry, route):
                continue
            try:
                await self._route_call(
                    "DeleteRoute", table.id, entry.destination, ipv6=entry.ipv6, instance_id=""
                )
            except ProviderError as err:
                if _cause_code(err) != "InvalidRoute.NotFound":
                    self._forget_tables_if_gone(err)
                    raise
            else:
                deleted = True
            table.entries.pop(key, None)
        if not deleted:
            raise RouteNotFoundError(
                f"no route to {route.destination_cidr} in the route tables of cluster "
                f"{self.cluster_name}"
            )

    async def aclose(self) -> None:
        """Close the EC2 client; calling it again does nothing."""
        self._closed = True
        async with self._client_lock:
            stack, self._stack, self._ec2 = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    # -- EC2 calls --------------------------------------------------------------------------

    async def _client(self) -> EC2Client:
        if self._closed:
            raise ProviderTerminalError("provider aws is closed")
        async with self._client_lock:
            if self._ec2 is None:
                stack = contextlib.AsyncExitStack()
                config = AioConfig(
                    # routectl's RateLimitedProvider retries; botocore must not retry as well.
                    retries={"mode": "standard", "total_max_attempts": 1},
                    connect_timeout=10,
                    read_timeout=30,
                )
                try:
                    self._ec2 = await stack.enter_async_context(
                        self._session.create_client(
                            "ec2",
                            region_name=self.options.region,
                            endpoint_url=self.options.endpoint_url or None,
                            config=config,
                        )
                    )
                except BotoCoreError as exc:
                    await stack.aclose()
                    raise map_botocore_error("client", exc) from exc
                self._stack = stack
            return self._ec2

    async def _call(self, operation: str, call: Callable[[EC2Client], Awaitable[T]]) -> T:
        """Make one EC2 call; botocore errors leave as routectl errors (cause chained)."""
        ec2 = await self._client()
        try:
            return await call(ec2)
        except ClientError as exc:
            raise map_client_error(operation, exc, now=_wall_clock()) from exc
        except BotoCoreError as exc:
            raise map_botocore_error(operation, exc) from exc

    async def _describe_route_tables(self, filters: list[FilterTypeDef]) -> list[RouteTableTypeDef]:
        async def fetch(ec2: EC2Client) -> list[RouteTableTypeDef]:
            found: list[RouteTableTypeDef] = []
            async for page in ec2.get_paginator("describe_route_tables").paginate(Filters=filters):
                found.extend(page.get("RouteTables", []))
            return found

        return await self._call("DescribeRouteTables", fetch)

    async def _describe_instances(self, filters: list[FilterTypeDef]) -> list[_Instance]:
        async def fetch(ec2: EC2Client) -> list[InstanceTypeDef]:
            found: list[InstanceTypeDef] = []
            async for page in ec2.get_paginator("describe_instances").paginate(Filters=filters):
                for reservation in page.get("Reservations", []):
                    found.extend(reservation.get("Instances", []))
            return found

        raw = await self._call("DescribeInstances", fetch)
        now = asyncio.get_running_loop().time()
        instances = [_parse_instance(item) for item in raw if item.get("InstanceId")]
        for instance in instances:
            self._instances[instance.id] = (instance, now)
            self._missing_ids.pop(instance.id, None)
        return instances

    # -- route tables -----------------------------------------------------------------------

    async def _load_tables(self) -> list[_Table]:
        filters: list[FilterTypeDef] = [{"Name": "tag-key", "Values": [self.tag_key]}]
        if self.options.vpc_id:
            filters.append({"Name": "vpc-id", "Values": [self.options.vpc_id]})
        raw = await self._describe_route_tables(filters)
        tables = [t for t in (self._parse_table(item) for item in raw) if t is not None]
        tables.sort(key=lambda t: t.id)
        self._tables = tables
        self._tables_stamp = asyncio.get_running_loop().time()
        return tables

    async def _write_tables(self) -> list[_Table]:
        """The selected tables: the last listing's if fresh (kept current with our writes)."""
        stamp = self._tables_stamp
        now = asyncio.get_running_loop().time()
        if stamp is not None and now - stamp < self.options.cache_seconds:
            return self._tables
        return await self._load_tables()

    def _forget_tables_if_gone(self, err: ProviderError) -> None:
        if _cause_code(err) == "InvalidRouteTableID.NotFound":
            self._tables_stamp = None

    def _parse_table(self, raw: RouteTableTypeDef) -> _Table | None:
        tags = {tag.get("Key", ""): tag.get("Value", "") for tag in raw.get("Tags", [])}
        if tags.get(self.tag_key, "").strip().lower() not in CLUSTER_TAG_VALUES:
            return None
        table = _Table(
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
            table.entries[key] = _Entry(
                destination=destination,
                ipv6=bool(ipv6_destination),
                instance_id=instance_id,
                blackhole=blackhole,
            )
        return table

    async def _fresh_entry(self, table: _Table, key: str) -> tuple[_Entry | None, bool]:
        """Re-read ``table``; its entry for ``key`` and whether a foreign route holds ``key``."""
        raw = await self._describe_route_tables([{"Name": "route-table-id", "Values": [table.id]}])
        for item in raw:
            fresh = self._parse_table(item)
            if fresh is not None and fresh.id == table.id:
                table.entries, table.foreign = fresh.entries, fresh.foreign
                return fresh.entries.get(key), key in fresh.foreign
        return None, False

    async def _create_in_table(
        self,
        table: _Table,
        *,
        network: ipaddress.IPv4Network | ipaddress.IPv6Network,
        instance: _Instance,
    ) -> str:
        """Create the route in one table; a description of a conflicting route, or ``""``."""
        key = str(network)
        ipv6 = network.version == 6  # noqa: PLR2004 -- IP version
        cached = table.entries.get(key)
        if cached is not None and cached.instance_id == instance.id and not cached.blackhole:
            return ""  # listed moments ago (or created by us): nothing to do in this table
        try:
            await self._route_call("CreateRoute", table.id, key, ipv6=ipv6, instance_id=instance.id)
        except ProviderError as err:
            if _cause_code(err) != "RouteAlreadyExists":
                self._forget_tables_if_gone(err)
                raise
            existing, foreign = await self._fresh_entry(table, key)
            if foreign:
                raise ProviderTerminalError(
                    f"route table {table.id} routes {key} to a gateway or peering connection; "
                    "routectl does not touch such routes"
                ) from err
            if existing is None:
                raise ProviderError(
                    f"route to {key} in {table.id} changed while it was being created"
                ) from err
            if existing.instance_id == instance.id and not existing.blackhole:
                return ""
            known = self._instances.get(existing.instance_id)
            if existing.blackhole or (known is not None and not known[0].alive):
                _log.info("Replacing blackhole route to %s in %s", key, table.id)
                await self._route_call(
                    "ReplaceRoute", table.id, key, ipv6=ipv6, instance_id=instance.id
                )
            else:
                return f"{table.id} routes it to instance {existing.instance_id}"
        table.entries[key] = _Entry(
            destination=key, ipv6=ipv6, instance_id=instance.id, blackhole=False
        )
        return ""

    async def _route_call(
        self, operation: str, table_id: str, destination: str, *, ipv6: bool, instance_id: str
    ) -> None:
        """CreateRoute, ReplaceRoute or DeleteRoute of one destination in one table."""
        if operation == "DeleteRoute":
            delete: DeleteRouteRequestTypeDef = {"RouteTableId": table_id}
            if ipv6:
                delete["DestinationIpv6CidrBlock"] = destination
            else:
                delete["DestinationCidrBlock"] = destination
            await self._call(operation, lambda ec2: ec2.delete_route(**delete))
        elif operation == "ReplaceRoute":
            replace: ReplaceRouteRequestTypeDef = {
                "RouteTableId": table_id,
                "InstanceId": instance_id,
            }
            if ipv6:
                replace["DestinationIpv6CidrBlock"] = destination
            else:
                replace["DestinationCidrBlock"] = destination
            await self._call(operation, lambda ec2: ec2.replace_route(**replace))
        else:
            create: CreateRouteRequestTypeDef = {
                "RouteTableId": table_id,
                "InstanceId": instance_id,
            }
            if ipv6:
                create["DestinationIpv6CidrBlock"] = destination
            else:
                create["DestinationCidrBlock"] = destination
            await self._call(operation, lambda ec2: ec2.create_route(**create))

    def _may_delete(self, entry: _Entry, route: Route) -> bool:
        """Whether ``entry`` is the route routectl asked to delete (not another node's now)."""
        if not route.target_node or entry.blackhole or not entry.instance_id:
            return True
        known = self._instances.get(entry.instance_id)
        if known is None or not known[0].alive:
            return True
        return self._node_name(known[0]) == route.target_node

    def _no_tables_message(self) -> str:
        where = f" in {self.options.vpc_id}" if self.options.vpc_id else ""
        return (
            f"no route table{where} has the tag {self.tag_key}=owned (or =shared); "
            "tag the cluster's route tables"
        )

    # -- instances --------------------------------------------------------------------------

    async def _resolve_ids(self, ids: Collection[str]) -> dict[str, _Instance]:
        """Instances by id: cached ones if fresh, the rest in one batched lookup."""
        loop = asyncio.get_running_loop()
        now, ttl = loop.time(), self.options.cache_seconds

        def fresh(stamp: float) -> bool:
            return now - stamp < ttl

        need = sorted(
            i
            for i in ids
            if not (
                (i in self._instances and self._instances[i][0].state == "terminated")
                or (i in self._instances and fresh(self._instances[i][1]))
                or (i in self._missing_ids and fresh(self._missing_ids[i]))
            )
        )
        found: set[str] = set()
        for chunk in _chunks(need, _FILTER_VALUES_LIMIT):
            instances = await self._describe_instances([{"Name": "instance-id", "Values": chunk}])
            found.update(instance.id for instance in instances)
        for missing in set(need) - found:
            self._instances.pop(missing, None)
            self._missing_ids[missing] = now
        return {i: self._instances[i][0] for i in ids if i in self._instances}

    async def _resolve_node(self, node: str) -> _Instance | None:
        """The live instance of ``node``: by private DNS name, else by ``Name`` tag."""
        now, ttl = asyncio.get_running_loop().time(), self.options.cache_seconds
        hit = self._node_instance.get(node)
        if hit is not None and now - hit[1] < ttl:
            cached = self._instances.get(hit[0])
            if cached is not None and cached[0].alive:
                return cached[0]
        missed = self._missing_nodes.get(node)
        if missed is not None and now - missed < ttl:
            return None
        live: FilterTypeDef = {"Name": "instance-state-name", "Values": _LIVE_STATES}
        candidates = await self._describe_instances(
            [{"Name": "private-dns-name", "Values": [node]}, live]
        )
        if not candidates:
            candidates = await self._describe_instances(
                [{"Name": "tag:Name", "Values": [node]}, live]
            )
        candidates = [c for c in candidates if c.alive]
        if not candidates:
            self._missing_nodes[node] = now
            return None
        if len(candidates) > 1:
            raise ProviderTerminalError(
                f"node {node!r} matches {len(candidates)} EC2 instances "
                f"({', '.join(sorted(c.id for c in candidates))}); name nodes uniquely"
            )
        (instance,) = candidates
        self._missing_nodes.pop(node, None)
        self._node_instance[node] = (instance.id, now)
        self._node_of[instance.id] = node
        return instance

    def _node_name(self, instance: _Instance) -> str:
        return self._node_of.get(instance.id) or instance.private_dns_name or instance.name_tag

    async def _disable_source_dest_check(self, instance: _Instance) -> None:
        """Let the instance forward pod traffic; only calls EC2 when the check is on."""
        if not instance.source_dest_check:
            return
        now = asyncio.get_running_loop().time()
        # Marked off before the call, so concurrent creates for the node make only one call.
        self._instances[instance.id] = (dataclasses.replace(instance, source_dest_check=False), now)
        try:
            await self._call(
                "ModifyInstanceAttribute",
                lambda ec2: ec2.modify_instance_attribute(
                    InstanceId=instance.id, SourceDestCheck={"Value": False}
                ),
            )
        except ProviderError:
            self._instances[instance.id] = (instance, now)
            raise
        _log.info("Disabled the source/destination check of instance %s", instance.id)

    @staticmethod
    def _network(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        try:
            return parse_cidr(cidr)
        except ValueError as exc:
            raise ProviderTerminalError(f"invalid destination CIDR {cidr!r}") from exc


def _parse_instance(raw: InstanceTypeDef) -> _Instance:
    tags = {tag.get("Key", ""): tag.get("Value", "") for tag in raw.get("Tags", [])}
    return _Instance(
        id=raw.get("InstanceId", ""),
        private_dns_name=raw.get("PrivateDnsName", ""),
        name_tag=tags.get("Name", ""),
        state=raw.get("State", {}).get("Name", ""),
        source_dest_check=bool(raw.get("SourceDestCheck", True)),
    )

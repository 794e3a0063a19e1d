"""The ``aws`` provider: a cluster's pod routes as instance routes in tagged VPC route tables.

Like cloud-provider-aws, ownership is at table level: a table is the cluster's when it has the
tag ``kubernetes.io/cluster/<cluster-name>`` with the value ``owned`` or ``shared`` (and lies
in the ``vpc-id`` option's VPC, if set). Unlike it, any number of tables is fine: every route
goes into every selected table. In those tables, routes whose target is an instance (or that
are blackholes) are the cluster's; gateway, NAT, peering, local and propagated routes are never
listed nor touched, and untagged tables are never written.

Nodes are EC2 instances named by one rule, the ``node-name`` option: the private DNS name (the
kubelet's default), the ``Name`` tag or the instance id. The same rule maps listed routes back
to Nodes, so a fresh instance of the provider (a restart, a failover) lists every route under
the name it was made for. Lookups are cached for ``cache-seconds`` and batched: one listing
costs one ``DescribeRouteTables`` and at most one ``DescribeInstances``, however many routes
point at unknown or terminated instances. Calls are made once: botocore's own retries are off,
because routectl's ``CloudGate`` owns pacing and retries; every HTTP request spends
the request budget the factory was handed (``budget``), pages included.

This module owns routectl's provider contract (list, create, delete, close; replace as the
optional capability that repoints a route in one call) and composes the
parts: :mod:`routectl_aws.ec2` (the client and error mapping), :mod:`routectl_aws.tables`
(which tables and routes are the cluster's) and :mod:`routectl_aws.instances` (the instance
cache and node resolution).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import os
from collections.abc import Collection, Mapping

from routectl.cidr import parse_cidr
from routectl.errors import (
    ConfigError,
    ProviderError,
    ProviderTerminalError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import RequestBudget

# new_session and the CLUSTER_TAG_* constants stay importable from this module, as before the
# split into modules (the tests import new_session from here).
from routectl_aws.ec2 import (
    Ec2,
    cause_code,
    new_session as new_session,  # noqa: PLC0414 -- explicit re-export
)
from routectl_aws.instances import Instance, InstanceCache
from routectl_aws.options import AwsOptions, parse_options
from routectl_aws.tables import (
    CLUSTER_TAG_PREFIX as CLUSTER_TAG_PREFIX,  # noqa: PLC0414 -- explicit re-export
    CLUSTER_TAG_VALUES as CLUSTER_TAG_VALUES,  # noqa: PLC0414 -- explicit re-export
    Entry,
    RouteTables,
    Selection,
    Table,
)

__all__ = ["AwsProvider"]

_log = logging.getLogger(__name__)


class AwsProvider:
    """The ``aws`` route provider (options: ``region``, ``vpc-id``, ``endpoint-url``,
    ``cache-seconds``, ``node-name``); the class is its own factory."""

    def __init__(
        self,
        *,
        cluster_name: str,
        options: Mapping[str, str],
        budget: RequestBudget | None = None,
    ) -> None:
        if not cluster_name.strip():
            raise ConfigError("--provider-option: provider aws: the cluster name is empty")
        self.cluster_name = cluster_name
        self.options: AwsOptions = parse_options(options, environ=os.environ)
        self.tag_key = CLUSTER_TAG_PREFIX + (self.options.cluster_id or cluster_name)
        self.selection = Selection(
            tag_key=self.tag_key,
            legacy_id=self.options.cluster_id,
            pinned=self.options.route_table_id,
        )
        self._ec2 = Ec2(self.options, budget=budget)
        self._tables = RouteTables(self._ec2, tag_key=self.selection, options=self.options)
        self._instances = InstanceCache(self._ec2, options=self.options)

    # -- the contract ---------------------------------------------------------------------

    async def route_tables(self) -> dict[str, frozenset[str]]:
        """Every selected table by id, with the (canonical) destinations of its instance and
        blackhole routes, the kind routectl programs, whatever their CIDR (``routectl plan``
        tells how many of them this cluster owns); local and gateway routes are left out."""
        tables = await self._selected()
        return {t.id: frozenset(t.entries) for t in tables}

    async def _selected(self) -> list[Table]:
        """The selected tables, listed afresh; none is a terminal error, as upstream's
        ``findRouteTable`` fails ListRoutes: a wrong --cluster-name or tag must stop the sync
        before it writes a Node's condition, not show an empty cloud."""
        tables = await self._tables.load()
        if not tables:
            raise ProviderTerminalError(self._no_tables_message())
        return tables

    async def list_routes(self) -> Collection[Route]:
        """The cluster's instance and blackhole routes, one per destination, nodes resolved;
        a :class:`ProviderTerminalError` when no table is the cluster's.

        A destination missing from some selected table, or pointing at different instances in
        different tables, is listed without a target: routectl repoints it (one create per table
        that lacks it, nothing in the others) when a Node claims the CIDR, and deletes it from
        the tables that have it when none does, so a stale route left in one table is cleaned
        up as it would be in one table.
        """
        tables = await self._selected()
        by_destination: dict[str, list[Entry]] = {}
        for table in tables:
            for key, entry in table.entries.items():
                by_destination.setdefault(key, []).append(entry)
        instances = await self._instances.resolve_ids(
            {e.instance_id for es in by_destination.values() for e in es if e.instance_id}
        )
        routes: list[Route] = []
        for entries in by_destination.values():
            destination = entries[0].destination
            name = f"{self.cluster_name}-{destination}"
            nodes: set[str] = set()
            blackhole = nameless = False
            for entry in entries:
                instance = instances.get(entry.instance_id)
                if entry.blackhole or instance is None or not instance.alive:
                    blackhole = True
                elif node := self._instances.node_name(instance):
                    nodes.add(node)
                else:
                    nameless = True  # an appliance with no Node name: not a route of ours
            if nameless and not nodes and not blackhole:
                continue
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
                    "Route to %s is missing from %d of %d route tables; listed without a target "
                    "so that it is repaired, or deleted if no Node claims it",
                    destination,
                    len(tables) - len(entries),
                    len(tables),
                )
                routes.append(Route(target_node="", destination_cidr=destination, name=name))
            else:
                (node,) = nodes
                routes.append(Route(target_node=node, destination_cidr=destination, name=name))
        return routes

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Route ``route.destination_cidr`` to the node's instance in every selected table.

        The instance's source/destination check is turned off first (only if it is on). A table
        already routing the CIDR to the same instance is fine; a blackhole is replaced; another
        instance's route raises :class:`RouteAlreadyExistsError` naming it as ``holder``
        (routectl deletes it first).
        ``name_hint`` is not used: EC2 routes have no names.
        """
        del name_hint
        network = self._network(route.destination_cidr)
        if not route.target_node:
            raise ProviderTerminalError(f"route to {route.destination_cidr} has no target node")
        tables = await self._tables.for_write()
        if not tables:
            raise ProviderTerminalError(self._no_tables_message())
        instance = await self._instances.resolve_node(route.target_node)
        if instance is None:
            raise ProviderError(
                f"no EC2 instance found for node {route.target_node!r} "
                f"(by {self.options.node_name})"
            )
        await self._instances.disable_source_dest_check(instance)
        conflicts: list[str] = []
        for table in tables:
            conflict = await self._create_in_table(table, network=network, instance=instance)
            if conflict:
                conflicts.append(conflict)
        if conflicts:
            raise RouteAlreadyExistsError(
                f"route to {network} already exists for another target: {'; '.join(conflicts)}",
                holder=self._holder(tables, str(network), instance),
            )

    def _holder(self, tables: list[Table], key: str, instance: Instance) -> Route:
        """The route holding ``key`` instead of ``instance``, as :meth:`list_routes` would
        list it (no target unless it leads to a live instance with a Node name)."""
        name = f"{self.cluster_name}-{key}"
        for table in tables:
            entry = table.entries.get(key)
            if entry is None or (entry.instance_id == instance.id and not entry.blackhole):
                continue
            known = self._instances.known(entry.instance_id) if entry.instance_id else None
            if entry.blackhole or known is None or not known.alive:
                return Route(target_node="", destination_cidr=key, name=name, blackhole=True)
            node = self._instances.node_name(known)
            return Route(target_node=node, destination_cidr=key, name=name)
        return Route(target_node="", destination_cidr=key, name=name)

    async def delete_route(self, route: Route) -> None:
        """Delete the route from every selected table that has it.

        A table whose route to that CIDR now targets a different, live node is left alone.
        Raises :class:`RouteNotFoundError` when no table had it.
        """
        network = self._network(route.destination_cidr)
        key = str(network)
        deleted = False
        for table in await self._tables.for_write():
            entry = table.entries.get(key)
            if entry is None or not self._may_delete(entry, route):
                continue
            try:
                await self._ec2.route_call(
                    "DeleteRoute", table.id, entry.destination, ipv6=entry.ipv6, instance_id=""
                )
            except ProviderError as err:
                if cause_code(err) != "InvalidRoute.NotFound":
                    self._tables.forget_if_gone(err)
                    raise
            else:
                deleted = True
            table.entries.pop(key, None)
        if not deleted:
            raise RouteNotFoundError(
                f"no route to {route.destination_cidr} in the route tables of cluster "
                f"{self.cluster_name}"
            )

    # -- the replace capability ------------------------------------------------------------

    @property
    def supports_replace(self) -> bool:
        """Always: EC2's ``ReplaceRoute`` repoints a route in one call per table."""
        return True

    async def replace_route(self, old: Route, new: Route, *, name_hint: str) -> None:
        """Repoint the listed route ``old`` at ``new``'s instance with ``ReplaceRoute``.

        One call per table whose route to the destination is still ``old`` (the tables that
        miss it get a create); no gap in which the destination has no route, as delete and
        create would leave. Raises :class:`RouteNotFoundError`, changing nothing, when no
        table holds ``old`` any more (it is gone, or leads to another live node now).
        """
        del name_hint
        network = self._network(new.destination_cidr)
        if not new.target_node:
            raise ProviderTerminalError(f"route to {new.destination_cidr} has no target node")
        key = str(network)
        tables = await self._tables.for_write()
        held = [t for t in tables if self._holds(t.entries.get(key), old)]
        if not held:
            raise RouteNotFoundError(
                f"the route to {old.destination_cidr} via {old.target_node or 'nothing'} is "
                f"gone from the route tables of cluster {self.cluster_name}"
            )
        instance = await self._instances.resolve_node(new.target_node)
        if instance is None:
            raise ProviderError(
                f"no EC2 instance found for node {new.target_node!r} (by {self.options.node_name})"
            )
        await self._instances.disable_source_dest_check(instance)
        conflicts: list[str] = []
        for table in tables:
            if table in held:
                conflict = await self._replace_in_table(table, network=network, instance=instance)
            elif key not in table.entries:
                conflict = await self._create_in_table(table, network=network, instance=instance)
            else:
                conflict = f"{table.id} routes it to instance {table.entries[key].instance_id}"
            conflicts.extend([conflict] if conflict else [])
        if conflicts:
            raise RouteAlreadyExistsError(
                f"route to {network} already exists for another target: {'; '.join(conflicts)}",
                holder=self._holder(tables, key, instance),
            )

    async def aclose(self) -> None:
        """Close the EC2 client; calling it again does nothing."""
        await self._ec2.aclose()

    # -- writing ----------------------------------------------------------------------------

    async def _create_in_table(
        self,
        table: Table,
        *,
        network: ipaddress.IPv4Network | ipaddress.IPv6Network,
        instance: Instance,
    ) -> str:
        """Create the route in one table; a description of a conflicting route, or ``""``."""
        key = str(network)
        ipv6 = network.version == 6  # noqa: PLR2004 -- IP version
        cached = table.entries.get(key)
        if cached is not None and cached.instance_id == instance.id and not cached.blackhole:
            return ""  # listed moments ago (or created by us): nothing to do in this table
        try:
            await self._ec2.route_call(
                "CreateRoute", table.id, key, ipv6=ipv6, instance_id=instance.id
            )
        except ProviderError as err:
            if cause_code(err) != "RouteAlreadyExists":
                self._tables.forget_if_gone(err)
                raise
            existing, foreign = await self._tables.fresh_entry(table, key)
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
            known = self._instances.known(existing.instance_id)
            if existing.blackhole or (known is not None and not known.alive):
                _log.info("Replacing blackhole route to %s in %s", key, table.id)
                await self._ec2.route_call(
                    "ReplaceRoute", table.id, key, ipv6=ipv6, instance_id=instance.id
                )
            else:
                return f"{table.id} routes it to instance {existing.instance_id}"
        table.entries[key] = Entry(
            destination=key, ipv6=ipv6, instance_id=instance.id, blackhole=False
        )
        return ""

    async def _replace_in_table(
        self,
        table: Table,
        *,
        network: ipaddress.IPv4Network | ipaddress.IPv6Network,
        instance: Instance,
    ) -> str:
        """Repoint ``table``'s route to ``network`` at ``instance``; a conflict, or ``""``.

        A route that vanished since the listing is created instead.
        """
        key = str(network)
        entry = table.entries[key]
        if entry.instance_id == instance.id and not entry.blackhole:
            return ""
        try:
            await self._ec2.route_call(
                "ReplaceRoute",
                table.id,
                entry.destination,
                ipv6=entry.ipv6,
                instance_id=instance.id,
            )
        except ProviderError as err:
            if cause_code(err) != "InvalidRoute.NotFound":
                self._tables.forget_if_gone(err)
                raise
            table.entries.pop(key, None)
            return await self._create_in_table(table, network=network, instance=instance)
        table.entries[key] = dataclasses.replace(entry, instance_id=instance.id, blackhole=False)
        return ""

    def _holds(self, entry: Entry | None, route: Route) -> bool:
        """Whether ``entry`` is still the listed ``route`` (so replacing it is ours to do)."""
        return entry is not None and self._may_delete(entry, route)

    def _may_delete(self, entry: Entry, route: Route) -> bool:
        """Whether ``entry`` is the route routectl asked to delete (not another node's now)."""
        if not route.target_node or entry.blackhole or not entry.instance_id:
            return True
        known = self._instances.known(entry.instance_id)
        if known is None or not known.alive:
            return True
        return self._instances.node_name(known) == route.target_node

    def _no_tables_message(self) -> str:
        where = f" in {self.options.vpc_id}" if self.options.vpc_id else ""
        if self.options.route_table_id:
            return f"route table {self.options.route_table_id} (route-table-id) not found{where}"
        return (
            f"no route table{where} has the tag {self.tag_key}=owned (or =shared); "
            "tag the cluster's route tables"
        )

    @staticmethod
    def _network(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        try:
            return parse_cidr(cidr)
        except ValueError as exc:
            raise ProviderTerminalError(f"invalid destination CIDR {cidr!r}") from exc

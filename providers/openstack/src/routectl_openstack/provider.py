"""The ``openstack`` provider: a cluster's pod routes on a Neutron router, through openstacksdk.

Routes are the router's ``routes`` attribute, ``{destination, nexthop}`` pairs shared with
every other user of the router (other clusters, operators). Ownership: a route is this
cluster's only if its next hop lies in the Nodes' subnets (``node-cidrs``); no other route is
ever listed, replaced or removed. Next hops map to Nodes by address: the Nova server that
has the next hop as an address is the Node (named like the server); a next hop no server has
is a blackhole. Servers are listed at most every ``cache-seconds``.

Writes: with Neutron's ``extraroute-atomic`` extension, ``add_extraroutes`` and
``remove_extraroutes`` change only the routes named, so a batch of any size is one request
each. Without it, the whole table is read, edited and written back (``PUT`` of ``routes``)
under a lock, with ``If-Match: revision_number`` where Neutron supports it, so a concurrent
change by someone else fails the write (transient) instead of being overwritten. Neutron's
``max_routes`` quota is terminal and named; a batch fills the router up to it and reports
the rest. Every HTTP request spends routectl's request budget first.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import os
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from routectl.cidr import canonical, parse_cidr
from routectl.errors import ProviderError, ProviderTerminalError, RouteNotFoundError
from routectl.model import Route
from routectl.provider import BatchResult, RequestBudget
from routectl_openstack.cloud import OpenStackCloud
from routectl_openstack.options import OpenStackOptions, parse_options
from routectl_openstack.table import (
    Hop,
    as_route,
    checked_hops,
    checked_servers,
    claim,
    fitting,
    in_cidrs,
    named_nexthop,
    ours,
)

ATOMIC = "extraroute-atomic"
IF_MATCH = "revision-if-match"


@dataclasses.dataclass(slots=True)
class _Servers:
    """Nova servers: address -> name, name -> addresses; when they were listed."""

    by_ip: dict[str, str] = dataclasses.field(default_factory=dict)
    by_name: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    stamp: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class _Router:
    hops: list[Hop]
    revision: int | None


class OpenStackProvider:
    """The ``openstack`` route provider; the class is its own factory."""

    supports_batch = True

    def __init__(
        self,
        *,
        cluster_name: str,
        options: Mapping[str, str],
        budget: RequestBudget | None = None,
    ) -> None:
        self.cluster_name = cluster_name
        self.options: OpenStackOptions = parse_options(options, environ=os.environ)
        self._cloud = OpenStackCloud(self.options, budget=budget)
        self._servers = _Servers()
        self._servers_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()
        self._extensions: frozenset[str] | None = None

    # -- the contract ---------------------------------------------------------------------

    async def route_tables(self) -> dict[str, frozenset[str]]:
        """The router, by id, with the (canonical) destinations of its routes via the Nodes'
        subnets (the kind routectl programs), whatever their CIDR: ``routectl plan`` tells
        how many of them this cluster owns."""
        router = await self._router()
        cidrs = self.options.node_cidrs
        return {
            self.options.router_id: frozenset(
                canonical(hop.destination) for hop in router.hops if ours(hop, cidrs)
            )
        }

    async def list_routes(self) -> Collection[Route]:
        """The router's routes whose next hop is in the Nodes' subnets, Nodes resolved."""
        router = await self._router()
        servers = await self._fresh_servers()
        cidrs = self.options.node_cidrs
        return [as_route(hop, servers.by_ip) for hop in router.hops if ours(hop, cidrs)]

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Add ``destination -> the Node's address``; the same route again is fine."""
        del name_hint  # Neutron routes have no names
        wanted = Hop(self._destination(route), await self._nexthop(route) or "")
        async with self._write_lock:
            router = await self._router()
            if claim(router.hops, wanted, self.options.node_cidrs, self._servers.by_ip):
                await self._write(router, adds=[wanted], removes=[])

    async def delete_route(self, route: Route) -> None:
        """Remove the listed route, if the router still has it with the same next hop."""
        nexthop = named_nexthop(route) or await self._nexthop(route, missing_ok=True)
        gone = Hop(self._destination(route), nexthop or "")
        async with self._write_lock:
            router = await self._router()
            if not (nexthop and ours(gone, self.options.node_cidrs) and gone in router.hops):
                raise RouteNotFoundError(
                    f"the router has no route to {route.destination_cidr} via "
                    f"{nexthop or route.target_node or 'nothing'}"
                )
            await self._write(router, adds=[], removes=[gone])

    async def apply_routes(
        self, *, deletes: Sequence[Route], creates: Sequence[tuple[Route, str]]
    ) -> BatchResult:
        """Remove ``deletes`` and add ``creates`` in one write each (one in all, without the
        extension); report each create that cannot be made, by index."""
        servers = await self._fresh_servers()
        async with self._write_lock:
            router = await self._router()
            removes = self._removable(router.hops, deletes, servers)
            kept = [hop for hop in router.hops if hop not in removes]
            adds, failed = self._addable(kept, creates, servers)
            failed.update(await self._write_batch(router, adds=adds, removes=removes, kept=kept))
        return BatchResult(failed_creates=failed)

    async def aclose(self) -> None:
        """Close the SDK connection; calling it again does nothing."""
        await self._cloud.aclose()

    # -- planning a batch -----------------------------------------------------------------

    def _removable(
        self, present: Sequence[Hop], deletes: Sequence[Route], servers: _Servers
    ) -> list[Hop]:
        """The hops of ``deletes`` that are ours and still there ("not found" is success)."""
        found: list[Hop] = []
        for route in deletes:
            nexthop = named_nexthop(route) or self._address_of(route, servers)
            hop = Hop(self._destination(route), nexthop or "")
            if nexthop and ours(hop, self.options.node_cidrs) and hop in present:
                found.append(hop)
        return found

    def _addable(
        self, kept: Sequence[Hop], creates: Sequence[tuple[Route, str]], servers: _Servers
    ) -> tuple[list[tuple[int, Hop]], dict[int, ProviderError]]:
        """The creates to add, by index, and those that cannot be made."""
        adds: list[tuple[int, Hop]] = []
        failed: dict[int, ProviderError] = {}
        for index, (route, _hint) in enumerate(creates):
            try:
                nexthop = self._address_of(route, servers)
                if nexthop is None:
                    failed[index] = ProviderError(f"no server named {route.target_node!r} (yet)")
                    continue
                wanted = Hop(self._destination(route), nexthop)
                present = [*kept, *(hop for _, hop in adds)]
                if claim(present, wanted, self.options.node_cidrs, servers.by_ip):
                    adds.append((index, wanted))
            except ProviderError as exc:
                failed[index] = exc
        return adds, failed

    async def _write_batch(
        self,
        router: _Router,
        *,
        adds: list[tuple[int, Hop]],
        removes: list[Hop],
        kept: list[Hop],
    ) -> dict[int, ProviderError]:
        """Write the batch; on Neutron's route quota, as many adds as fit, the rest failed."""
        try:
            await self._write(router, adds=[hop for _, hop in adds], removes=removes)
        except ProviderTerminalError as exc:
            room = fitting(exc, len(kept))
            if room is None or not adds:
                raise
            if room == 0 or room >= len(adds):
                return dict.fromkeys((index for index, _ in adds), exc)
            fit, rest = adds[:room], adds[room:]
            await self._write(await self._router(), adds=[hop for _, hop in fit], removes=[])
            return dict.fromkeys((index for index, _ in rest), exc)
        return {}

    # -- the router -------------------------------------------------------------------------

    async def _router(self) -> _Router:
        """``GET /v2.0/routers/{id}``: its routes and revision."""
        router_id = self.options.router_id

        def show(connection: Any) -> _Router:
            raw = connection.network.get_router(router_id)
            return _Router(checked_hops(raw.routes), raw.revision_number)

        return await self._cloud.call("show router", show)

    async def _extensions_present(self) -> frozenset[str]:
        """Neutron's extensions, listed once."""
        if self._extensions is None:

            def listing(connection: Any) -> frozenset[str]:
                return frozenset(str(e.alias) for e in connection.network.extensions())

            self._extensions = await self._cloud.call("list extensions", listing)
        return self._extensions

    async def _write(self, router: _Router, *, adds: list[Hop], removes: list[Hop]) -> None:
        """Change the router's routes: atomically where Neutron can, else the whole table."""
        extensions = await self._extensions_present()
        router_id = self.options.router_id
        if ATOMIC in extensions:
            for verb, changed in (("remove", removes), ("add", adds)):
                if changed:
                    await self._atomic(verb, router_id, changed)
            return
        table = [hop.json() for hop in router.hops if hop not in removes]
        table += [hop.json() for hop in adds]
        revision = router.revision if IF_MATCH in extensions else None

        def update(connection: Any) -> None:
            connection.network.update_router(router_id, if_revision=revision, routes=table)

        await self._cloud.call("update router routes", update)

    async def _atomic(self, verb: str, router_id: str, changed: list[Hop]) -> None:
        body = {"router": {"routes": [hop.json() for hop in changed]}}

        def change(connection: Any) -> None:
            if verb == "add":
                connection.network.add_extra_routes_to_router(router_id, body)
            else:
                connection.network.remove_extra_routes_from_router(router_id, body)

        await self._cloud.call(f"{verb}_extraroutes", change)

    # -- servers ----------------------------------------------------------------------------

    async def _fresh_servers(self, *, older_than: float | None = None) -> _Servers:
        """The server map, listed again if older than ``cache-seconds``."""
        async with self._servers_lock:
            now = asyncio.get_running_loop().time()
            stamp = self._servers.stamp
            ttl = self.options.cache_seconds if older_than is None else older_than
            if stamp is not None and now - stamp < ttl:
                return self._servers

            def listing(connection: Any) -> list[tuple[str, list[str]]]:
                return checked_servers(
                    [(s.name, s.addresses) for s in connection.compute.servers(details=True)]
                )

            servers = _Servers(stamp=now)
            for name, addresses in await self._cloud.call("list servers", listing):
                servers.by_name.setdefault(name, []).extend(addresses)
                for address in addresses:
                    servers.by_ip[address] = name
            self._servers = servers
            return servers

    async def _nexthop(self, route: Route, *, missing_ok: bool = False) -> str | None:
        """The Node's address in the Nodes' subnets, of the destination's family."""
        servers = await self._fresh_servers()
        nexthop = self._address_of(route, servers)
        if nexthop is None and route.target_node not in servers.by_name:
            # A new Node: look again, but never more often than every few seconds (hccm #482).
            servers = await self._fresh_servers(older_than=min(self.options.cache_seconds, 5.0))
            nexthop = self._address_of(route, servers)
        if nexthop is None and not missing_ok:
            raise ProviderError(f"no server named {route.target_node!r} (yet)")
        return nexthop

    def _address_of(self, route: Route, servers: _Servers) -> str | None:
        """The address of ``route``'s Node in the Nodes' subnets, or None if it has none."""
        addresses = servers.by_name.get(route.target_node)
        if not addresses:
            return None
        version = ipaddress.ip_network(self._destination(route)).version
        cidrs = [c for c in self.options.node_cidrs if c.version == version]
        for address in addresses:
            if in_cidrs(address, cidrs):
                return address
        raise ProviderTerminalError(
            f"server {route.target_node!r} has no IPv{version} address in node-cidrs "
            f"{','.join(map(str, self.options.node_cidrs))}"
        )

    @staticmethod
    def _destination(route: Route) -> str:
        try:
            return str(parse_cidr(route.destination_cidr))  # as Kubernetes spells it: sloppy
        except ValueError as exc:
            raise ProviderTerminalError(
                f"invalid destination CIDR {route.destination_cidr!r}"
            ) from exc

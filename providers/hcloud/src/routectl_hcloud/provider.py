"""The ``hcloud`` provider: a cluster's pod routes as routes of a Hetzner Cloud network.

Like hcloud-cloud-controller-manager (``hcloud/routes.go``): a network route is
``{destination, gateway}``, the gateway being a server's private IP in that network, and a
route's node is the server whose private IP is its gateway. Routes have no names or tags, so
every route of the network is listed (named ``<gateway>-<destination>``) and routectl's
cluster-CIDR rule alone decides which ones it may delete; a gateway no server owns is listed
as a blackhole without target.

Servers are cached and ``GET /servers`` is sent at most every ``server-cache-seconds``, never
once per unknown gateway or node (hccm #482, #675). Route changes are actions that are polled
until they finish; this provider's own changes to the network are made one at a time, because
Hetzner refuses a change while another one runs (``locked``/``conflict``). IPv6 is refused
early: Hetzner networks do not route it. A delete removes only the route it was given: the
gateway in its listed name, or the target Node's IP; a route that now leads elsewhere is
"not found". Every HTTP request spends the request budget the factory was handed. Answers
are read by type (:class:`routectl.answers.Answer`): a field of the wrong shape is one
:class:`~routectl.errors.MalformedAnswerError` naming it, never an ``AttributeError``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import os
from collections.abc import Collection, Mapping

from routectl.cidr import canonical, network_or_none, parse_cidr
from routectl.errors import (
    MalformedAnswerError,
    ProviderError,
    ProviderTerminalError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import RequestBudget
from routectl_hcloud.api import Action, HcloudApi, api_code, token_source
from routectl_hcloud.options import HcloudOptions, environment_notes, parse_options

__all__ = ["HcloudProvider"]

_log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _NetworkRoute:
    destination: str
    """As the API spells it."""
    gateway: str


@dataclasses.dataclass(slots=True, kw_only=True)
class _Servers:
    """Servers attached to the network: private IP <-> server (node) name."""

    name_by_ip: dict[str, str] = dataclasses.field(default_factory=dict)
    ip_by_name: dict[str, str] = dataclasses.field(default_factory=dict)
    unattached: set[str] = dataclasses.field(default_factory=set)
    """Names of servers that exist but are not in the network."""
    stamp: float | None = None


class HcloudProvider:
    """The ``hcloud`` route provider (options: ``network``, ``endpoint``, ``token-file``,
    ``server-cache-seconds``, ``action-poll-seconds``); the class is its own factory."""

    def __init__(
        self,
        *,
        cluster_name: str,
        options: Mapping[str, str],
        budget: RequestBudget | None = None,
    ) -> None:
        self.cluster_name = cluster_name
        self.options: HcloudOptions = parse_options(options, environ=os.environ)
        ignored, unknown = environment_notes(os.environ)
        for line in ignored:
            _log.info("%s", line)
        for line in unknown:
            _log.warning("%s", line)
        self._api = HcloudApi(
            endpoint=self.options.endpoint,
            token=token_source(path=self.options.token_file, environ=os.environ),
            poll_seconds=self.options.action_poll_seconds,
            budget=budget,
        )
        self._network_id: int | None = self.options.network_id
        self._routes: dict[str, _NetworkRoute] | None = None
        """The network's routes as last seen (kept current with our own changes)."""
        self._servers = _Servers()
        self._servers_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()

    # -- the contract ---------------------------------------------------------------------

    async def list_routes(self) -> Collection[Route]:
        """Every route of the network, its gateway mapped to a server (node) name."""
        routes = await self._load_routes()
        servers = await self._fresh_servers()
        return [self._as_route(route, servers) for route in routes.values()]

    @staticmethod
    def _as_route(route: _NetworkRoute, servers: _Servers) -> Route:
        """The network's route as routectl sees it: its gateway's server is its node."""
        node = servers.name_by_ip.get(route.gateway, "")
        return Route(
            target_node=node,
            destination_cidr=route.destination,
            name=f"{route.gateway}-{route.destination}",
            blackhole=not node,
        )

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Add ``destination -> the node's private IP`` to the network and wait for it.

        A route to the same gateway already there is fine; one to another gateway raises
        :class:`RouteAlreadyExistsError` naming it as ``holder`` (routectl deletes it first
        if it is another Node's). ``name_hint`` is not used:
        network routes have no names.
        """
        del name_hint
        network = self._network(route.destination_cidr)
        if network.version != 4:  # noqa: PLR2004 -- IP version
            raise ProviderTerminalError(
                f"route to {route.destination_cidr}: Hetzner Cloud networks do not route IPv6; "
                "give nodes IPv4 pod CIDRs only"
            )
        if not route.target_node:
            raise ProviderTerminalError(f"route to {route.destination_cidr} has no target node")
        gateway = await self._gateway_of(route.target_node)
        network_id = await self._network_id_resolved()
        destination = str(network)
        async with self._write_lock:
            try:
                answer = await self._api.request(
                    "POST",
                    f"/networks/{network_id}/actions/add_route",
                    operation="add_route",
                    body={"destination": destination, "gateway": gateway},
                )
            except ProviderError as err:
                if api_code(err) not in {"invalid_input", "uniqueness_error"}:
                    raise
                await self._explain_rejected_add(err, destination=destination, gateway=gateway)
                return
            action = self._api.answer(answer, operation="add_route").field("action")
            await self._api.wait(Action.parse(action), operation="add_route")
        if self._routes is not None:
            self._routes[destination] = _NetworkRoute(destination=destination, gateway=gateway)

    async def delete_route(self, route: Route) -> None:
        """Delete the network's route to ``route.destination_cidr`` and wait for it.

        The gateway is the one last listed (as hccm does); a route that is gone, or that now
        leads to another node, raises :class:`RouteNotFoundError`.
        """
        key = canonical(route.destination_cidr)
        known = (self._routes or {}).get(key)
        if known is None:
            known = (await self._load_routes()).get(key)
        if known is None or not await self._leads_to(known, route):
            raise RouteNotFoundError(f"no route to {route.destination_cidr} in the network")
        network_id = await self._network_id_resolved()
        async with self._write_lock:
            try:
                answer = await self._api.request(
                    "POST",
                    f"/networks/{network_id}/actions/delete_route",
                    operation="delete_route",
                    body={"destination": known.destination, "gateway": known.gateway},
                )
            except ProviderError as err:
                if api_code(err) not in {"not_found", "invalid_input"}:
                    raise
                if key not in await self._load_routes():
                    raise RouteNotFoundError(
                        f"no route to {route.destination_cidr} in the network"
                    ) from err
                raise
            action = self._api.answer(answer, operation="delete_route").field("action")
            await self._api.wait(Action.parse(action), operation="delete_route")
        if self._routes is not None:
            self._routes.pop(key, None)

    async def aclose(self) -> None:
        """Close the HTTP connection pool; calling it again does nothing."""
        await self._api.aclose()

    # -- the network ------------------------------------------------------------------------

    async def _network_id_resolved(self) -> int:
        """The network's id; a name is looked up once."""
        if self._network_id is not None:
            return self._network_id
        name = self.options.network
        found = await self._api.pages(
            "/networks", "networks", operation="list networks", params={"name": name}
        )
        matches = [n for n in found if n.field("name").text(default="") == name]
        if len(matches) != 1:
            raise ProviderTerminalError(
                f"Hetzner Cloud: {len(matches) or 'no'} networks named {name!r}; "
                "set the option network to the network's id"
            )
        self._network_id = matches[0].field("id").integer()
        return self._network_id

    async def _load_routes(self) -> dict[str, _NetworkRoute]:
        """``GET /networks/{id}``: its routes by canonical destination."""
        network_id = await self._network_id_resolved()
        try:
            answer = await self._api.request(
                "GET", f"/networks/{network_id}", operation="get network"
            )
        except ProviderError as err:
            if api_code(err) == "not_found":
                raise ProviderTerminalError(
                    f"Hetzner Cloud: network {network_id} does not exist"
                ) from err
            raise
        network = self._api.answer(answer, operation="get network").field("network")
        routes: dict[str, _NetworkRoute] = {}
        for raw in network.field("routes").items():
            destination = raw.field("destination")
            gateway = raw.field("gateway").text()
            if network_or_none(destination.text()) is None:
                raise MalformedAnswerError(
                    f"Hetzner Cloud get network: malformed answer: {destination.path} is "
                    f"{destination.value!r:.60}, not a CIDR",
                    field=destination.path,
                )
            routes[canonical(destination.text())] = _NetworkRoute(
                destination=destination.text(), gateway=gateway
            )
        self._routes = routes
        return routes

    async def _explain_rejected_add(
        self, err: ProviderError, *, destination: str, gateway: str
    ) -> None:
        """add_route said invalid input: the route may exist already. Decide what it means."""
        existing = (await self._load_routes()).get(destination)
        if existing is None:
            raise ProviderTerminalError(str(err)) from err  # e.g. overlaps a subnet
        if existing.gateway == gateway:
            return
        raise RouteAlreadyExistsError(
            f"route to {destination} already exists via {existing.gateway}",
            holder=self._as_route(existing, await self._fresh_servers()),
        ) from err

    async def _leads_to(self, known: _NetworkRoute, route: Route) -> bool:
        """Whether the network's route ``known`` is the route routectl asked to delete.

        A listed route names its gateway (``<gateway>-<destination>``): it must still be that
        gateway. Otherwise the gateway must be the target Node's private IP now.
        """
        gateway, _, destination = route.name.partition("-")
        if network_or_none(destination) is not None and canonical(destination) == canonical(
            known.destination
        ):
            return gateway == known.gateway
        if not route.target_node:
            return False
        servers = await self._fresh_servers()
        return servers.ip_by_name.get(route.target_node) == known.gateway

    # -- servers ----------------------------------------------------------------------------

    async def _fresh_servers(self) -> _Servers:
        """The server map, fetched again only if older than ``server-cache-seconds``."""
        async with self._servers_lock:
            now = asyncio.get_running_loop().time()
            stamp = self._servers.stamp
            if stamp is not None and now - stamp < self.options.server_cache_seconds:
                return self._servers
            network_id = await self._network_id_resolved()
            found = await self._api.pages("/servers", "servers", operation="list servers")
            servers = _Servers(stamp=now)
            for server in found:
                name = server.field("name").text()
                ip = next(
                    (
                        net.field("ip").text(default="")
                        for net in server.field("private_net").items()
                        if net.field("network").integer() == network_id
                    ),
                    "",
                )
                if not ip:
                    servers.unattached.add(name)
                    continue
                servers.name_by_ip[ip] = name
                servers.ip_by_name[name] = ip
            self._servers = servers
            return servers

    async def _gateway_of(self, node: str) -> str:
        """The node's server's private IP in the network."""
        servers = await self._fresh_servers()
        ip = servers.ip_by_name.get(node)
        if ip:
            return ip
        if node in servers.unattached:
            raise ProviderError(
                f"server {node!r} is not attached to network {self.options.network}"
            )
        raise ProviderError(
            f"no server named {node!r} (servers are looked up again at most every "
            f"{self.options.server_cache_seconds:g}s)"
        )

    @staticmethod
    def _network(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        try:
            return parse_cidr(cidr)
        except ValueError as exc:
            raise ProviderTerminalError(f"invalid destination CIDR {cidr!r}") from exc

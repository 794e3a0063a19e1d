"""The ``gce`` provider: a cluster's pod routes as VPC routes, as cloud-provider-gcp makes them.

Routes (cloud-provider-gcp@4e245312 ``providers/gce/gce_routes.go``): named
``<cluster name, first 26 characters>-<Node UID>``, described ``k8s-node-route``, in the
cluster's network, priority 1000, next hop the Node's instance (by its full URL). A table the
GCE CCM wrote is adopted without a write, and the CCM would adopt ours. A name hint that is
not a UID (routectl passes the Node's UID) and the IPv6 route of a dual-stack Node are named
``<prefix>-<a UUID derived from the hint>``, so every name of this cluster has one shape.

Ownership: the listing asks the API for routes whose name is ``<prefix>-<UUID>``, whose
description is ``k8s-node-route`` and whose network is the cluster's (one server-side
filter), so another cluster's routes in the same network (another prefix), a person's routes
and the network's own routes are never read as ours. The CCM's own filter,
``<prefix>-.*``, would also take cluster ``a-b``'s routes for cluster ``a``'s.

Nodes: a Node is named like its instance (the CCM: "NodeName == Instance Name on GCE"; a
Node name with a domain is looked up by its first label). A listed route's Node is the last
part of its next hop URL, free; a route whose instance is gone (the API's warning
``NEXT_HOP_INSTANCE_NOT_FOUND``) is a blackhole without target. A create needs the
instance's URL: learned from the listing, else looked up and cached (a filtered
``instances.list`` in ``local-zone``, or ``instances.aggregatedList`` over every zone when
``multizone``/``regional`` or no zone is set); look-ups asked for at once share one request
(:mod:`routectl_gce.batch`), so an instance costs one request at most. A next hop the API no
longer finds is forgotten.

Writes: a create first lists the routes to its destination in the network (GCE keeps
several routes to one destination side by side, so the name alone cannot tell a conflict;
creates at once share the listing):
ours to the same Node is done, ours to another Node is ``RouteAlreadyExistsError``, anyone
else's is terminal and named. Every insert and delete is an operation followed with
``globalOperations.wait`` until ``DONE``; its error is mapped (``QUOTA_EXCEEDED``
terminal, rate limits throttled). An operation still running when a call times out is
remembered and followed again by the retry, not inserted twice.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Callable, Collection, Mapping
from typing import Any

import google.auth.credentials
import requests
from google.cloud import compute_v1

from routectl.cidr import canonical, parse_cidr
from routectl.errors import (
    ConfigError,
    MalformedAnswerError,
    ProviderError,
    ProviderTerminalError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import RequestBudget
from routectl_gce.batch import Batch, Coalescer
from routectl_gce.cloud import REQUEST_SECONDS, Clients, GceCloud, operation_error
from routectl_gce.options import GceOptions, parse_options

DESCRIPTION = "k8s-node-route"
"""cloud-provider-gcp's ``k8sNodeRouteTag``."""
PRIORITY = 1000
PREFIX_LENGTH = 26
"""cloud-provider-gcp's ``truncateClusterName``."""
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
NAMESPACE = uuid.UUID("8b0e3c50-5f3e-4c1e-9a59-0c1f7a3e6d21")
"""Names derived from hints that are not UIDs (and IPv6 routes) are UUIDv5 in this space."""
GONE = "NEXT_HOP_INSTANCE_NOT_FOUND"
PAGE = 500
DONE = compute_v1.Operation.Status.DONE
BATCH = 100
"""Names or destinations one look-up asks for at most (its filter stays short)."""


def route_prefix(cluster_name: str) -> str:
    """The first 26 characters of the cluster's name: the start of its routes' names."""
    prefix = cluster_name[:PREFIX_LENGTH]
    if not re.fullmatch(r"[a-z]([-a-z0-9]*)", prefix):
        raise ConfigError(
            f"--cluster-name={cluster_name!r}: provider gce names routes after the cluster, so "
            "the name must start with a lower-case letter and hold only a-z, 0-9 and '-'"
        )
    return prefix


def route_name(prefix: str, name_hint: str, *, version: int) -> str:
    """``<prefix>-<Node UID>`` as the CCM names it; a UUID from the hint where that cannot be."""
    hint = name_hint.lower()
    if version == 4 and re.fullmatch(UUID, hint):  # noqa: PLR2004
        return f"{prefix}-{hint}"
    return f"{prefix}-{uuid.uuid5(NAMESPACE, f'{name_hint}/ipv{version}')}"


def instance_name(node: str) -> str:
    """The instance of a Node: its name up to the first dot (the CCM's canonicalization)."""
    return node.split(".", 1)[0]


class GceProvider:
    """The ``gce`` route provider; the class is its own factory.

    ``credentials`` (not given by routectl) replaces the ones the CCM would find: tests pass
    anonymous credentials for the fake API.
    """

    def __init__(
        self,
        *,
        cluster_name: str,
        options: Mapping[str, str],
        budget: RequestBudget | None = None,
        credentials: google.auth.credentials.Credentials | None = None,
    ) -> None:
        self.cluster_name = cluster_name
        self.options: GceOptions = parse_options(options)
        self.prefix = route_prefix(cluster_name)
        self._cloud = GceCloud(self.options, budget=budget, credentials=credentials)
        self._instances: dict[str, str] = {}
        """Instance name -> URL, learned from listings and look-ups."""
        self._lookups = Coalescer(self._instances_named, limit=BATCH)
        self._destinations = Coalescer(self._routes_to, limit=BATCH)
        self._pending: dict[str, str] = {}
        """Route name -> the insert operation a timed-out call left running."""

    # -- the contract ---------------------------------------------------------------------

    async def list_routes(self) -> Collection[Route]:
        """This cluster's routes in its network, one filtered listing (every page)."""
        clients = await self._cloud.clients()
        network = self.options.network(clients.project)
        ours = (
            f'(name eq "{self.prefix}-{UUID}") (description eq "{DESCRIPTION}") '
            f'(network eq ".*/{_path(network)}")'
        )
        return [self._as_route(raw) for raw in await self._routes(ours) if raw.next_hop_instance]

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Insert ``destination -> the Node's instance``; the same route again is done."""
        destination = _destination(route.destination_cidr)
        name = route_name(self.prefix, name_hint, version=parse_cidr(destination).version)
        pending = self._pending.get(name)
        if pending is not None:  # a retry after a timeout: that insert may have been made
            await self._settle(name, pending)
        if await self._already_there(route, destination):
            return
        hop = await self._instance_url(route.target_node)
        clients = await self._cloud.clients()
        body = compute_v1.Route(
            name=name,
            dest_range=destination,
            network=self.options.network(clients.project),
            next_hop_instance=hop,
            priority=PRIORITY,
            description=DESCRIPTION,
        )
        project = self._network_project(clients)
        try:
            operation = await self._cloud.request(
                "routes.insert",
                lambda c: c.routes.insert_unary(
                    project=project, route_resource=body, retry=None, timeout=REQUEST_SECONDS
                ),
                conflict=lambda message: RouteAlreadyExistsError(f"route {name}: {message}"),
            )
        except RouteAlreadyExistsError:
            await self._explain_name_taken(name, destination, route.target_node)
            return
        self._pending[name] = operation.name  # kept while the operation's end is unknown
        done = await self._follow(operation.name, operation)
        self._pending.pop(name, None)
        error = operation_error("routes.insert", done)
        if error is not None:
            if _codes(done) & {"RESOURCE_NOT_FOUND", "NOT_FOUND"}:
                self._instances.pop(instance_name(route.target_node), None)  # look up anew
            raise error

    async def delete_route(self, route: Route) -> None:
        """Delete our route to the CIDR if it still leads where ``route`` says."""
        destination = _destination(route.destination_cidr)
        clients = await self._cloud.clients()
        if route.name:
            found = [await self._get(route.name)]
        else:
            found = await self._routes(self._to([destination], clients))
        network = self.options.network(clients.project)
        victim = next((r for r in found if self._is(r, route, destination, network)), None)
        if victim is None:
            raise RouteNotFoundError(
                f"no route of cluster {self.cluster_name!r} to {destination} via "
                f"{route.target_node or 'a missing instance'}"
            )
        project = self._network_project(clients)

        def gone(message: str) -> RouteNotFoundError:
            return RouteNotFoundError(f"route {victim.name}: {message}")

        operation = await self._cloud.request(
            "routes.delete",
            lambda c: c.routes.delete_unary(
                project=project, route=victim.name, retry=None, timeout=REQUEST_SECONDS
            ),
            not_found=gone,
        )
        done = await self._follow(operation.name, operation)
        error = operation_error("routes.delete", done)
        if error is not None and _codes(done) & {"RESOURCE_NOT_FOUND", "NOT_FOUND"}:
            raise gone("deleted meanwhile") from error
        if error is not None:
            raise error

    async def aclose(self) -> None:
        """Close the SDK's sessions and the thread pool; calling it again does nothing."""
        await self._lookups.aclose()
        await self._destinations.aclose()
        await self._cloud.aclose()

    # -- reading routes -------------------------------------------------------------------

    async def _routes(
        self,
        expression: str | Callable[[], str],
        *,
        before_send: Callable[[], object] | None = None,
    ) -> list[compute_v1.Route]:
        """Every route passing ``expression`` (read when the first page is sent), page by
        page, one paced request each."""
        clients = await self._cloud.clients()
        project = self._network_project(clients)
        found: list[compute_v1.Route] = []
        token = ""
        while True:

            def send(c: Clients, token: str = token) -> Any:
                text = expression() if callable(expression) else expression
                request = compute_v1.ListRoutesRequest(
                    project=project, filter=text, max_results=PAGE, page_token=token
                )
                return c.routes.list(request=request, retry=None, timeout=REQUEST_SECONDS)

            page = await self._cloud.request("routes.list", send, before_send=before_send)
            before_send = None
            found.extend(_checked(raw, f"items[{index}]") for index, raw in enumerate(page.items))
            token = page.next_page_token
            if not token:
                return found

    async def _get(self, name: str) -> compute_v1.Route:
        clients = await self._cloud.clients()
        project = self._network_project(clients)
        return await self._cloud.request(
            "routes.get",
            lambda c: c.routes.get(
                project=project, route=name, retry=None, timeout=REQUEST_SECONDS
            ),
            not_found=lambda message: RouteNotFoundError(f"route {name}: {message}"),
        )

    def _as_route(self, raw: compute_v1.Route) -> Route:
        """A listed route: its Node is its instance's name, or none if the instance is gone."""
        gone = any(w.code == GONE for w in raw.warnings)
        instance = raw.next_hop_instance.rstrip("/").rsplit("/", 1)[-1]
        if not gone:
            self._instances[instance] = raw.next_hop_instance
        else:
            self._instances.pop(instance, None)
        return Route(
            name=raw.name,
            target_node="" if gone else instance,
            destination_cidr=raw.dest_range,
            blackhole=gone,
        )

    def _ours(self, raw: compute_v1.Route, network: str) -> bool:
        return (
            re.fullmatch(f"{re.escape(self.prefix)}-{UUID}", raw.name) is not None
            and raw.description == DESCRIPTION
            and _path(raw.network) == _path(network)
            and bool(raw.next_hop_instance)
        )

    def _is(self, raw: compute_v1.Route, route: Route, destination: str, network: str) -> bool:
        """``raw`` is our route to ``destination`` leading where ``route`` says."""
        if not self._ours(raw, network) or canonical(raw.dest_range) != destination:
            return False
        listed = self._as_route(raw)
        if route.target_node:
            return listed.target_node == instance_name(route.target_node)
        return listed.blackhole

    def _to(self, destinations: list[str], clients: Clients) -> str:
        """A filter for every route to one of ``destinations`` in the cluster's network."""
        network = self.options.network(clients.project)
        any_of = "|".join(re.escape(d) for d in destinations)
        return f'(destRange eq "({any_of})") (network eq ".*/{_path(network)}")'

    async def _routes_to(self, batch: Batch[str, list[compute_v1.Route]]) -> dict[str, Any]:
        """The routes to each destination of ``batch`` in the network: one listing for all."""
        clients = await self._cloud.clients()
        keys: list[str] = []

        def close() -> None:
            keys[:] = batch.close()

        found: dict[str, list[compute_v1.Route]] = {}
        for raw in await self._routes(lambda: self._to(keys, clients), before_send=close):
            found.setdefault(canonical(raw.dest_range), []).append(raw)
        return found

    async def _already_there(self, route: Route, destination: str) -> bool:
        """Whether our route to the Node exists; raise if someone else routes the CIDR."""
        clients = await self._cloud.clients()
        network = self.options.network(clients.project)
        wanted = instance_name(route.target_node)
        for raw in await self._destinations.get(destination) or []:
            if not self._ours(raw, network):
                hop = raw.next_hop_instance or raw.next_hop_ip or raw.next_hop_gateway or "?"
                raise ProviderTerminalError(
                    f"route {raw.name!r} (not this cluster's) already sends {destination} to "
                    f"{hop}; routectl does not route a CIDR beside it"
                )
            listed = self._as_route(raw)
            if listed.target_node == wanted:
                return True
            raise RouteAlreadyExistsError(
                f"route {raw.name} sends {destination} to "
                f"{listed.target_node or 'a missing instance'}, not {route.target_node}"
            )
        return False

    async def _explain_name_taken(self, name: str, destination: str, node: str) -> None:
        """A 409 on insert: done if the route with that name is the one we wanted."""
        try:
            raw = await self._get(name)
        except RouteNotFoundError as exc:  # an insert of that name is still running
            raise ProviderError(
                f"route name {name} is taken, but the route is not there yet"
            ) from exc
        listed = self._as_route(raw)
        if canonical(raw.dest_range) == destination and listed.target_node == instance_name(node):
            return
        raise ProviderError(
            f"route name {name} is taken by a route to {raw.dest_range} via "
            f"{listed.target_node or 'a missing instance'} (waiting for its delete)"
        )

    # -- operations and instances ---------------------------------------------------------

    async def _follow(
        self, name: str, operation: compute_v1.Operation | None = None
    ) -> compute_v1.Operation:
        """The operation once ``DONE`` (one ``wait`` request at a time)."""
        clients = await self._cloud.clients()
        project = self._network_project(clients)
        wait = self.options.wait_seconds
        while operation is None or operation.status != DONE:
            try:
                operation = await self._cloud.request(
                    "globalOperations.wait",
                    lambda c: c.operations.wait(
                        project=project, operation=name, retry=None, timeout=wait
                    ),
                    not_found=lambda message: _OperationGoneError(f"operation {name}: {message}"),
                )
            except ProviderError as exc:
                if not isinstance(exc.__cause__, requests.Timeout):
                    raise
                operation = None  # the API held the wait longer than we do: ask again
        return operation

    async def _settle(self, route: str, operation: str) -> None:
        """Follow an insert a timed-out call left running, before deciding anything anew."""
        with contextlib.suppress(_OperationGoneError):  # forgotten: the listing will tell
            await self._follow(operation)
        self._pending.pop(route, None)

    async def _instance_url(self, node: str) -> str:
        """The URL of the Node's instance: cached, else looked up (with any other instances
        asked for at the same time, in one request)."""
        name = instance_name(node)
        if name not in self._instances:
            links = await self._lookups.get(name) or []
            if not links:
                raise ProviderError(f"no instance named {name!r} (yet){self._where()}")
            if len(links) > 1:
                raise ProviderTerminalError(
                    f"instances named {name!r} in several zones ({', '.join(links)}): set "
                    "local-zone and multizone=false, or give Nodes unique names"
                )
            self._instances[name] = links[0]
        return self._instances[name]

    def _where(self) -> str:
        return f" in zone {self.options.local_zone}" if self.options.zonal else ""

    async def _instances_named(self, batch: Batch[str, list[str]]) -> dict[str, list[str]]:
        """The instances of each name of ``batch``: ``instances.list`` in ``local-zone``, or
        one ``instances.aggregatedList`` over every zone; a page each."""
        clients = await self._cloud.clients()
        project, zone = clients.project, self.options.local_zone
        keys: list[str] = []

        def close() -> None:
            keys[:] = batch.close()

        def names() -> str:
            return f'name eq "({"|".join(re.escape(k) for k in keys)})"'

        found: dict[str, list[str]] = {}
        token = ""
        while True:

            def send(c: Clients, token: str = token) -> Any:
                if self.options.zonal:
                    request = compute_v1.ListInstancesRequest(
                        project=project, zone=zone, filter=names(), page_token=token
                    )
                    return c.instances.list(request=request, retry=None, timeout=REQUEST_SECONDS)
                aggregated = compute_v1.AggregatedListInstancesRequest(
                    project=project, filter=names(), page_token=token
                )
                return c.instances.aggregated_list(
                    request=aggregated, retry=None, timeout=REQUEST_SECONDS
                )

            what = "instances.list" if self.options.zonal else "instances.aggregatedList"
            page = await self._cloud.request(what, send, before_send=close)
            close = _nothing
            listed = (
                page.items
                if self.options.zonal
                else [i for scoped in page.items.values() for i in scoped.instances]
            )
            for instance in listed:
                found.setdefault(str(instance.name), []).append(str(instance.self_link))
            token = page.next_page_token
            if not token:
                return {name: sorted(links) for name, links in found.items()}

    def _network_project(self, clients: Clients) -> str:
        """The project that holds the network, and so its routes and their operations."""
        network = self.options.network(clients.project)
        return network.split("/projects/", 1)[1].split("/", 1)[0]


class _OperationGoneError(ProviderError):
    """The API no longer knows the operation (they are kept for a while only)."""


def _checked(raw: compute_v1.Route, where: str) -> compute_v1.Route:
    """``raw`` if it has what every reader of a listed route needs (a name, a CIDR as its
    ``destRange``); else a :class:`MalformedAnswerError` naming the field. The SDK reads
    types by the API's schema, but leaves a field out as empty (a string where a route
    object belongs comes out as a route with no fields at all)."""
    if not raw.name:
        raise MalformedAnswerError(
            f"GCE routes.list: malformed answer: {where}.name is empty (a route has a name)",
            field=f"{where}.name",
        )
    try:
        parse_cidr(raw.dest_range)
    except ValueError:
        raise MalformedAnswerError(
            f"GCE routes.list: malformed answer: {where}.destRange is {raw.dest_range!r:.60}, "
            "expected a CIDR",
            field=f"{where}.destRange",
        ) from None
    return raw


def _codes(operation: compute_v1.Operation) -> set[str]:
    return {e.code for e in operation.error.errors}


def _nothing() -> None:
    return None


def _path(url: str) -> str:
    """``projects/P/global/networks/N`` of a network URL, regex-escaped for a filter."""
    tail = url.split("/projects/", 1)[-1]
    return re.escape(f"projects/{tail}")


def _destination(cidr: str) -> str:
    try:
        return str(parse_cidr(cidr))
    except ValueError as exc:
        raise ProviderTerminalError(f"invalid destination CIDR {cidr!r}") from exc

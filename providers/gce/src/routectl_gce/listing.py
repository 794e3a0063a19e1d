"""Reading routes: which are this cluster's, and what a listed route says.

Ownership: the listing asks the API for routes whose name is ``<prefix>-<UUID>``, whose
description is ``k8s-node-route`` and whose network is the cluster's (one server-side
filter), so another cluster's routes in the same network (another prefix), a person's routes
and the network's own routes are never read as ours. The CCM's own filter,
``<prefix>-.*``, would also take cluster ``a-b``'s routes for cluster ``a``'s.

A listed route's Node is the last part of its next hop URL, free (and the instance's URL is
learned); a route whose instance is gone (the API's warning ``NEXT_HOP_INSTANCE_NOT_FOUND``)
is a blackhole without target (and the instance forgotten).

Promises: every page is one paced request of :class:`~routectl_gce.cloud.GceCloud`; a
filter may be given as a function, read when the first page goes out (a shared look-up
closes its batch then); a read route that is gone is ``RouteNotFoundError``; a listed route
without a name, or whose ``destRange`` is no CIDR, is a ``MalformedAnswerError`` naming the
field (the SDK reads types by the API's schema, but leaves a missing field empty: a string
where a route object belongs comes out as a route with no fields at all).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from google.cloud import compute_v1

from routectl.cidr import canonical, parse_cidr
from routectl.errors import MalformedAnswerError, RouteNotFoundError
from routectl.model import Route
from routectl_gce.cloud import REQUEST_SECONDS, Clients, GceCloud
from routectl_gce.lookups import Instances
from routectl_gce.names import DESCRIPTION, UUID, instance_name, network_path, network_project
from routectl_gce.options import GceOptions

GONE = "NEXT_HOP_INSTANCE_NOT_FOUND"
PAGE = 500


class Listing:
    """The routes of the cluster's network, as the API lists them and as routectl sees them."""

    def __init__(
        self, cloud: GceCloud, options: GceOptions, *, prefix: str, instances: Instances
    ) -> None:
        self._cloud = cloud
        self.options = options
        self.prefix = prefix
        self._instances = instances

    async def this_clusters(self) -> list[Route]:
        """This cluster's routes in its network, one filtered listing (every page)."""
        clients = await self._cloud.clients()
        network = self.options.network(clients.project)
        ours = (
            f'(name eq "{self.prefix}-{UUID}") (description eq "{DESCRIPTION}") '
            f'(network eq ".*/{network_path(network)}")'
        )
        return [self.as_route(raw) for raw in await self.routes(ours) if raw.next_hop_instance]

    async def routes(
        self,
        expression: str | Callable[[], str],
        *,
        before_send: Callable[[], object] | None = None,
    ) -> list[compute_v1.Route]:
        """Every route passing ``expression`` (read when the first page is sent), page by
        page, one paced request each."""
        clients = await self._cloud.clients()
        project = self.project(clients)
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

    async def get(self, name: str) -> compute_v1.Route:
        """The route named ``name``; ``RouteNotFoundError`` if there is none."""
        clients = await self._cloud.clients()
        project = self.project(clients)
        return await self._cloud.request(
            "routes.get",
            lambda c: c.routes.get(
                project=project, route=name, retry=None, timeout=REQUEST_SECONDS
            ),
            not_found=lambda message: RouteNotFoundError(f"route {name}: {message}"),
        )

    def as_route(self, raw: compute_v1.Route) -> Route:
        """A listed route: its Node is its instance's name, or none if the instance is gone."""
        gone = any(w.code == GONE for w in raw.warnings)
        instance = raw.next_hop_instance.rstrip("/").rsplit("/", 1)[-1]
        if not gone:
            self._instances.learn(instance, raw.next_hop_instance)
        else:
            self._instances.forget(instance)
        return Route(
            name=raw.name,
            target_node="" if gone else instance,
            destination_cidr=raw.dest_range,
            blackhole=gone,
        )

    def ours(self, raw: compute_v1.Route, network: str) -> bool:
        """Whether ``raw`` is this cluster's route (its name, description and network)."""
        return (
            re.fullmatch(f"{re.escape(self.prefix)}-{UUID}", raw.name) is not None
            and raw.description == DESCRIPTION
            and network_path(raw.network) == network_path(network)
            and bool(raw.next_hop_instance)
        )

    def leads(self, raw: compute_v1.Route, route: Route, destination: str, network: str) -> bool:
        """``raw`` is our route to ``destination`` leading where ``route`` says."""
        if not self.ours(raw, network) or canonical(raw.dest_range) != destination:
            return False
        listed = self.as_route(raw)
        if route.target_node:
            return listed.target_node == instance_name(route.target_node)
        return listed.blackhole

    def to(self, destinations: list[str], clients: Clients) -> str:
        """A filter for every route to one of ``destinations`` in the cluster's network."""
        network = self.options.network(clients.project)
        any_of = "|".join(re.escape(d) for d in destinations)
        return f'(destRange eq "({any_of})") (network eq ".*/{network_path(network)}")'

    def project(self, clients: Clients) -> str:
        """The project that holds the network, and so its routes and their operations."""
        return network_project(self.options.network(clients.project))


def _checked(raw: compute_v1.Route, where: str) -> compute_v1.Route:
    """``raw`` if it has what every reader of a listed route needs (a name, a CIDR as its
    ``destRange``); else a :class:`MalformedAnswerError` naming the field."""
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

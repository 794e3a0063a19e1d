"""The ``gce`` provider: a cluster's pod routes as VPC routes, as cloud-provider-gcp makes them.

The provider joins the plugin's parts, one concept each:

* :mod:`routectl_gce.names`: route names, description and priority as the CCM writes them
  (``<cluster name, first 26 characters>-<Node UID>``, ``k8s-node-route``), so a table the
  GCE CCM wrote is adopted without a write and the CCM would adopt ours;
* :mod:`routectl_gce.listing`: which routes are this cluster's (one server-side filter on
  name, description and network), and what a listed route says (its Node, or a blackhole);
* :mod:`routectl_gce.lookups`: the URL of a Node's instance, learned from listings or looked
  up (shared, cached): an instance costs one request at most;
* :mod:`routectl_gce.writes`: creates (checked against the routes to their destination
  first) and deletes, each an operation followed to ``DONE`` and its error mapped;
* :mod:`routectl_gce.cloud`: the SDK's clients, every request paced by the budget, off the
  event loop, never sent once its call is cancelled.

Promises: the contract's (``list_routes``, ``create_route``, ``delete_route``); concurrent
calls on one provider share look-ups and listings, never a page cursor; :meth:`aclose`
stops what is under way and closes the SDK's sessions.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import google.auth.credentials

from routectl.model import Route
from routectl.provider import RequestBudget
from routectl_gce.cloud import GceCloud
from routectl_gce.listing import Listing
from routectl_gce.lookups import Instances
from routectl_gce.names import route_prefix
from routectl_gce.options import GceOptions, parse_options
from routectl_gce.writes import Writes


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
        self._instances = Instances(self._cloud, self.options)
        self._listing = Listing(
            self._cloud, self.options, prefix=self.prefix, instances=self._instances
        )
        self._writes = Writes(
            self._cloud,
            self.options,
            cluster_name=cluster_name,
            prefix=self.prefix,
            listing=self._listing,
            instances=self._instances,
        )

    async def list_routes(self) -> Collection[Route]:
        """This cluster's routes in its network, one filtered listing (every page)."""
        return await self._listing.this_clusters()

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Insert ``destination -> the Node's instance``; the same route again is done."""
        await self._writes.create(route, name_hint=name_hint)

    async def delete_route(self, route: Route) -> None:
        """Delete our route to the CIDR if it still leads where ``route`` says."""
        await self._writes.delete(route)

    async def aclose(self) -> None:
        """Close the SDK's sessions and the thread pool; calling it again does nothing."""
        await self._instances.aclose()
        await self._writes.aclose()
        await self._cloud.aclose()

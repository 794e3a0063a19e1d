"""Creates and deletes of routes, each an operation followed to its end.

A create first lists the routes to its destination in the network (GCE keeps several routes
to one destination side by side, so the name alone cannot tell a conflict; creates at once
share the listing): ours to the same Node is done, ours to another Node is
``RouteAlreadyExistsError`` naming that route (``holder``, as the listing shows it), anyone
else's is terminal and named. An insert answered "already exists" reads the route of that
name: the route wanted (made by a retried or concurrent call) is done, one to another
destination sends the insert to the other name (:func:`~routectl_gce.names.spare_name`), one
holding the destination is judged as above. Inserts of one name run one at a time.

Every insert and delete is an operation followed with ``globalOperations.wait`` until
``DONE``; its error is mapped (``QUOTA_EXCEEDED`` terminal, rate limits throttled). An
operation still running when a call times out is remembered and followed again by the retry
(or by a call whose insert meets its name), not inserted twice. A delete removes only our
route to the destination that leads where it was told; else ``RouteNotFoundError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import Any

import requests
from google.cloud import compute_v1

from routectl.cidr import canonical, parse_cidr
from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl_gce.batch import Batch, Coalescer
from routectl_gce.cloud import REQUEST_SECONDS, GceCloud, operation_error
from routectl_gce.listing import Listing
from routectl_gce.lookups import BATCH, Instances
from routectl_gce.names import (
    DESCRIPTION,
    PRIORITY,
    destination_of,
    instance_name,
    route_name,
    spare_name,
)
from routectl_gce.options import GceOptions

DONE = compute_v1.Operation.Status.DONE


class Writes:
    """Creates and deletes for one provider: what it remembers of operations left running,
    and the listings and inserts its calls share."""

    def __init__(
        self,
        cloud: GceCloud,
        options: GceOptions,
        *,
        cluster_name: str,
        prefix: str,
        listing: Listing,
        instances: Instances,
    ) -> None:
        self._cloud = cloud
        self.options = options
        self.cluster_name = cluster_name
        self.prefix = prefix
        self._listing = listing
        self._instances = instances
        self._destinations = Coalescer(self._routes_to, limit=BATCH)
        self._pending: dict[str, str] = {}
        """Route name -> the insert operation a timed-out call left running."""
        self._inserting: dict[str, _Naming] = {}
        """Route name -> the lock its inserts take in turn, while some call uses it."""

    async def create(self, route: Route, *, name_hint: str) -> None:
        """Insert ``destination -> the Node's instance``; the same route again is done."""
        destination = destination_of(route.destination_cidr)
        names = (
            route_name(self.prefix, name_hint, version=parse_cidr(destination).version),
            spare_name(self.prefix, name_hint, destination),
        )
        for name in names:
            pending = self._pending.get(name)
            if pending is not None:  # a retry after a timeout: that insert may have been made
                await self._settle(name, pending)
        if await self._already_there(route, destination):
            return
        hop = await self._instances.url(route.target_node)
        for name in names:
            if await self._insert(name, destination, hop, route.target_node):
                return
        raise ProviderError(
            f"route names {' and '.join(names)} are both taken by routes to other destinations "
            f"than {destination} (waiting for their delete)"
        )

    async def delete(self, route: Route) -> None:
        """Delete our route to the CIDR if it still leads where ``route`` says."""
        destination = destination_of(route.destination_cidr)
        clients = await self._cloud.clients()
        if route.name:
            found = [await self._listing.get(route.name)]
        else:
            found = await self._listing.routes(self._listing.to([destination], clients))
        network = self.options.network(clients.project)
        victim = next(
            (r for r in found if self._listing.leads(r, route, destination, network)), None
        )
        if victim is None:
            raise RouteNotFoundError(
                f"no route of cluster {self.cluster_name!r} to {destination} via "
                f"{route.target_node or 'a missing instance'}"
            )
        project = self._listing.project(clients)

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
        """Stop the shared listings under way."""
        await self._destinations.aclose()

    # -- inserts ----------------------------------------------------------------------------

    async def _insert(self, name: str, destination: str, hop: str, node: str) -> bool:
        """Insert the route as ``name`` and follow its operation: True once made (or found
        made: a retry, a concurrent call), False if ``name`` holds a route elsewhere. One
        insert of a name at a time: a concurrent call inserting the same name waits for
        this one's end, then meets the route it made."""
        entry = self._inserting.setdefault(name, _Naming())
        entry.users += 1
        try:
            async with entry.lock:
                pending = self._pending.get(name)
                if pending is not None:  # a cancelled call's insert: wait for its end
                    await self._settle(name, pending)
                return await self._insert_once(name, destination, hop, node)
        finally:
            entry.users -= 1
            if not entry.users:
                del self._inserting[name]

    async def _insert_once(self, name: str, destination: str, hop: str, node: str) -> bool:
        clients = await self._cloud.clients()
        body = compute_v1.Route(
            name=name,
            dest_range=destination,
            network=self.options.network(clients.project),
            next_hop_instance=hop,
            priority=PRIORITY,
            description=DESCRIPTION,
        )
        project = self._listing.project(clients)
        try:
            operation = await self._cloud.request(
                "routes.insert",
                lambda c: c.routes.insert_unary(
                    project=project, route_resource=body, retry=None, timeout=REQUEST_SECONDS
                ),
                conflict=lambda message: RouteAlreadyExistsError(f"route {name}: {message}"),
            )
        except RouteAlreadyExistsError:
            return await self._name_taken(name, destination, node)
        self._pending[name] = operation.name  # kept while the operation's end is unknown
        done = await self._follow(operation.name, operation)
        self._pending.pop(name, None)
        error = operation_error("routes.insert", done)
        if error is not None:
            if _codes(done) & {"RESOURCE_NOT_FOUND", "NOT_FOUND"}:
                self._instances.forget(instance_name(node))  # look up anew
            raise error
        return True

    # -- what holds a destination or a name -------------------------------------------------

    async def _routes_to(self, batch: Batch[str, list[compute_v1.Route]]) -> dict[str, Any]:
        """The routes to each destination of ``batch`` in the network: one listing for all."""
        clients = await self._cloud.clients()
        keys: list[str] = []

        def close() -> None:
            keys[:] = batch.close()

        found: dict[str, list[compute_v1.Route]] = {}
        for raw in await self._listing.routes(
            lambda: self._listing.to(keys, clients), before_send=close
        ):
            found.setdefault(canonical(raw.dest_range), []).append(raw)
        return found

    async def _already_there(self, route: Route, destination: str) -> bool:
        """Whether our route to the Node exists; raise if another route holds the CIDR."""
        clients = await self._cloud.clients()
        network = self.options.network(clients.project)
        found = await self._destinations.get(destination) or []
        wanted = instance_name(route.target_node)
        if any(
            self._listing.ours(r, network) and self._listing.as_route(r).target_node == wanted
            for r in found
        ):
            return True  # done, whatever else routes the destination beside it
        return any(self._judge(raw, destination, route.target_node, network) for raw in found)

    def _judge(self, raw: compute_v1.Route, destination: str, node: str, network: str) -> bool:
        """Whether ``raw`` is the route to ``destination`` via ``node`` that a create wants
        (False: it leads to another destination); raise if it holds the destination for
        someone else: ``RouteAlreadyExistsError`` naming it when it is this cluster's, else
        terminal."""
        if canonical(raw.dest_range) != destination:
            return False
        if not self._listing.ours(raw, network):
            hop = raw.next_hop_instance or raw.next_hop_ip or raw.next_hop_gateway or "?"
            raise ProviderTerminalError(
                f"route {raw.name!r} (not this cluster's) already sends {destination} to "
                f"{hop}; routectl does not route a CIDR beside it"
            )
        listed = self._listing.as_route(raw)
        if not listed.blackhole and listed.target_node == instance_name(node):
            return True
        raise RouteAlreadyExistsError(
            f"route {raw.name} sends {destination} to "
            f"{listed.target_node or 'a missing instance'}, not {node}",
            holder=listed,
        )

    async def _name_taken(self, name: str, destination: str, node: str) -> bool:
        """A 409 on insert: True if the route of that name is the one wanted (a retry's, a
        concurrent call's), False if it leads to another destination; raise if it holds
        the destination for someone else, or is not there yet."""
        try:
            raw = await self._listing.get(name)
        except RouteNotFoundError as exc:  # another's insert of that name is still running
            raise ProviderError(
                f"route name {name} is taken, but the route is not there yet"
            ) from exc
        clients = await self._cloud.clients()
        return self._judge(raw, destination, node, self.options.network(clients.project))

    # -- operations -------------------------------------------------------------------------

    async def _follow(
        self, name: str, operation: compute_v1.Operation | None = None
    ) -> compute_v1.Operation:
        """The operation once ``DONE`` (one ``wait`` request at a time)."""
        clients = await self._cloud.clients()
        project = self._listing.project(clients)
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


@dataclasses.dataclass(slots=True)
class _Naming:
    """The inserts of one route name, one at a time."""

    lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    users: int = 0


class _OperationGoneError(ProviderError):
    """The API no longer knows the operation (they are kept for a while only)."""


def _codes(operation: compute_v1.Operation) -> set[str]:
    return {e.code for e in operation.error.errors}

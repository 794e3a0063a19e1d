"""The ``azure`` provider: a cluster's pod routes in an Azure route table, kept as the CCM does.

The route table is the one the Azure CCM's ``azure.json`` names (``routeTableName`` in
``routeTableResourceGroup``, else ``resourceGroup``). Routes are named and pointed as
cloud-provider-azure names and points them (:mod:`routectl_azure.table`), so a table the
CCM wrote is adopted without a write. A missing table lists as empty and is created by the
first write (``location`` needed), as the CCM does.

Writes: with batch writes (the default, ``batch-writes=true``) every change, single or
batched, reads the table and writes it whole with one ``PUT`` carrying ``If-Match: <etag>``,
so a change someone else made in between is never overwritten: ARM answers 412, and the
provider reads the table again and re-applies its change to the new one (at most
:data:`ATTEMPTS` times per call, then a transient error). With ``batch-writes=false``
creates and deletes are single-route ``PUT``/``DELETE`` calls (routectl then never batches).
Every write is a long-running operation the SDK's poller follows to its end.

Blackholes: a route whose next hop is no private IP of a network interface in
``resourceGroup`` (VMs, flexible and uniform scale sets) is listed without target, as a
blackhole; the interfaces are listed at most every ``cache-seconds``. With
``find-blackholes=false`` no interface is listed (as the Azure CCM, which never reports
blackholes). An empty listing is taken as "unknown", never as "every machine is gone".

Machines: the same listing keeps a route to a Node whose machine does not exist (yet) from
being written: its create fails as a transient error (in a batch, that create alone), as
the Azure CCM's CreateRoute fails while it cannot find the Node's VM; the machine may show
up seconds later. A next hop the cached listing does not show lists the interfaces again
(if the listing is older than :data:`RELIST_ON_MISS`), so a new Node waits for no cache.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

from azure.core.credentials_async import AsyncTokenCredential
from azure.core.exceptions import AzureError, ResourceNotFoundError
from azure.mgmt.network import models
from azure.mgmt.network.aio import NetworkManagementClient

from routectl.answers import Answer
from routectl.errors import MalformedAnswerError, ProviderError, ProviderTerminalError
from routectl.model import Route
from routectl.provider import BatchResult, RequestBudget
from routectl_azure.arm import (
    HTTP_PRECONDITION_FAILED,
    RateLimits,
    arm_url,
    credential_for,
    map_error,
    network_client,
    send_raw,
)
from routectl_azure.options import AzureOptions, parse_options
from routectl_azure.table import (
    Raw,
    as_route,
    find_deleted,
    hop_of,
    limit_error,
    node_of,
    place,
    plan_batch,
    private_ips,
    routes_of,
    wanted,
)

T = TypeVar("T")
ATTEMPTS = 3
"""Whole-table writes tried per call when ARM answers 412 (the table changed under us)."""
COMPUTE_API = "2024-07-01"
RELIST_ON_MISS = 2.0
"""Seconds a listing of interfaces must be old before a next hop it lacks lists them again
(so many creates at once, or a Node whose machine is really missing, cost one listing)."""
_log = logging.getLogger(__name__)
if logging.getLogger("azure").level == logging.NOTSET:
    # azure-core logs each request and response header at INFO; routectl shows them at -v6.
    logging.getLogger("azure").setLevel(logging.WARNING)


@dataclasses.dataclass(slots=True)
class _Table:
    """The route table as read: its ARM JSON (None if missing), its etag and routes."""

    raw: Raw | None
    routes: list[Raw]

    @property
    def etag(self) -> str:
        return str((self.raw or {}).get("etag") or "")


@dataclasses.dataclass(slots=True)
class _Live:
    """Private IPs of the machines in the Nodes' resource group, and when they were listed."""

    ips: frozenset[str] = frozenset()
    stamp: float | None = None


class _Changed(Exception):  # noqa: N818 -- a signal between two methods, not an error
    """ARM answered 412: the table changed since it was read."""


class AzureProvider:
    """The ``azure`` route provider; the class is its own factory.

    ``credential`` replaces the one the options describe (tests inject a static token).
    """

    def __init__(
        self,
        *,
        cluster_name: str,
        options: Mapping[str, str],
        budget: RequestBudget | None = None,
        credential: AsyncTokenCredential | None = None,
    ) -> None:
        self.cluster_name = cluster_name
        self.options: AzureOptions = parse_options(
            options, environ=os.environ, need_credentials=credential is None
        )
        self.rate_limits = RateLimits()
        """ARM's ``x-ms-ratelimit-remaining-*`` values of the last answers."""
        self._budget = budget
        self._injected = credential
        self._credential: AsyncTokenCredential | None = None
        self._client: NetworkManagementClient | None = None
        self._write_lock = asyncio.Lock()
        self._live = _Live()
        self._live_lock = asyncio.Lock()

    @property
    def supports_batch(self) -> bool:
        """Whole-table batches, unless ``batch-writes=false``."""
        return self.options.batch_writes

    # -- the contract ---------------------------------------------------------------------

    async def list_routes(self) -> Collection[Route]:
        """The table's routes of this cluster; those whose machine is gone as blackholes."""
        table = await self._read()
        mine = [raw for raw in table.routes if node_of(raw) is not None]
        live = await self._live_ips() if mine and self.options.find_blackholes else None
        return [as_route(raw, live) for raw in mine]

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Route the CIDR to the Node's private IP, in a route named as the CCM names it."""
        del name_hint  # the CCM names routes by Node and CIDR
        new = wanted(route)
        if await self._without_machine({hop_of(new)}):
            raise _no_machine(route, hop_of(new), self.options.node_group)
        if not self.options.batch_writes:
            table = await self._read()
            where = place(table.routes, new)
            if where is None:
                return
            if where < 0 and len(table.routes) >= self.options.route_limit:
                raise limit_error(len(table.routes), self.options.route_limit)
            if table.raw is not None:
                await self._call(
                    "create route",
                    lambda client: self._poll(
                        client.routes.begin_create_or_update(
                            self.options.route_table_group,
                            self.options.route_table,
                            str(new["name"]),
                            models.Route(new),
                        )
                    ),
                )
                return
        await self._whole(lambda routes: self._added(routes, new))

    async def delete_route(self, route: Route) -> None:
        """Delete the listed route if the table still has it to the same Node."""
        if not self.options.batch_writes:
            table = await self._read()
            name = str(table.routes[find_deleted(table.routes, route)]["name"])
            await self._call(
                "delete route",
                lambda client: self._poll(
                    client.routes.begin_delete(
                        self.options.route_table_group, self.options.route_table, name
                    )
                ),
            )
            return

        def removed(routes: list[Raw]) -> list[Raw] | None:
            index = find_deleted(routes, route)
            return routes[:index] + routes[index + 1 :]

        await self._whole(removed)

    async def apply_routes(
        self, *, deletes: Sequence[Route], creates: Sequence[tuple[Route, str]]
    ) -> BatchResult:
        """``deletes`` then ``creates`` in one whole-table write (none if nothing changes);
        each create that conflicts, lacks an address or does not fit is reported by index."""
        refused = await self._refused_creates(creates)
        kept = [index for index in range(len(creates)) if index not in refused]
        failed: dict[int, ProviderError] = {}

        def batch(routes: list[Raw]) -> list[Raw] | None:
            limit = self.options.route_limit
            plan = plan_batch(
                routes, deletes=deletes, creates=[creates[i] for i in kept], limit=limit
            )
            failed.clear()
            failed.update(refused)
            failed.update({kept[i]: exc for i, exc in plan.failed_creates.items()})
            return plan.routes if plan.changed else None

        await self._whole(batch)
        return BatchResult(failed_creates=dict(failed))

    async def _refused_creates(
        self, creates: Sequence[tuple[Route, str]]
    ) -> dict[int, ProviderError]:
        """The creates of a batch whose Node has no machine (yet), by index."""
        hops: dict[int, str] = {}
        for index, (route, _hint) in enumerate(creates):
            try:
                hops[index] = hop_of(wanted(route))
            except ProviderError:
                continue  # no address: the batch's plan reports it
        missing = await self._without_machine(set(hops.values()))
        group = self.options.node_group
        return {
            index: _no_machine(creates[index][0], hop, group)
            for index, hop in hops.items()
            if hop in missing
        }

    async def aclose(self) -> None:
        """Close the client and the credential; calling it again does nothing."""
        client, self._client = self._client, None
        credential, self._credential = self._credential, None
        if client is not None:
            await client.close()
        if credential is not None and credential is not self._injected:
            await credential.close()

    # -- the route table --------------------------------------------------------------------

    def _connect(self) -> NetworkManagementClient:
        if self._client is None:
            self._credential = self._injected or credential_for(
                self.options, self._budget, self.rate_limits
            )
            self._client = network_client(
                self.options, self._credential, self._budget, self.rate_limits
            )
        return self._client

    async def _call(
        self, operation: str, fn: Callable[[NetworkManagementClient], Awaitable[T]]
    ) -> T:
        """One SDK call; its exceptions leave as routectl's."""
        try:
            return await fn(self._connect())
        except AzureError as exc:
            raise map_error(operation, exc) from exc
        except json.JSONDecodeError as exc:  # the SDK reads every 200 as JSON
            raise MalformedAnswerError(
                f"Azure {operation}: malformed answer: the body is not JSON ({exc.msg} at "
                f"{exc.pos}: {exc.doc[:40]!r}; a proxy's page?)",
                field="the body",
            ) from exc

    @staticmethod
    async def _poll(begun: Awaitable[Any]) -> Any:
        """Follow a long-running operation to its end (the SDK's poller; paced polls)."""
        poller = await begun
        return await poller.result()

    async def _read(self) -> _Table:
        """``GET`` the route table; a missing one is empty (the CCM creates it on write)."""
        options = self.options

        async def get(client: NetworkManagementClient) -> _Table:
            try:
                found = await client.route_tables.get(
                    options.route_table_group, options.route_table
                )
            except ResourceNotFoundError:
                return _Table(raw=None, routes=[])
            raw = found.as_dict()
            return _Table(raw=raw, routes=[dict(r) for r in routes_of(raw)])

        return await self._call("get route table", get)

    def _added(self, routes: list[Raw], new: Raw) -> list[Raw] | None:
        where = place(routes, new)
        if where is None:
            return None
        if where >= 0:
            return [*routes[:where], new, *routes[where + 1 :]]
        if len(routes) >= self.options.route_limit:
            raise limit_error(len(routes), self.options.route_limit)
        return [*routes, new]

    async def _whole(self, edit: Callable[[list[Raw]], list[Raw] | None]) -> None:
        """Read, ``edit`` (None: nothing to write) and write the table with ``If-Match``;
        on 412 read and edit again, at most :data:`ATTEMPTS` times."""
        async with self._write_lock:
            for _ in range(ATTEMPTS):
                table = await self._read()
                routes = edit(list(table.routes))
                if routes is None:
                    return
                try:
                    await self._write(table, routes)
                except _Changed:
                    _log.info(
                        "Route table changed under a write; reading it again",
                        extra={"route_table": self.options.route_table},
                    )
                    continue
                return
        raise ProviderError(
            f"route table {self.options.route_table} changed under {ATTEMPTS} writes in a row "
            "(412): another writer is busy; retrying later"
        )

    async def _write(self, table: _Table, routes: list[Raw]) -> None:
        """``PUT`` the whole table: ``If-Match`` its etag, or ``If-None-Match: *`` to create."""
        options = self.options
        if table.raw is None:
            if not options.location:
                raise ProviderTerminalError(
                    f"route table {options.route_table} does not exist in resource group "
                    f"{options.route_table_group}, and no location is set to create it in"
                )
            body: Raw = {"location": options.location, "properties": {"routes": routes}}
            headers = {"If-None-Match": "*"}
        else:
            body = {k: v for k, v in table.raw.items() if k != "etag"}
            body["properties"] = {**(table.raw.get("properties") or {}), "routes": routes}
            headers = {"If-Match": table.etag} if table.etag else {}
        try:
            await self._call(
                "put route table",
                lambda client: self._poll(
                    client.route_tables.begin_create_or_update(
                        options.route_table_group,
                        options.route_table,
                        models.RouteTable(body),
                        headers=headers,
                    )
                ),
            )
        except ProviderError as exc:
            cause = exc.__cause__
            if getattr(cause, "status_code", None) == HTTP_PRECONDITION_FAILED:
                raise _Changed from exc
            raise

    # -- machines ---------------------------------------------------------------------------

    async def _without_machine(self, hops: Collection[str]) -> frozenset[str]:
        """The next hops among ``hops`` no machine holds (none when that is unknown: with
        ``find-blackholes=false``, or an empty listing of interfaces)."""
        if not hops or not self.options.find_blackholes:
            return frozenset()
        live = await self._live_ips()
        if live is not None and not set(hops) <= live:
            live = await self._live_ips(max_age=min(RELIST_ON_MISS, self.options.cache_seconds))
        return frozenset() if live is None else frozenset(hops) - live

    async def _live_ips(self, *, max_age: float | None = None) -> frozenset[str] | None:
        """Private IPs of every network interface in the Nodes' resource group (VMs, flexible
        and uniform scale sets), listed at most every ``cache-seconds`` (or ``max_age``);
        None if none."""
        if max_age is None:
            max_age = self.options.cache_seconds
        async with self._live_lock:
            now = asyncio.get_running_loop().time()
            stamp = self._live.stamp
            if stamp is None or now - stamp >= max_age:
                ips = await self._call("list network interfaces", self._list_ips)
                self._live = _Live(ips=ips, stamp=now)
            return self._live.ips or None

    async def _list_ips(self, client: NetworkManagementClient) -> frozenset[str]:
        group = self.options.node_group
        nics: list[Raw] = [nic.as_dict() async for nic in client.network_interfaces.list(group)]
        for scale_set in await self._scale_sets(client):
            pages = client.network_interfaces.list_virtual_machine_scale_set_network_interfaces(
                group, scale_set
            )
            nics.extend([nic.as_dict() async for nic in pages])
        return private_ips(nics, what="Azure list network interfaces")

    async def _scale_sets(self, client: NetworkManagementClient) -> list[str]:
        """Names of the uniform scale sets in the Nodes' resource group (Compute's listing)."""
        url: str | None = (
            f"{arm_url(self.options)}/subscriptions/{self.options.subscription_id}"
            f"/resourceGroups/{self.options.node_group}/providers/Microsoft.Compute/"
            f"virtualMachineScaleSets?api-version={COMPUTE_API}"
        )
        names: list[str] = []
        while url:
            page = Answer(
                await send_raw(client, "GET", url), what="Azure list virtual machine scale sets"
            )
            names += [
                s.field("name").text()
                for s in page.field("value").items()
                if s.field("properties").field("orchestrationMode").text(default="Uniform")
                == "Uniform"
            ]
            url = page.field("nextLink").text(default="") or None
        return names


def _no_machine(route: Route, hop: str, group: str) -> ProviderError:
    """The transient error of a create for a Node whose machine is not there (yet)."""
    return ProviderError(
        f"no network interface in resource group {group} has Node {route.target_node!r}'s "
        f"private IP {hop} (yet): the route to {route.destination_cidr} waits for its machine"
    )

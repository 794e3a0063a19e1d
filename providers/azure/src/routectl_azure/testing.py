"""A fake of Azure Resource Manager's route tables, over HTTPS on 127.0.0.1, for the tests.

It keeps state and answers as the documented REST API (``Microsoft.Network``, the
api-version the SDK sends) does, so the real azure-mgmt-network client and its pollers talk
to it unchanged:

* ``GET``/``PUT .../routeTables/{name}``: the table with a fresh ``etag`` (``W/"<uuid>"``)
  after each change; ``If-Match`` with another etag, or ``If-None-Match: *`` on an existing
  table, is 412 ``PreconditionFailed``; a missing table is 404 ``ResourceNotFound``;
* ``PUT``/``DELETE .../routeTables/{name}/routes/{route}``: one route (``DELETE`` of a
  missing route is 204);
* every write is a long-running operation: the change is made at once (``provisioningState``
  ``Updating``), the answer carries ``Azure-AsyncOperation`` (and ``Location`` for
  ``DELETE``), and the operation's status is ``InProgress`` until
  :attr:`FakeArm.operation_seconds` of the loop's clock have passed, then ``Succeeded``;
* more routes than :attr:`FakeArm.route_limit` in a table is 400 (the code Azure uses for
  it is not recorded here; the plugin does not depend on it: it counts routes itself);
* network interfaces of a resource group, uniform scale sets (Compute's listing) and their
  interfaces, 50 to a page with ``nextLink``;
* a Microsoft Entra token endpoint (``POST /{tenant}/oauth2/v2.0/token``) for the client
  secret :data:`SECRET`; every other request needs ``Authorization: Bearer`` :data:`TOKEN`;
* ``x-ms-ratelimit-remaining-subscription-reads``/``-writes`` on every answer, counting down;
  :meth:`FakeArm.fail_next` queues error answers (429 with ``Retry-After``...), and
  :meth:`FakeArm.lose_next_answer` makes the next write happen and its answer vanish, and
  :meth:`FakeArm.before_next` changes the table as a concurrent writer would, and
  :meth:`FakeArm.garble_next` answers the next read with a body of the wrong shape.

HTTPS because azure-core sends bearer tokens only over TLS: the fake serves a certificate
of a throw-away CA (``trustme``), whose file :attr:`FakeArm.ca_path` the provider is given
as its ``ca-bundle`` option.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import itertools
import json
import ssl
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trustme
from aiohttp import web
from azure.core.credentials import AccessToken
from azure.core.credentials_async import AsyncTokenCredential

SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"
TENANT = "00000000-0000-0000-0000-0000000000bb"
CLIENT_ID = "00000000-0000-0000-0000-0000000000cc"
SECRET = "fake-client-secret"  # noqa: S105 -- the fake's own test secret
TOKEN = "fake-arm-token"  # noqa: S105 -- the fake's own test token
PAGE = 50
NETWORK = "/providers/Microsoft.Network"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class StaticToken(AsyncTokenCredential):
    """A credential that always has :data:`TOKEN` (tests that do not exercise Entra ID)."""

    async def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        """The fake's token, valid for ever."""
        del scopes, kwargs
        return AccessToken(TOKEN, 2**31 - 1)

    async def close(self) -> None:
        """Nothing to release."""

    async def __aexit__(self, *args: object) -> None:
        """Nothing to release."""


@dataclasses.dataclass(slots=True)
class FakeTable:
    """A route table: its routes in ARM's JSON, its etag, where it is."""

    group: str
    name: str
    location: str = "westeurope"
    routes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    tags: dict[str, str] = dataclasses.field(default_factory=dict)
    etag: str = dataclasses.field(default_factory=lambda: f'W/"{uuid.uuid4()}"')
    state: str = "Succeeded"

    def touch(self) -> None:
        """A change: a new etag."""
        self.etag = f'W/"{uuid.uuid4()}"'

    def add(
        self, name: str, prefix: str, hop_type: str = "VirtualAppliance", hop: str = ""
    ) -> None:
        """A route put in place behind the plugin's back (the CCM, an operator)."""
        properties = {"addressPrefix": prefix, "nextHopType": hop_type}
        if hop:
            properties["nextHopIpAddress"] = hop
        self.routes.append({"name": name, "properties": properties})
        self.touch()


class FakeArm:
    """ARM's route tables, network interfaces and scale sets; start it with ``async with``."""

    def __init__(self, *, operation_seconds: float = 0.0, route_limit: int = 400) -> None:
        self.operation_seconds = operation_seconds
        self.route_limit = route_limit
        self.tables: dict[tuple[str, str], FakeTable] = {}
        self.nics: dict[str, list[tuple[str, list[str]]]] = collections.defaultdict(list)
        """Resource group -> (interface name, private IPs) of its standalone VMs."""
        self.scale_sets: dict[tuple[str, str], list[tuple[str, list[str]]]] = {}
        """(resource group, scale set) -> its instances' (interface name, private IPs)."""
        self.requests: list[tuple[str, str]] = []
        self.writes = 0
        self.reads_left, self.writes_left = 12000, 1200
        self.url = ""
        self.ca_path = ""
        self._operations: dict[str, float] = {}
        self._errors: collections.deque[list[Any]] = collections.deque()
        """[method, status, code, headers, requests to let through first]"""
        self._lose: list[str] = []
        self._before: list[tuple[str, Callable[[], None]]] = []
        self._garble: list[tuple[str, Callable[[Any], Any] | str]] = []
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None

    # -- scenes -----------------------------------------------------------------------------

    def add_table(self, group: str, name: str, **kwargs: Any) -> FakeTable:
        """An existing route table."""
        table = FakeTable(group=group, name=name, **kwargs)
        self.tables[(group.lower(), name.lower())] = table
        return table

    def add_vm(self, group: str, name: str, *ips: str) -> None:
        """A standalone VM's interface in ``group``."""
        self.nics[group.lower()].append((f"{name}-nic", list(ips)))

    def add_scale_set_vm(self, group: str, scale_set: str, name: str, *ips: str) -> None:
        """An instance of a uniform scale set in ``group``."""
        self.scale_sets.setdefault((group.lower(), scale_set), []).append(
            (f"{name}-nic", list(ips))
        )

    def remove_machine(self, ip: str) -> None:
        """The machine holding ``ip`` is deleted, with its interface."""
        for nics in [*self.nics.values(), *self.scale_sets.values()]:
            nics[:] = [nic for nic in nics if ip not in nic[1]]

    def fail_next(
        self, method: str, status: int, code: str, *, after: int = 0, **headers: str
    ) -> None:
        """Answer the next ``method`` request (``*``: any) with an ARM error, after letting
        ``after`` such requests through."""
        self._errors.append([method, status, code, headers, after])

    def lose_next_answer(self, method: str = "PUT") -> None:
        """Carry out the next ``method`` request, then drop the connection unanswered."""
        self._lose.append(method)

    def before_next(self, method: str, scene: Callable[[], None]) -> None:
        """Run ``scene`` (a concurrent writer's change) just before the next ``method`` request
        is handled, after the plugin read what it read."""
        self._before.append((method, scene))

    def garble_next(self, marker: str, edit: Callable[[Any], Any] | str) -> None:
        """Answer the next ``GET`` whose path holds ``marker`` with its JSON answer passed
        through ``edit`` (a value of the wrong shape), or with ``edit`` itself as the body
        when it is a string (an HTML page, an empty body), with status 200."""
        self._garble.append((marker, edit))

    def count(self, method: str, marker: str = "") -> int:
        """Requests of ``method`` whose path contains ``marker``."""
        return sum(1 for m, p in self.requests if m == method and marker in p)

    # -- serving ----------------------------------------------------------------------------

    async def __aenter__(self) -> FakeArm:
        authority = trustme.CA()
        self._scratch = tempfile.TemporaryDirectory(prefix="fake-arm-")
        self.ca_path = str(Path(self._scratch.name) / "ca.pem")
        authority.cert_pem.write_to_path(self.ca_path)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        authority.issue_cert("127.0.0.1").configure_cert(context)
        app = web.Application(middlewares=[self._middleware])
        sub = "/subscriptions/{sub}"
        group = sub + "/resourceGroups/{group}"
        table = group + NETWORK + "/routeTables/{table}"
        app.router.add_post("/{tenant}/oauth2/v2.0/token", self._token)
        app.router.add_get(table, self._get_table)
        app.router.add_put(table, self._put_table)
        app.router.add_get(table + "/routes/{route}", self._get_route)
        app.router.add_put(table + "/routes/{route}", self._put_route)
        app.router.add_delete(table + "/routes/{route}", self._delete_route)
        app.router.add_get(sub + NETWORK + "/locations/{location}/operations/{id}", self._operation)
        app.router.add_get(
            sub + NETWORK + "/locations/{location}/operationResults/{id}", self._operation_result
        )
        app.router.add_get(group + NETWORK + "/networkInterfaces", self._group_nics)
        scale_sets = group + "/providers/Microsoft.Compute/virtualMachineScaleSets"
        app.router.add_get(scale_sets, self._scale_sets)
        app.router.add_get(scale_sets + "/{vmss}/networkInterfaces", self._scale_set_nics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"https://{host}:{port}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._scratch is not None:
            self._scratch.cleanup()

    @property
    def authority(self) -> str:
        """The token endpoint's host, as azure-identity's ``authority`` takes it."""
        return self.url.removeprefix("https://")

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.requests.append((request.method, request.path))
        if request.method == "GET":
            self.reads_left -= 1
        else:
            self.writes_left -= 1
        for index, (method, status, code, headers, after) in enumerate(self._errors):
            if method in {"*", request.method}:
                if after:
                    self._errors[index][4] = after - 1
                    break
                del self._errors[index]
                return self._error(status, code, f"injected {status}", headers)
        for index, (method, scene) in enumerate(self._before):
            if method == request.method:
                del self._before[index]
                scene()
                break
        token_request = request.path.endswith("/oauth2/v2.0/token")
        if not token_request and request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._error(401, "AuthenticationFailed", "missing or bad bearer token")
        if not token_request and "api-version" not in request.query:
            return self._error(400, "MissingApiVersionParameter", "api-version is required")
        response = await handler(request)
        if not token_request:
            response.headers["x-ms-ratelimit-remaining-subscription-reads"] = str(self.reads_left)
            response.headers["x-ms-ratelimit-remaining-subscription-writes"] = str(self.writes_left)
        garbled = self._garbled(request, response)
        if garbled is not None:
            return garbled
        if request.method in self._lose and response.status < 400 and request.transport:  # noqa: PLR2004
            self._lose.remove(request.method)
            request.transport.abort()
        return response

    def _garbled(self, request: web.Request, response: web.StreamResponse) -> web.Response | None:
        """The answer :meth:`garble_next` asked for in place of ``response``, if any."""
        for index, (marker, edit) in enumerate(self._garble):
            if request.method == "GET" and marker in request.path:
                del self._garble[index]
                if isinstance(edit, str):
                    return web.Response(text=edit, content_type="text/html")
                text = response.text if isinstance(response, web.Response) else None
                return web.json_response(edit(json.loads(text or "null")))
        return None

    def _error(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> web.Response:
        body = {"error": {"code": code, "message": message}}
        return web.json_response(body, status=status, headers=headers or {})

    # -- Entra ID ---------------------------------------------------------------------------

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("client_secret") != SECRET or request.match_info["tenant"] != TENANT:
            body = {"error": "invalid_client", "error_description": "AADSTS7000215: bad secret"}
            return web.json_response(body, status=401)
        return web.json_response(
            {
                "token_type": "Bearer",
                "expires_in": 3599,
                "ext_expires_in": 3599,
                "access_token": TOKEN,
            }
        )

    # -- route tables -----------------------------------------------------------------------

    def _table(self, request: web.Request) -> FakeTable | None:
        key = (request.match_info["group"].lower(), request.match_info["table"].lower())
        return self.tables.get(key)

    def _table_json(self, request: web.Request, table: FakeTable) -> dict[str, Any]:
        base = (
            f"/subscriptions/{request.match_info['sub']}/resourceGroups/{table.group}"
            f"{NETWORK}/routeTables/{table.name}"
        )
        routes = [
            {
                "name": r["name"],
                "id": f"{base}/routes/{r['name']}",
                "etag": table.etag,
                "type": "Microsoft.Network/routeTables/routes",
                "properties": {**r["properties"], "provisioningState": table.state},
            }
            for r in table.routes
        ]
        return {
            "name": table.name,
            "id": base,
            "etag": table.etag,
            "type": "Microsoft.Network/routeTables",
            "location": table.location,
            "tags": table.tags,
            "properties": {
                "provisioningState": table.state,
                "resourceGuid": "3c6b5c4a-0000-0000-0000-000000000001",
                "disableBgpRoutePropagation": False,
                "routes": routes,
            },
        }

    def _missing(self, request: web.Request) -> web.Response:
        return self._error(
            404,
            "ResourceNotFound",
            f"The Resource 'Microsoft.Network/routeTables/{request.match_info['table']}' under "
            f"resource group '{request.match_info['group']}' was not found.",
        )

    async def _get_table(self, request: web.Request) -> web.Response:
        table = self._table(request)
        if table is None:
            return self._missing(request)
        return web.json_response(self._table_json(request, table))

    def _check_routes(self, routes: list[dict[str, Any]]) -> web.Response | None:
        if len(routes) > self.route_limit:
            return self._error(
                400,
                "RouteTableRouteLimitExceeded",  # a stand-in: the real code is not recorded
                f"The route table has {len(routes)} routes; at most {self.route_limit} allowed.",
            )
        for route in routes:
            properties = route.get("properties") or {}
            appliance = properties.get("nextHopType") == "VirtualAppliance"
            if appliance != bool(properties.get("nextHopIpAddress")) or not route.get("name"):
                return self._error(
                    400, "InvalidRoute", f"Route {route.get('name')} is invalid: next hop"
                )
        return None

    def _accepted(
        self, request: web.Request, body: dict[str, Any] | None, status: int, location: str
    ) -> web.Response:
        """A long-running operation's first answer: ``Azure-AsyncOperation`` to poll."""
        operation = f"op-{next(self._ids)}"
        self._operations[operation] = asyncio.get_running_loop().time() + self.operation_seconds
        base = f"{self.url}/subscriptions/{request.match_info['sub']}{NETWORK}/locations/{location}"
        api = request.query["api-version"]
        headers = {"Azure-AsyncOperation": f"{base}/operations/{operation}?api-version={api}"}
        if request.method == "DELETE":
            headers["Location"] = f"{base}/operationResults/{operation}?api-version={api}"
        if self.operation_seconds:
            headers["Retry-After"] = str(max(int(self.operation_seconds), 1))
        self.writes += 1
        if body is None:
            return web.Response(status=status, headers=headers)
        return web.json_response(body, status=status, headers=headers)

    def _done(self, operation: str) -> bool | None:
        ends = self._operations.get(operation)
        if ends is None:
            return None
        if asyncio.get_running_loop().time() < ends:
            return False
        for table in self.tables.values():
            table.state = "Succeeded"
        return True

    async def _operation(self, request: web.Request) -> web.Response:
        done = self._done(request.match_info["id"])
        if done is None:
            return self._error(404, "OperationNotFound", "no such operation")
        status = "Succeeded" if done else "InProgress"
        headers = {} if done else {"Retry-After": str(max(int(self.operation_seconds), 1))}
        return web.json_response({"status": status}, headers=headers)

    async def _operation_result(self, request: web.Request) -> web.Response:
        done = self._done(request.match_info["id"])
        if done is None:
            return self._error(404, "OperationNotFound", "no such operation")
        return web.Response(status=204 if done else 202)

    async def _put_table(self, request: web.Request) -> web.Response:
        table = self._table(request)
        match, none_match = request.headers.get("If-Match"), request.headers.get("If-None-Match")
        if (
            (table is not None and match and match != table.etag)
            or (table is not None and none_match == "*")
            or (table is None and match)
        ):
            return self._error(
                412,
                "PreconditionFailed",
                "The condition specified using HTTP conditional header(s) is not met.",
            )
        body = await request.json()
        routes = [
            {
                "name": r["name"],
                "properties": {
                    k: v
                    for k, v in (r.get("properties") or {}).items()
                    if k in {"addressPrefix", "nextHopType", "nextHopIpAddress"}
                },
            }
            for r in (body.get("properties") or {}).get("routes") or []
        ]
        problem = self._check_routes(routes)
        if problem is not None:
            return problem
        created = table is None
        if table is None:
            if not body.get("location"):
                return self._error(400, "LocationRequired", "The location property is required.")
            table = self.add_table(
                request.match_info["group"], request.match_info["table"], location=body["location"]
            )
        table.routes = routes
        table.tags = dict(body.get("tags") or {})
        table.state = "Updating"
        table.touch()
        return self._accepted(
            request, self._table_json(request, table), 201 if created else 200, table.location
        )

    async def _get_route(self, request: web.Request) -> web.Response:
        table = self._table(request)
        if table is None:
            return self._missing(request)
        name = request.match_info["route"].lower()
        for route in self._table_json(request, table)["properties"]["routes"]:
            if route["name"].lower() == name:
                return web.json_response(route)
        return self._error(404, "NotFound", f"Route {request.match_info['route']} not found.")

    async def _put_route(self, request: web.Request) -> web.Response:
        table = self._table(request)
        if table is None:
            return self._missing(request)
        name = request.match_info["route"]
        body = await request.json()
        route = {
            "name": name,
            "properties": {
                k: v
                for k, v in (body.get("properties") or {}).items()
                if k in {"addressPrefix", "nextHopType", "nextHopIpAddress"}
            },
        }
        kept = [r for r in table.routes if r["name"].lower() != name.lower()]
        problem = self._check_routes([*kept, route])
        if problem is not None:
            return problem
        created = len(kept) == len(table.routes)
        table.routes = [*kept, route]
        table.state = "Updating"
        table.touch()
        properties: dict[str, Any] = dict(route["properties"])
        answer = {"name": name, "etag": table.etag, "properties": properties}
        properties["provisioningState"] = "Updating"
        return self._accepted(request, answer, 201 if created else 200, table.location)

    async def _delete_route(self, request: web.Request) -> web.Response:
        table = self._table(request)
        if table is None:
            return self._missing(request)
        name = request.match_info["route"].lower()
        kept = [r for r in table.routes if r["name"].lower() != name]
        if len(kept) == len(table.routes):
            return web.Response(status=204)
        table.routes = kept
        table.state = "Updating"
        table.touch()
        return self._accepted(request, None, 202, table.location)

    # -- machines ---------------------------------------------------------------------------

    def _page(self, request: web.Request, items: list[dict[str, Any]]) -> web.Response:
        skip = int(request.query.get("$skiptoken", "0"))
        body: dict[str, Any] = {"value": items[skip : skip + PAGE]}
        if skip + PAGE < len(items):
            query = dict(request.query) | {"$skiptoken": str(skip + PAGE)}
            body["nextLink"] = str(request.url.with_query(query)).replace("http://", "https://")
        return web.json_response(body)

    @staticmethod
    def _nic_json(name: str, ips: list[str]) -> dict[str, Any]:
        configs = [
            {
                "name": f"ipconfig{index}",
                "properties": {
                    "privateIPAddress": ip,
                    "privateIPAddressVersion": "IPv6" if ":" in ip else "IPv4",
                    "primary": index == 1,
                },
            }
            for index, ip in enumerate(ips, start=1)
        ]
        return {"name": name, "properties": {"ipConfigurations": configs}}

    async def _group_nics(self, request: web.Request) -> web.Response:
        nics = self.nics.get(request.match_info["group"].lower(), [])
        return self._page(request, [self._nic_json(n, ips) for n, ips in nics])

    async def _scale_sets(self, request: web.Request) -> web.Response:
        group = request.match_info["group"].lower()
        found = [
            {"name": name, "properties": {"orchestrationMode": "Uniform"}}
            for (g, name) in self.scale_sets
            if g == group
        ]
        return self._page(request, found)

    async def _scale_set_nics(self, request: web.Request) -> web.Response:
        key = (request.match_info["group"].lower(), request.match_info["vmss"])
        nics = self.scale_sets.get(key, [])
        return self._page(request, [self._nic_json(n, ips) for n, ips in nics])

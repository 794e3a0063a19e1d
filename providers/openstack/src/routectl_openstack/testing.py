"""A fake of Keystone, Neutron and Nova, over HTTP on 127.0.0.1, as openstacksdk talks to them.

:class:`FakeOpenStack` keeps state and behaves like the documented APIs where routes are
concerned: Keystone v3 token issue (password; the catalog names the network and compute
endpoints), Neutron's ``GET /v2.0/extensions``, ``GET``/``PUT /v2.0/routers/{id}`` (the whole
``routes`` table, ``If-Match: revision_number=N`` answered 412 on a stale revision),
``PUT .../add_extraroutes`` and ``.../remove_extraroutes`` (only with ``atomic=True``; set
semantics), Nova's version document and ``GET /servers/detail``. It models what makes the
router hard: the ``max_routes`` quota (400 ``RoutesExhausted``, naming the maximum), next hops
that must lie in a subnet the router is attached to (400 ``InvalidRoutes``), the request body
limit (413 above ``max_body`` bytes, oslo's default 114688), bearer tokens (401), a catalog
whose endpoints have the given interfaces only, HTTPS with a given TLS context, injected
errors (``fail_next``, a 429 with ``Retry-After``), answers lost after the change was made
(``lose_next_answer``) and answers of the wrong shape (``garble_next``). Every request is
logged with its loop time, for counting.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import ipaddress
import itertools
import json
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from routectl.testing.serving import serve_locally

__all__ = ["FakeOpenStack", "FakeRouter"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PASSWORD = "fake-openstack-password"  # noqa: S105 -- the fake's own, not a secret
MAX_BODY = 114688


@dataclasses.dataclass(slots=True, kw_only=True)
class FakeRouter:
    """A router: the subnets it is attached to and its routes."""

    id: str
    subnets: list[str]
    routes: list[dict[str, str]] = dataclasses.field(default_factory=list)
    revision: int = 1

    def json(self) -> dict[str, Any]:
        """Neutron's ``router`` object (the fields routes need, and a few more)."""
        return {
            "id": self.id,
            "name": "k8s",
            "status": "ACTIVE",
            "admin_state_up": True,
            "routes": [dict(r) for r in self.routes],
            "revision_number": self.revision,
            "tenant_id": "p1",
            "project_id": "p1",
        }


def _neutron_error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response(
        {"NeutronError": {"type": kind, "message": message, "detail": ""}}, status=status
    )


class FakeOpenStack:
    """The fake clouds' APIs; start with ``async with`` and point ``OS_AUTH_URL`` at it."""

    def __init__(
        self,
        *,
        atomic: bool = True,
        max_routes: int = 30,
        max_body: int = MAX_BODY,
        interfaces: tuple[str, ...] = ("public",),
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.atomic = atomic
        self.interfaces = interfaces
        """The catalog's endpoint interfaces (public, internal, admin)."""
        self.ssl_context = ssl_context
        """Serve HTTPS with this context (a private CA's certificate), else HTTP."""
        self.max_routes = max_routes
        self.max_body = max_body
        self.routers: dict[str, FakeRouter] = {}
        self.servers: dict[str, tuple[str, list[str]]] = {}
        """Server id -> (name, addresses)."""
        self.requests: list[tuple[str, str]] = []
        self.times: list[float] = []
        self.url = ""
        self.identities: list[dict[str, Any]] = []
        """The ``identity`` of each token request, as sent."""
        self._token = ""
        self._ids = itertools.count(1)
        self._errors: collections.deque[tuple[str, int, str, dict[str, str]]] = collections.deque()
        self._delay = 0
        self._lose: list[tuple[str, str]] = []
        self._garble: list[tuple[str, Callable[[Any], Any] | str]] = []
        self._runner: web.AppRunner | None = None

    # -- scene verbs ------------------------------------------------------------------------

    @property
    def auth_url(self) -> str:
        """Keystone's v3 API."""
        return f"{self.url}/identity/v3"

    def add_router(self, *subnets: str) -> FakeRouter:
        """A router attached to ``subnets``."""
        router = FakeRouter(id=f"router-{next(self._ids)}", subnets=list(subnets))
        self.routers[router.id] = router
        return router

    def add_server(self, name: str, *addresses: str) -> str:
        """A server named ``name`` with ``addresses``; its id."""
        server = f"server-{next(self._ids)}"
        self.servers[server] = (name, list(addresses))
        return server

    def delete_server(self, name: str) -> None:
        """The servers named ``name`` are gone (routes to them stay, as in Neutron)."""
        self.servers = {k: v for k, v in self.servers.items() if v[0] != name}

    def fail_next(self, suffix: str, status: int, kind: str = "Injected", **headers: str) -> None:
        """Answer the next request whose path ends with ``suffix`` with an error."""
        self._errors.append((suffix, status, kind, headers))

    def let_through(self, requests: int) -> None:
        """Let that many matching requests through before the next queued error."""
        self._delay = requests

    def lose_next_answer(self, suffix: str, method: str = "PUT") -> None:
        """Carry out the next ``method`` request whose path ends with ``suffix``, then drop the
        connection unanswered."""
        self._lose.append((method, suffix))

    def garble_next(self, suffix: str, edit: Callable[[Any], Any] | str) -> None:
        """Answer the next ``GET`` whose path ends with ``suffix`` with its JSON answer passed
        through ``edit`` (a value of the wrong shape), or with ``edit`` itself as the body
        when it is a string (an HTML page, an empty body), with status 200."""
        self._garble.append((suffix, edit))

    def count(self, method: str, suffix: str = "") -> int:
        """Requests of ``method`` whose path ends with ``suffix``."""
        return sum(1 for m, p in self.requests if m == method and p.endswith(suffix))

    # -- serving ----------------------------------------------------------------------------

    async def __aenter__(self) -> FakeOpenStack:
        app = web.Application(middlewares=[self._middleware], client_max_size=self.max_body * 4)
        app.router.add_post("/identity/v3/auth/tokens", self._issue_token)
        app.router.add_get("/network/v2.0/extensions", self._extensions)
        app.router.add_get("/network/v2.0/extensions/{alias}", self._extension)
        app.router.add_get("/network/v2.0/routers/{id}", self._show_router)
        app.router.add_put("/network/v2.0/routers/{id}", self._update_router)
        app.router.add_put("/network/v2.0/routers/{id}/add_extraroutes", self._add_extraroutes)
        app.router.add_put(
            "/network/v2.0/routers/{id}/remove_extraroutes", self._remove_extraroutes
        )
        app.router.add_get("/compute/v2.1", self._compute_version)
        app.router.add_get("/compute/v2.1/", self._compute_version)
        app.router.add_get("/compute/v2.1/servers/detail", self._servers)
        self._runner, self.url = await serve_locally(app, ssl_context=self.ssl_context)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.requests.append((request.method, request.path))
        self.times.append(asyncio.get_running_loop().time())
        for index, (suffix, status, kind, headers) in enumerate(self._errors):
            if request.path.endswith(suffix):
                if self._delay:
                    self._delay -= 1
                    break
                del self._errors[index]
                answer = _neutron_error(status, kind, f"injected {status}")
                answer.headers.update(headers)
                return answer
        if request.path != "/identity/v3/auth/tokens" and (
            not self._token or request.headers.get("X-Auth-Token") != self._token
        ):
            return web.json_response(
                {"error": {"code": 401, "message": "unauthorized"}}, status=401
            )
        if request.content_length and request.content_length > self.max_body:
            return web.json_response({"error": "request body too large"}, status=413)
        response = await handler(request)
        for index, (suffix, edit) in enumerate(self._garble):
            if request.method == "GET" and request.path.endswith(suffix):
                del self._garble[index]
                if isinstance(edit, str):
                    return web.Response(text=edit, content_type="text/html")
                text = response.text if isinstance(response, web.Response) else None
                return web.json_response(edit(json.loads(text or "null")))
        lost = next(
            (x for x in self._lose if x[0] == request.method and request.path.endswith(x[1])), None
        )
        if lost is not None and response.status < 400 and request.transport is not None:  # noqa: PLR2004
            self._lose.remove(lost)
            request.transport.abort()
        return response

    # -- Keystone ---------------------------------------------------------------------------

    async def _issue_token(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.identities.append(body["auth"]["identity"])
        password = body["auth"]["identity"].get("password", {}).get("user", {}).get("password")
        if password != PASSWORD:
            return web.json_response(
                {"error": {"code": 401, "message": "bad credentials"}}, status=401
            )
        self._token = f"token-{next(self._ids)}"
        return web.json_response(
            self._token_body(), status=201, headers={"X-Subject-Token": self._token}
        )

    def _token_body(self) -> dict[str, Any]:
        def service(kind: str, path: str) -> dict[str, Any]:
            return {
                "type": kind,
                "name": kind,
                "id": kind,
                "endpoints": [
                    {
                        "id": f"{kind}-{interface}",
                        "interface": interface,
                        "region": "RegionOne",
                        "region_id": "RegionOne",
                        "url": self.url + path,
                    }
                    for interface in self.interfaces
                ],
            }

        domain = {"id": "default", "name": "Default"}
        return {
            "token": {
                "catalog": [service("network", "/network"), service("compute", "/compute/v2.1")],
                "project": {"id": "p1", "name": "k8s", "domain": domain},
                "user": {"id": "u1", "name": "routectl", "domain": domain},
                "expires_at": "2099-01-01T00:00:00.000000Z",
                "issued_at": "2026-01-01T00:00:00.000000Z",
                "methods": ["password"],
                "roles": [{"id": "r1", "name": "member"}],
            }
        }

    # -- Neutron ----------------------------------------------------------------------------

    def _aliases(self) -> list[str]:
        return ["router", "extraroute", "revision-if-match", *(["extraroute-atomic"] * self.atomic)]

    async def _extensions(self, request: web.Request) -> web.Response:
        found = [
            {"alias": a, "name": a, "description": "", "updated": "", "links": []}
            for a in self._aliases()
        ]
        return web.json_response({"extensions": found})

    async def _extension(self, request: web.Request) -> web.Response:
        alias = request.match_info["alias"]
        if alias not in self._aliases():
            return _neutron_error(404, "ExtensionNotFound", f"extension {alias} not found")
        return web.json_response({"extension": {"alias": alias, "name": alias, "links": []}})

    def _router(self, request: web.Request) -> FakeRouter:
        router = self.routers.get(request.match_info["id"])
        if router is None:
            raise web.HTTPNotFound(
                text=json.dumps(
                    {"NeutronError": {"type": "RouterNotFound", "message": "no router"}}
                ),
                content_type="application/json",
            )
        return router

    async def _show_router(self, request: web.Request) -> web.Response:
        return web.json_response({"router": self._router(request).json()})

    def _check(self, router: FakeRouter, routes: list[dict[str, str]]) -> web.Response | None:
        """Neutron's validation of a new routes table."""
        for route in routes:
            try:
                hop = ipaddress.ip_address(route["nexthop"])
                ipaddress.ip_network(route["destination"])
            except (KeyError, ValueError):
                return _neutron_error(400, "InvalidRoutes", f"Invalid format for routes: {route}")
            if not any(
                hop in ipaddress.ip_network(s)
                for s in router.subnets
                if ipaddress.ip_network(s).version == hop.version
            ):
                return _neutron_error(
                    400,
                    "InvalidRoutes",
                    f"Invalid format for routes: {route}, the nexthop is not connected with router",
                )
        if len(routes) > self.max_routes:
            return _neutron_error(
                400,
                "RoutesExhausted",
                f"Unable to complete operation for {router.id}. The number of routes exceeds "
                f"the maximum {self.max_routes}.",
            )
        return None

    def _commit(self, router: FakeRouter, routes: list[dict[str, str]]) -> web.Response:
        problem = self._check(router, routes)
        if problem is not None:
            return problem
        router.routes = routes
        router.revision += 1
        return web.json_response({"router": router.json()})

    async def _update_router(self, request: web.Request) -> web.Response:
        router = self._router(request)
        match = request.headers.get("If-Match", "")
        if match and match != f"revision_number={router.revision}":
            return _neutron_error(412, "RevisionNumberConstraintFailed", "the router changed")
        body = await request.json()
        return self._commit(router, [dict(r) for r in body["router"].get("routes", router.routes)])

    async def _add_extraroutes(self, request: web.Request) -> web.Response:
        if not self.atomic:
            return _neutron_error(404, "HTTPNotFound", "the resource could not be found")
        router = self._router(request)
        added = [dict(r) for r in (await request.json())["router"]["routes"]]
        return self._commit(router, router.routes + [r for r in added if r not in router.routes])

    async def _remove_extraroutes(self, request: web.Request) -> web.Response:
        if not self.atomic:
            return _neutron_error(404, "HTTPNotFound", "the resource could not be found")
        router = self._router(request)
        removed = [dict(r) for r in (await request.json())["router"]["routes"]]
        return self._commit(router, [r for r in router.routes if r not in removed])

    # -- Nova -------------------------------------------------------------------------------

    async def _compute_version(self, request: web.Request) -> web.Response:
        link = {"href": f"{self.url}/compute/v2.1/", "rel": "self"}
        version = {
            "id": "v2.1",
            "status": "CURRENT",
            "version": "2.96",
            "min_version": "2.1",
            "links": [link],
        }
        return web.json_response({"version": version})

    async def _servers(self, request: web.Request) -> web.Response:
        servers = [
            {
                "id": server,
                "name": name,
                "status": "ACTIVE",
                "addresses": {
                    "k8s-net": [
                        {
                            "addr": a,
                            "version": ipaddress.ip_address(a).version,
                            "OS-EXT-IPS:type": "fixed",
                        }
                        for a in addresses
                    ]
                },
            }
            for server, (name, addresses) in self.servers.items()
        ]
        return web.json_response({"servers": servers})

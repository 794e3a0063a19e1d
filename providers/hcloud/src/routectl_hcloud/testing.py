"""A fake of the Hetzner Cloud API's networks, servers and actions, over HTTP on 127.0.0.1.

:class:`FakeHcloud` keeps state and behaves like the documented API where routes are
concerned: ``GET /networks`` (by name), ``GET /networks/{id}`` with its ``routes``,
``POST /networks/{id}/actions/add_route`` and ``.../delete_route`` answering a running
``action`` that completes ``action_seconds`` later (only then is the change visible), and
``GET /actions/{id}``; ``GET /servers`` paginated (``meta.pagination``) with ``private_net``.
It also models what makes route controllers hard: bearer-token auth (401 ``unauthorized``),
a request budget refilled evenly (429 ``rate_limit_exceeded`` with ``RateLimit-*`` headers),
``locked`` while another action runs on the network, the 100-routes-per-network limit
(``resource_limit_exceeded``), ``invalid_input`` for a destination that exists or overlaps,
injected failures (with extra headers, such as a 503's ``Retry-After``), and answers lost
after the request was carried out (the connection drops). Time is the running loop's clock
(shifted to a fixed Unix epoch), so everything fast-forwards under looptime; every request
is logged for counting.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import email.utils
import ipaddress
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from routectl.testing.serving import serve_locally

__all__ = ["EPOCH", "TEST_TOKEN", "FakeHcloud", "FakeNetwork", "FakeServer"]

EPOCH = 1_800_000_000.0
"""The fake's Unix time when the loop's clock reads 0."""
TEST_TOKEN = "fake-hcloud-token"  # noqa: S105 -- the fake's own token, not a secret


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclasses.dataclass(slots=True, kw_only=True)
class FakeNetwork:
    """A network: its IP range, one cloud subnet, and its routes (``destination``, ``gateway``)."""

    id: int
    name: str
    ip_range: str
    subnet: str
    routes: list[dict[str, str]] = dataclasses.field(default_factory=list)

    def json(self) -> dict[str, Any]:
        """The API's ``network`` object."""
        net = ipaddress.ip_network(self.subnet)
        return {
            "id": self.id,
            "name": self.name,
            "ip_range": self.ip_range,
            "subnets": [
                {
                    "type": "cloud",
                    "ip_range": self.subnet,
                    "network_zone": "eu-central",
                    "gateway": str(net.network_address + 1),
                }
            ],
            "routes": [dict(route) for route in self.routes],
            "servers": [],
            "labels": {},
            "protection": {"delete": False},
            "expose_routes_to_vswitch": False,
        }


@dataclasses.dataclass(slots=True, kw_only=True)
class FakeServer:
    """A server; ``private_net`` maps network ids to its private IP there."""

    id: int
    name: str
    private_net: dict[int, str] = dataclasses.field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        """The API's ``server`` object (the fields routes need, and a few more)."""
        return {
            "id": self.id,
            "name": self.name,
            "status": "running",
            "private_net": [
                {"network": network, "ip": ip, "alias_ips": [], "mac_address": "86:00:00:00:00:01"}
                for network, ip in self.private_net.items()
            ],
            "labels": {},
        }


@dataclasses.dataclass(slots=True, kw_only=True)
class _Action:
    id: int
    command: str
    network_id: int
    started: float
    done_at: float
    effect: Callable[[], None]
    fail: tuple[str, str] | None = None
    status: str = "running"
    finished: float | None = None

    def json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "command": self.command,
            "status": self.status,
            "progress": 100 if self.status != "running" else 0,
            "started": _iso(self.started),
            "finished": _iso(self.finished) if self.finished is not None else None,
            "resources": [{"id": self.network_id, "type": "network"}],
            "error": {"code": self.fail[0], "message": self.fail[1]}
            if self.fail and self.status == "error"
            else None,
        }


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Fault:
    status: int
    code: str
    message: str
    method: str | None
    path: str | None
    headers: Mapping[str, str]


def _iso(unix: float) -> str:
    return email.utils.formatdate(unix, usegmt=True)


def _error(status: int, code: str, message: str, **details: Any) -> web.Response:
    return web.json_response(
        {"error": {"code": code, "message": message, "details": details or None}}, status=status
    )


class FakeHcloud:
    """The fake API; start it with ``async with`` and point the provider at :attr:`url`."""

    def __init__(
        self,
        *,
        token: str = TEST_TOKEN,
        rate_limit: int = 3600,
        rate_window: float = 3600.0,
        action_seconds: float = 1.0,
        route_limit: int = 100,
    ) -> None:
        self.token = token
        self.rate_limit = rate_limit
        self.rate_window = rate_window
        self.action_seconds = action_seconds
        self.route_limit = route_limit
        self.networks: dict[int, FakeNetwork] = {}
        self.servers: dict[int, FakeServer] = {}
        self.requests: list[tuple[str, str]] = []
        """Every request received, as (method, path), answered or not."""
        self.times: list[float] = []
        """The loop time each request arrived at, in order."""
        self.url = ""
        self._actions: dict[int, _Action] = {}
        self._faults: collections.deque[_Fault] = collections.deque()
        self._scripted: list[tuple[str, object]] = []
        self._delay = 0
        self._action_faults: collections.deque[tuple[str, str]] = collections.deque()
        self._lose: list[str] = []
        self._ids = iter(range(1000, 10**9))
        self._budget = float(rate_limit)
        self._budget_stamp: float | None = None
        self._runner: web.AppRunner | None = None

    # -- scene verbs ------------------------------------------------------------------------

    def add_network(
        self, name: str, *, ip_range: str = "10.0.0.0/16", subnet: str = "10.0.1.0/24"
    ) -> FakeNetwork:
        """A new network with one cloud subnet."""
        network = FakeNetwork(id=next(self._ids), name=name, ip_range=ip_range, subnet=subnet)
        self.networks[network.id] = network
        return network

    def add_server(self, name: str, *, network: FakeNetwork | None = None) -> FakeServer:
        """A new server, attached to ``network`` (the next free IP of its subnet) if given."""
        server = FakeServer(id=next(self._ids), name=name)
        if network is not None:
            self.attach(server, network)
        self.servers[server.id] = server
        return server

    def attach(self, server: FakeServer, network: FakeNetwork) -> str:
        """Give ``server`` the next free private IP in ``network``'s subnet; returns it."""
        taken = {s.private_net.get(network.id) for s in self.servers.values()}
        hosts = ipaddress.ip_network(network.subnet).hosts()
        next(hosts)  # the subnet's gateway
        ip = next(str(h) for h in hosts if str(h) not in taken)
        server.private_net[network.id] = ip
        return ip

    def delete_server(self, server: FakeServer) -> None:
        """The server is gone; routes to its IP stay (as in the real cloud)."""
        self.servers.pop(server.id, None)

    def fail_next(
        self,
        status: int,
        code: str,
        message: str = "injected failure",
        *,
        method: str | None = None,
        path: str | None = None,
        times: int = 1,
        headers: Mapping[str, str] | None = None,
        after: int = 0,
    ) -> None:
        """Answer the next ``times`` requests (matching ``method``/``path``) with an error,
        carrying ``headers`` (a ``Retry-After``, say) besides the rate-limit ones; with
        ``after``, let that many matching requests through first."""
        self._delay = after
        fault = _Fault(
            status=status,
            code=code,
            message=message,
            method=method,
            path=path,
            headers=dict(headers or {}),
        )
        self._faults.extend([fault] * times)

    def answer_next(self, path: str, body: object) -> None:
        """Answer the next request to exactly ``path`` with 200 and ``body`` (any JSON: the
        shape of an answer a garbling proxy or a changed API might give)."""
        self._scripted.append((path, body))

    def fail_next_action(self, code: str = "action_failed", message: str = "failed") -> None:
        """The next action created ends with status ``error``."""
        self._action_faults.append((code, message))

    def lose_next_answer(self, suffix: str) -> None:
        """Carry out the next request whose path ends with ``suffix``, then drop the connection."""
        self._lose.append(suffix)

    def count(self, method: str, path: str) -> int:
        """Requests received of ``method`` to exactly ``path`` (no query string)."""
        return self.requests.count((method, path))

    def exhaust_budget(self) -> None:
        """Spend the whole request budget now (the next request gets a 429)."""
        self._refill()
        self._budget = 0.0

    # -- serving ------------------------------------------------------------------------------

    def now(self) -> float:
        """The fake's Unix time: the loop's clock shifted to :data:`EPOCH`."""
        return EPOCH + asyncio.get_running_loop().time()

    async def start(self) -> str:
        """Listen on 127.0.0.1 (a free port); returns the API's base URL."""
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/v1/networks", self._list_networks)
        app.router.add_get("/v1/networks/{id}", self._get_network)
        app.router.add_post("/v1/networks/{id}/actions/add_route", self._add_route)
        app.router.add_post("/v1/networks/{id}/actions/delete_route", self._delete_route)
        app.router.add_get("/v1/servers", self._list_servers)
        app.router.add_get("/v1/actions/{id}", self._get_action)
        self._runner, base = await serve_locally(app)
        self.url = f"{base}/v1"
        return self.url

    async def aclose(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeHcloud:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _refill(self) -> None:
        now = self.now()
        if self._budget_stamp is not None:
            rate = self.rate_limit / self.rate_window
            self._budget = min(
                float(self.rate_limit), self._budget + (now - self._budget_stamp) * rate
            )
        self._budget_stamp = now

    def _rate_headers(self) -> dict[str, str]:
        now = self.now()
        rate = self.rate_limit / self.rate_window
        reset = now + (self.rate_limit - self._budget) / rate
        return {
            "RateLimit-Limit": str(self.rate_limit),
            "RateLimit-Remaining": str(math.floor(self._budget)),
            "RateLimit-Reset": str(math.ceil(reset)),
            "Date": email.utils.formatdate(now, usegmt=True),
        }

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path.removeprefix("/v1")
        self.requests.append((request.method, path))
        self.times.append(asyncio.get_running_loop().time())
        self._advance()
        response = await self._answer(request, path, handler)
        response.headers.update(self._rate_headers())
        lost = next((s for s in self._lose if path.endswith(s)), None)
        if lost is not None and response.status < 400 and request.transport is not None:  # noqa: PLR2004
            self._lose.remove(lost)
            request.transport.abort()
        return response

    async def _answer(
        self, request: web.Request, path: str, handler: Handler
    ) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return _error(401, "unauthorized", "unable to authenticate")
        self._refill()
        if self._budget < 1:
            return _error(429, "rate_limit_exceeded", "limit of requests per hour reached")
        self._budget -= 1
        for index, (where, body) in enumerate(self._scripted):
            if where == path:
                del self._scripted[index]
                return web.json_response(body)
        for index, fault in enumerate(self._faults):
            if fault.method in (None, request.method) and fault.path in (None, path):
                if self._delay:
                    self._delay -= 1
                    break
                del self._faults[index]
                answer = _error(fault.status, fault.code, fault.message)
                answer.headers.update(fault.headers)
                return answer
        try:
            return await handler(request)
        except web.HTTPNotFound:
            return _error(404, "not_found", "resource not found")

    def _advance(self) -> None:
        """Finish the actions whose time has come; only then do their changes show."""
        now = self.now()
        for action in self._actions.values():
            if action.status == "running" and action.done_at <= now:
                action.finished = action.done_at
                if action.fail is None:
                    action.effect()
                    action.status = "success"
                else:
                    action.status = "error"

    def _network(self, request: web.Request) -> FakeNetwork:
        try:
            return self.networks[int(request.match_info["id"])]
        except (KeyError, ValueError):
            raise web.HTTPNotFound from None

    def _running(self, network: FakeNetwork) -> list[_Action]:
        return [
            a
            for a in self._actions.values()
            if a.network_id == network.id and a.status == "running"
        ]

    def _start_action(
        self, command: str, network: FakeNetwork, effect: Callable[[], None]
    ) -> web.Response:
        now = self.now()
        action = _Action(
            id=next(self._ids),
            command=command,
            network_id=network.id,
            started=now,
            done_at=now + self.action_seconds,
            effect=effect,
            fail=self._action_faults.popleft() if self._action_faults else None,
        )
        self._actions[action.id] = action
        self._advance()
        return web.json_response({"action": action.json()}, status=201)

    # -- endpoints ----------------------------------------------------------------------------

    async def _list_networks(self, request: web.Request) -> web.Response:
        name = request.query.get("name")
        found = [n.json() for n in self.networks.values() if name in (None, n.name)]
        return web.json_response({"networks": found, "meta": _pagination(1, 25, len(found))})

    async def _get_network(self, request: web.Request) -> web.Response:
        return web.json_response({"network": self._network(request).json()})

    async def _route_body(self, request: web.Request) -> tuple[str, str] | web.Response:
        try:
            body = await request.json()
            return str(body["destination"]), str(body["gateway"])
        except (ValueError, KeyError, TypeError):
            return _error(400, "json_error", "destination and gateway are required")

    async def _add_route(self, request: web.Request) -> web.Response:
        network = self._network(request)
        parsed = await self._route_body(request)
        if isinstance(parsed, web.Response):
            return parsed
        destination, gateway = parsed
        try:
            dest = ipaddress.ip_network(destination)
            gate = ipaddress.ip_address(gateway)
        except ValueError:
            return _error(400, "invalid_input", "invalid destination or gateway")
        if not isinstance(dest, ipaddress.IPv4Network) or not isinstance(
            gate, ipaddress.IPv4Address
        ):
            return _error(400, "invalid_input", "destination and gateway must be IPv4")
        if gate not in ipaddress.ip_network(network.ip_range):
            return _error(400, "invalid_input", "invalid gateway", fields=[{"name": "gateway"}])
        if self._running(network):
            return _error(423, "locked", "network is locked: another action is running")
        overlaps = [
            r for r in network.routes if ipaddress.ip_network(r["destination"]).overlaps(dest)
        ]
        if overlaps or ipaddress.ip_network(network.subnet).overlaps(dest):
            return _error(
                400,
                "invalid_input",
                "network route destination overlaps with another subnetwork or network route",
                fields=[{"name": "destination", "messages": ["overlaps"]}],
            )
        if len(network.routes) >= self.route_limit:
            return _error(
                403,
                "resource_limit_exceeded",
                f"network route limit of {self.route_limit} reached",
            )
        route = {"destination": str(dest), "gateway": str(gate)}
        return self._start_action("add_route", network, lambda: network.routes.append(route))

    async def _delete_route(self, request: web.Request) -> web.Response:
        network = self._network(request)
        parsed = await self._route_body(request)
        if isinstance(parsed, web.Response):
            return parsed
        destination, gateway = parsed
        if self._running(network):
            return _error(423, "locked", "network is locked: another action is running")
        wanted = {"destination": destination, "gateway": gateway}
        if wanted not in network.routes:
            return _error(404, "not_found", "route not found")

        def effect() -> None:
            if wanted in network.routes:
                network.routes.remove(wanted)

        return self._start_action("delete_route", network, effect)

    async def _list_servers(self, request: web.Request) -> web.Response:
        try:
            page = max(int(request.query.get("page", "1")), 1)
            per_page = min(max(int(request.query.get("per_page", "25")), 1), 50)
        except ValueError:
            return _error(400, "invalid_input", "invalid pagination")
        servers = [s.json() for s in sorted(self.servers.values(), key=lambda s: s.id)]
        chunk = servers[(page - 1) * per_page : page * per_page]
        return web.json_response(
            {"servers": chunk, "meta": _pagination(page, per_page, len(servers))}
        )

    async def _get_action(self, request: web.Request) -> web.Response:
        try:
            action = self._actions[int(request.match_info["id"])]
        except (KeyError, ValueError):
            raise web.HTTPNotFound from None
        return web.json_response({"action": action.json()})


def _pagination(page: int, per_page: int, total: int) -> dict[str, Any]:
    last = max(math.ceil(total / per_page), 1)
    return {
        "pagination": {
            "page": page,
            "per_page": per_page,
            "previous_page": page - 1 if page > 1 else None,
            "next_page": page + 1 if page < last else None,
            "last_page": last,
            "total_entries": total,
        }
    }

"""A fake of Example Cloud's REST API over HTTP on 127.0.0.1, for the plugin's tests.

It keeps state and behaves like the documented API: ``GET /servers``; ``GET /routes?page=N``
(two routes a page, ``next_page``); ``POST /routes`` (409 when the destination is taken);
``DELETE /routes/{id}`` (404 when gone). Tests count :attr:`FakeCloud.requests`, queue error
answers with :meth:`FakeCloud.fail_next` (a 429 carries ``Retry-After``;
:meth:`FakeCloud.let_through` lets requests through first), and make the next
write carry out its change but lose its answer with :meth:`FakeCloud.lose_next_answer`;
:meth:`FakeCloud.answer_next` gives the next ``GET`` of a path a body of any shape.
"""

from __future__ import annotations

import collections
import itertools
from typing import Any

from aiohttp import web

from routectl.testing.serving import serve_locally

PAGE = 2


class FakeCloud:
    """Servers (id -> name) and one shared list of routes; start it with ``async with``."""

    def __init__(self) -> None:
        self.servers: dict[str, str] = {}
        self.routes: list[dict[str, Any]] = []
        self.requests: list[str] = []
        self.url = ""
        self._errors: collections.deque[tuple[int, dict[str, str]]] = collections.deque()
        self._delay = 0
        self._lose_next = False
        self._bodies: dict[str, object] = {}
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None

    def add_server(self, name: str) -> str:
        """A server named ``name``; its id."""
        server = f"srv-{next(self._ids)}"
        self.servers[server] = name
        return server

    def add_route(self, destination: str, server: str, labels: dict[str, str]) -> None:
        """A route made behind the plugin's back."""
        self.routes.append(
            {
                "id": f"r-{next(self._ids)}",
                "destination": destination,
                "server": server,
                "labels": labels,
            }
        )

    def fail_next(self, status: int, **headers: str) -> None:
        """Answer the next request with ``status`` (and ``headers``, e.g. Retry-After)."""
        self._errors.append((status, headers))

    def let_through(self, requests: int) -> None:
        """Let that many requests through before the next queued failure."""
        self._delay = requests

    def answer_next(self, path: str, body: object) -> None:
        """Answer the next ``GET`` of ``path`` (``/routes``) with 200 and ``body``."""
        self._bodies[path] = body

    def lose_next_answer(self) -> None:
        """Carry out the next write (``POST``, ``DELETE``), then drop the connection unanswered."""
        self._lose_next = True

    async def __aenter__(self) -> FakeCloud:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/v1/servers", self._list_servers)
        app.router.add_get("/v1/routes", self._list_routes)
        app.router.add_post("/v1/routes", self._create_route)
        app.router.add_delete("/v1/routes/{id}", self._delete_route)
        self._runner, base = await serve_locally(app)
        self.url = f"{base}/v1"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append(f"{request.method} {request.path}")
        if self._errors and self._delay:
            self._delay -= 1
        elif self._errors:
            status, headers = self._errors.popleft()
            return web.json_response({"error": "injected"}, status=status, headers=headers)
        path = request.path.removeprefix("/v1")
        if request.method == "GET" and path in self._bodies:
            return web.json_response(self._bodies.pop(path))
        response: web.StreamResponse = await handler(request)
        write = request.method in {"POST", "DELETE"}
        if self._lose_next and write and request.transport is not None:
            self._lose_next = False
            request.transport.abort()
        return response

    async def _list_servers(self, request: web.Request) -> web.Response:
        servers = [{"id": id_, "name": name} for id_, name in self.servers.items()]
        return web.json_response({"servers": servers})

    async def _list_routes(self, request: web.Request) -> web.Response:
        page = int(request.query.get("page", "1"))
        chunk = self.routes[(page - 1) * PAGE : page * PAGE]
        more = len(self.routes) > page * PAGE
        return web.json_response({"routes": chunk, "next_page": page + 1 if more else None})

    async def _create_route(self, request: web.Request) -> web.Response:
        body = await request.json()
        if any(r["destination"] == body["destination"] for r in self.routes):
            return web.json_response({"error": "destination taken"}, status=409)
        self.add_route(body["destination"], body["server"], body.get("labels", {}))
        return web.json_response({"route": self.routes[-1]}, status=201)

    async def _delete_route(self, request: web.Request) -> web.Response:
        kept = [r for r in self.routes if r["id"] != request.match_info["id"]]
        if len(kept) == len(self.routes):
            return web.json_response({"error": "not found"}, status=404)
        self.routes = kept
        return web.Response(status=204)

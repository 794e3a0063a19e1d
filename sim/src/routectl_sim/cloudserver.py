"""A :class:`~routectl.testing.FakeCloud` served over HTTP, for real ``routectl run`` processes.

Several processes (two replicas, say) can share one simulated cloud through it; the
``fake`` provider plugin talks to it when given ``--provider-option endpoint=<url>``. The
API is small and REST-shaped, like a cloud's::

    GET    /clusters/{c}/routes                -> 200 {"routes": [{name, destination, target,
                                                                  blackhole}]}
    POST   /clusters/{c}/routes                {destination, target, nameHint} -> 201 {name}
    DELETE /clusters/{c}/routes/{name}?destination=...&target=...                -> 204

Errors are HTTP statuses with a JSON ``{"message"}``: 409 (exists, with the ``holder``
route as a listing shows it), 404 (gone), 429 with a
``Retry-After`` header (throttled), 403 (terminal: quota), 503 (transient). Every request is
recorded with its loop time, the ``X-Client`` header the plugin sends (its ``client``
option) and the status answered, so tests see who wrote what, when. :meth:`answer_next`
scripts raw answers (a 200 of the wrong shape, an HTML page, any status and header) and
:meth:`reset_next` cuts the connection, and :attr:`also_listed` adds raw entries to every
listing (a null destination, a numeric one), to try a client's robustness.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.testing import FakeCloud

_STATUS: tuple[tuple[type[ProviderError], int], ...] = (
    (RouteAlreadyExistsError, 409),
    (RouteNotFoundError, 404),
    (ProviderThrottledError, 429),
    (ProviderTerminalError, 403),
    (ProviderError, 503),
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CloudRequest:
    """One request the server received, and what it answered."""

    time: float
    operation: str
    client: str
    status: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Scripted:
    """A raw answer to give instead of the cloud's (``reset``: cut the connection)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    reset: bool = False


class CloudServer:
    """Serves ``cloud`` on 127.0.0.1 (``port``, by default an ephemeral one); ``url`` once
    started."""

    def __init__(self, cloud: FakeCloud | None = None, *, port: int = 0) -> None:
        self.cloud = cloud or FakeCloud()
        self.port = port
        self.requests: list[CloudRequest] = []
        self.also_listed: list[dict[str, object]] = []
        """Raw entries added to every listing answer, as a garbled cloud would list them."""
        self.url = ""
        self._scripted: dict[str, collections.deque[Scripted]] = collections.defaultdict(
            collections.deque
        )
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/clusters/{cluster}/routes", self._list)
        app.router.add_post("/clusters/{cluster}/routes", self._create)
        app.router.add_delete("/clusters/{cluster}/routes/{name}", self._delete)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def answer_next(self, operation: str, answer: Scripted, *, times: int = 1) -> None:
        """Answer the next ``times`` requests of ``operation`` (list, create, delete) so."""
        self._scripted[operation].extend([answer] * times)

    def reset_next(self, operation: str, *, times: int = 1) -> None:
        """Cut the connection of the next ``times`` requests of ``operation``."""
        self.answer_next(operation, Scripted(reset=True), times=times)

    def writes(self, *, client: str | None = None, since: float = 0.0) -> list[CloudRequest]:
        """Create and delete requests received at or after ``since`` (of ``client``, if given)."""
        return [
            r
            for r in self.requests
            if r.operation != "list" and r.time >= since and client in (None, r.client)
        ]

    async def _list(self, request: web.Request) -> web.StreamResponse:
        cluster = request.match_info["cluster"]

        async def run() -> object:
            routes = await self.cloud.serve(cluster, "list", lambda: self.cloud.listing(cluster))
            listed = [_route_json(r) for r in routes]  # type: ignore[attr-defined]
            return {"routes": [*listed, *self.also_listed]}

        return await self._answer(request, "list", run, ok=200)

    async def _create(self, request: web.Request) -> web.StreamResponse:
        cluster = request.match_info["cluster"]
        body = await request.json()
        route = Route(target_node=body["target"], destination_cidr=body["destination"])

        async def run() -> object:
            await self.cloud.serve(
                cluster, "create", lambda: self.cloud.create(cluster, route, body["nameHint"])
            )
            (made,) = [
                r
                for r in self.cloud.routes(cluster)
                if r.destination_cidr == route.destination_cidr
            ]
            return {"name": made.name}

        return await self._answer(request, "create", run, ok=201)

    async def _delete(self, request: web.Request) -> web.StreamResponse:
        cluster = request.match_info["cluster"]
        route = Route(
            target_node=request.query.get("target", ""),
            destination_cidr=request.query.get("destination", ""),
            name=request.match_info["name"],
        )

        async def run() -> object:
            await self.cloud.serve(cluster, "delete", lambda: self.cloud.delete(cluster, route))
            return None

        return await self._answer(request, "delete", run, ok=204)

    async def _answer(
        self, request: web.Request, operation: str, run: Any, *, ok: int
    ) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        arrived = loop.time()
        client = request.headers.get("X-Client", "")
        status = ok
        try:
            scripted = self._scripted[operation]
            if scripted:
                answer = scripted.popleft()
                status = answer.status
                if answer.reset:
                    status = 0
                    if request.transport is not None:
                        request.transport.close()
                    raise web.HTTPBadRequest  # the connection is gone; this is never sent
                return web.Response(status=status, body=answer.body, headers=answer.headers)
            try:
                result = await run()
            except ProviderError as exc:
                status = next(code for kind, code in _STATUS if isinstance(exc, kind))
                headers = {}
                if isinstance(exc, ProviderThrottledError) and exc.retry_after is not None:
                    headers["Retry-After"] = f"{exc.retry_after:g}"
                body: dict[str, object] = {"message": str(exc)}
                if isinstance(exc, RouteAlreadyExistsError) and exc.holder is not None:
                    body["holder"] = _route_json(exc.holder)
                return web.json_response(body, status=status, headers=headers)
            if result is None:
                return web.Response(status=ok)
            return web.Response(status=ok, text=json.dumps(result), content_type="application/json")
        finally:
            self.requests.append(
                CloudRequest(time=arrived, operation=operation, client=client, status=status)
            )


def _route_json(route: Route) -> dict[str, object]:
    return {
        "name": route.name,
        "destination": route.destination_cidr,
        "target": route.target_node,
        "blackhole": route.blackhole,
    }

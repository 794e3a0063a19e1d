"""The HTTP endpoints operators and kubelets poll: ``/metrics``, ``/healthz``, ``/readyz``.

One aiohttp server on ``--metrics-bind-address`` (plain HTTP) and, with ``--secure-port``,
one more over HTTPS with delegated authentication and authorization in front
(:mod:`routectl.observe.serving`). They serve GET (and HEAD) only; every other method gets 405.
``/healthz`` and ``/livez`` answer 200 while the process runs; ``/readyz`` answers 200 only
when the informer has listed Nodes and is healthy and, on the leader, the worker runs, else
503 with the reason. No access log: probes would drown real logs.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler

from routectl.errors import ConfigError

ReadyCheck = Callable[[], tuple[bool, str]]


def build_app(
    *, registry: CollectorRegistry, ready: ReadyCheck, middlewares: Sequence[Any] = ()
) -> web.Application:
    """The probe and metrics application (``middlewares`` run before every handler)."""

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        ok, reason = ready()
        return web.Response(text=reason, status=200 if ok else 503)

    app = web.Application(middlewares=list(middlewares))
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/livez", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", make_aiohttp_handler(registry))
    return app


class ProbeServer:
    """Serves :func:`build_app` on a ``host:port`` address, over TLS when given a context."""

    def __init__(
        self,
        *,
        registry: CollectorRegistry,
        ready: ReadyCheck,
        middlewares: Sequence[Any] = (),
        tls: ssl.SSLContext | None = None,
        flag: str = "--metrics-bind-address",
    ) -> None:
        app = build_app(registry=registry, ready=ready, middlewares=middlewares)
        self._runner = web.AppRunner(app, access_log=None)
        self._tls = tls
        self._flag = flag
        self.port = 0

    async def start(self, address: str) -> None:
        """Bind and serve; port 0 picks a free port (see ``port``)."""
        host, _, port = address.rpartition(":")
        await self._runner.setup()
        site = web.TCPSite(self._runner, host.strip("[]") or None, int(port), ssl_context=self._tls)
        try:
            await site.start()
        except OSError as exc:
            raise ConfigError(
                f"{self._flag} {address}: cannot listen: {exc.strerror or exc}"
            ) from None
        server = site._server  # noqa: SLF001 -- aiohttp exposes the bound port only here
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else int(port)

    async def aclose(self) -> None:
        """Stop serving."""
        await self._runner.cleanup()

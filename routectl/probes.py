"""The HTTP endpoints operators and kubelets poll: ``/metrics``, ``/healthz``, ``/readyz``.

One aiohttp server on ``--metrics-bind-address``. It serves GET (and HEAD) only; every
other method gets 405. ``/healthz`` answers 200 while the process runs; ``/readyz``
answers 200 only when the informer has listed Nodes and is healthy and, on the leader, the
worker runs, else 503 with the reason. No access log: probes would drown real logs.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler

from routectl.errors import ConfigError

ReadyCheck = Callable[[], tuple[bool, str]]


def build_app(*, registry: CollectorRegistry, ready: ReadyCheck) -> web.Application:
    """The probe and metrics application."""

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        ok, reason = ready()
        return web.Response(text=reason, status=200 if ok else 503)

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", make_aiohttp_handler(registry))
    return app


class ProbeServer:
    """Serves :func:`build_app` on a ``host:port`` address."""

    def __init__(self, *, registry: CollectorRegistry, ready: ReadyCheck) -> None:
        self._runner = web.AppRunner(build_app(registry=registry, ready=ready), access_log=None)
        self.port = 0

    async def start(self, address: str) -> None:
        """Bind and serve; port 0 picks a free port (see ``port``)."""
        host, _, port = address.rpartition(":")
        await self._runner.setup()
        site = web.TCPSite(self._runner, host.strip("[]") or None, int(port))
        try:
            await site.start()
        except OSError as exc:
            raise ConfigError(
                f"--metrics-bind-address {address}: cannot listen: {exc.strerror or exc}"
            ) from None
        server = site._server  # noqa: SLF001 -- aiohttp exposes the bound port only here
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else int(port)

    async def aclose(self) -> None:
        """Stop serving."""
        await self._runner.cleanup()

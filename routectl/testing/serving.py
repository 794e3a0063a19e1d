"""Serve a fake cloud's aiohttp application on 127.0.0.1, on a port the system picks.

Every in-repo fake (a plugin's fake REST API, a fault proxy) starts the same way:
:func:`serve_locally` sets the application up, listens on a free port of the loopback
interface only, and returns the runner (``await runner.cleanup()`` stops it) with the base
URL the SDK under test is pointed at (``https`` when given a TLS context). Nothing listens
beyond 127.0.0.1, and no port is guessed, so tests running side by side never collide.
"""

from __future__ import annotations

import ssl

from aiohttp import web

__all__ = ["serve_locally"]


async def serve_locally(
    app: web.Application, *, ssl_context: ssl.SSLContext | None = None
) -> tuple[web.AppRunner, str]:
    """Serve ``app`` on 127.0.0.1 (a free port); the runner and ``http(s)://host:port``."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context).start()
    except BaseException:
        await runner.cleanup()
        raise
    host, port = runner.addresses[0][:2]
    scheme = "https" if ssl_context is not None else "http"
    return runner, f"{scheme}://{host}:{port}"

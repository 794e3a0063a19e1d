"""routectl.testing.serving: a fake's application served on 127.0.0.1, on a free port."""

from __future__ import annotations

import ssl

import aiohttp
import pytest
from aiohttp import web

from routectl.testing.serving import serve_locally


def _app() -> web.Application:
    async def hello(request: web.Request) -> web.Response:
        return web.Response(text=f"hello {request.remote}")

    app = web.Application()
    app.router.add_get("/", hello)
    return app


async def test_two_fakes_get_two_free_loopback_ports_and_stop() -> None:
    first, first_url = await serve_locally(_app())
    second, second_url = await serve_locally(_app())
    assert first_url.startswith("http://127.0.0.1:")
    assert first_url != second_url
    async with aiohttp.ClientSession() as session:
        for url in (first_url, second_url):
            async with session.get(f"{url}/") as answer:
                assert await answer.text() == "hello 127.0.0.1"
        await first.cleanup()
        await second.cleanup()
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.get(f"{first_url}/")


async def test_a_tls_context_gives_an_https_url() -> None:
    runner, url = await serve_locally(
        _app(), ssl_context=ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    )
    await runner.cleanup()
    assert url.startswith("https://127.0.0.1:")

"""A busy watch read in batches over real HTTP: the body's end is read, not refused.

aiohttp's parser refuses to pause a response whose body has ended (an AssertionError from
its C parser); a watch the server ends while it is busy (its timeout, a restart) must end
the read cleanly, with every event, and never crash the informer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from routectl.kube.stream import BUSY_READS, ReadPacer, lines

pytestmark = pytest.mark.looptime

EVENTS = 3 * BUSY_READS


async def busy_then_ends(request: web.Request) -> web.StreamResponse:
    """Events 20 ms apart (busy), the last one sent with the body's end."""
    response = web.StreamResponse()
    response.enable_chunked_encoding()
    await response.prepare(request)
    for n in range(EVENTS):
        await asyncio.sleep(0.02)
        await response.write(b'{"n":%d}\n' % n)
    await response.write_eof()
    return response


@pytest.fixture
async def url() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/watch", busy_then_ends)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/watch"
    finally:
        await runner.cleanup()


async def test_a_busy_watch_that_ends_is_read_to_its_end(url: str) -> None:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.connection is not None
        pacer = ReadPacer(response.connection.protocol)
        got = [line async for line in lines(response.content, limit=1000, pacer=pacer)]
    assert got == [b'{"n":%d}' % n for n in range(EVENTS)]
    assert pacer.pauses > 0, "the stream was busy: read in batches until it ended"

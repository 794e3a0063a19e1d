"""A busy watch is read in batches; a quiet one, and a burst of a few changes, at once."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest
from aiohttp import StreamReader

from routectl.kube.stream import BATCH_WINDOW, BUSY_READS, ReadPacer, lines

pytestmark = pytest.mark.looptime


class Connection:
    """A connection whose events arrive at given times; unread while paused, they pile up
    (as in the kernel's socket buffer) and the next read takes all that arrived."""

    def __init__(self, arrivals: list[tuple[float, bytes]]) -> None:
        self.arrivals = arrivals
        self.paused = False
        self.reads: list[tuple[float, int]] = []
        """(when, how many events) of each read."""

    def pause_reading(self) -> None:
        assert not self.paused
        self.paused = True

    def resume_reading(self) -> None:
        assert self.paused
        self.paused = False

    def is_eof(self) -> bool:
        return not self.arrivals

    async def readany(self) -> bytes:
        assert not self.paused, "read while paused"
        loop = asyncio.get_running_loop()
        if not self.arrivals:
            return b""
        await asyncio.sleep(max(0.0, self.arrivals[0][0] - loop.time()))
        now = loop.time()
        taken = [data for at, data in self.arrivals if at <= now + 1e-9]
        del self.arrivals[: len(taken)]
        self.reads.append((now, len(taken)))
        return b"".join(taken)


async def read(connection: Connection) -> tuple[list[bytes], ReadPacer]:
    pacer = ReadPacer(connection)
    content = cast("StreamReader", connection)
    return [line async for line in lines(content, limit=1000, pacer=pacer)], pacer


def events(times: list[float]) -> list[tuple[float, bytes]]:
    return [(at, b'{"n":%d}\n' % i) for i, at in enumerate(times)]


async def test_a_steady_stream_is_read_in_batches_and_every_event_arrives_whole() -> None:
    start = asyncio.get_running_loop().time()
    times = [start + 0.02 * i for i in range(1, 251)]  # 50 a second for 5 seconds
    connection = Connection(events(times))
    got, pacer = await read(connection)
    assert got == [b'{"n":%d}' % i for i in range(250)]
    assert pacer.pauses > 0
    assert len(connection.reads) < 250 / 3, "several events per read once busy"
    read_at = [when for when, _ in connection.reads]
    waits = [min(when for when in read_at if when >= at - 1e-9) - at for at in times]
    assert max(waits) <= BATCH_WINDOW + 1e-6, "no event waits longer than one window"


async def test_a_quiet_stream_and_a_burst_are_read_at_once() -> None:
    start = asyncio.get_running_loop().time()
    quiet = [start + 0.2 * i for i in range(1, 30)]  # 5 a second: never busy
    burst = [quiet[-1] + 1.0 + 0.005 * i for i in range(BUSY_READS - 1)]  # a burst of changes
    connection = Connection(events(quiet + burst))
    got, pacer = await read(connection)
    assert len(got) == len(quiet) + len(burst)
    assert pacer.pauses == 0
    assert all(count == 1 for _, count in connection.reads), "each event read when it came"


async def test_without_a_connection_to_pause_nothing_waits() -> None:
    pacer = ReadPacer(None)
    loop = asyncio.get_running_loop()
    before = loop.time()
    for _ in range(3 * BUSY_READS):
        await pacer.after_read()
    assert loop.time() == before
    assert pacer.pauses == 0


class Refusing(Connection):
    """A connection whose library refuses to pause it (aiohttp's parser asserts)."""

    def pause_reading(self) -> None:
        raise AssertionError


async def test_a_pause_the_library_refuses_leaves_the_stream_read_as_it_comes() -> None:
    start = asyncio.get_running_loop().time()
    times = [start + 0.02 * i for i in range(1, 101)]  # busy: 50 a second
    connection = Refusing(events(times))
    got, pacer = await read(connection)
    assert got == [b'{"n":%d}' % i for i in range(100)]
    assert pacer.pauses == 0
    assert len(connection.reads) == 100, "each event read when it came, once refused"

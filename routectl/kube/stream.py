"""Watch streams: a chunked HTTP body split into events, of any size up to a limit.

Watch events are split into lines here, not by aiohttp's line reader, whose limit (twice
the read buffer: 4 MiB with kubernetes-asyncio's) is smaller than a Node can get with many
images and annotations. Promises: an event larger than the limit, a malformed line or an
ERROR event raise :class:`~routectl.errors.KubeError` (410 as ResourceVersionGoneError).

A busy stream is read in batches (:class:`ReadPacer`): once reads have come at least
:data:`BUSY_READS` a second (a steady stream of kubelet heartbeats, not a burst of Node
changes), the socket is left unread for :data:`BATCH_WINDOW` seconds after each read, so
the events of that window arrive in one read: one wake-up of the event loop, the HTTP
parser and the reader for many events, instead of one each. An event then waits at most
:data:`BATCH_WINDOW` on a busy stream; on a quiet one, and for the first reads of a
burst, not at all. A body that has ended (the server closed the watch) is not paused
(aiohttp's parser refuses it, with an AssertionError), and a pause the library refuses
for any reason leaves the stream read as it comes.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from typing import Protocol

import aiohttp
import orjson

from routectl.errors import KubeError
from routectl.kube.transport import JsonObj, error

__all__ = [
    "BATCH_WINDOW",
    "BUSY_READS",
    "MAX_EVENT_BYTES",
    "ReadPacer",
    "Reading",
    "events",
    "lines",
    "watch_event",
]

MAX_EVENT_BYTES = 64 * 1024 * 1024
"""The largest watch event accepted; far above etcd's object limit (1.5 MiB by default)."""


BATCH_WINDOW = 0.1
"""Seconds a busy stream's socket is left unread after each read, for events to pile up."""
BUSY_READS = 10
"""Reads within one second from which a stream is busy (a burst of a few Node changes is
not; 50 heartbeats a second are)."""


class Reading(Protocol):
    """What pauses and resumes reading a connection (aiohttp's protocol of a response)."""

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


class ReadPacer:
    """Reads a busy stream in batches: after a read, when :data:`BUSY_READS` reads came
    within the last second, leaves the connection unread for :data:`BATCH_WINDOW` seconds
    (the kernel keeps what arrives meanwhile), so the next read takes all of it at once."""

    def __init__(self, reading: Reading | None, *, window: float = BATCH_WINDOW) -> None:
        self._reading = reading
        self._window = window
        self._reads: collections.deque[float] = collections.deque(maxlen=BUSY_READS)
        self.pauses = 0
        """Pauses taken (for tests)."""

    async def after_read(self) -> None:
        """Called after each read: pause when the stream is busy."""
        if self._reading is None or self._window <= 0:
            return
        loop = asyncio.get_running_loop()
        reads = self._reads
        reads.append(loop.time())
        if len(reads) < BUSY_READS or reads[-1] - reads[0] >= 1.0:
            return
        reading = self._reading
        try:
            reading.pause_reading()
        except Exception:  # noqa: BLE001 -- the library refused (its parser's state): read on
            # aiohttp's parser asserts it has a body under way; should any state refuse a
            # pause, this stream is read as it comes, as a quiet one is.
            self._reading = None
            return
        self.pauses += 1
        try:
            await asyncio.sleep(self._window)
        finally:
            reading.resume_reading()


async def events(content: aiohttp.StreamReader, *, limit: int) -> AsyncIterator[JsonObj]:
    """The watch events of ``content``, blank lines skipped."""
    async for line in lines(content, limit=limit):
        if line.strip():
            yield watch_event(line)


async def lines(
    content: aiohttp.StreamReader, *, limit: int, pacer: ReadPacer | None = None
) -> AsyncIterator[bytes]:
    """The newline-separated lines of ``content``, each at most ``limit`` bytes long.

    The last line may lack its newline. Each chunk is searched once, so a line of many
    megabytes costs linear time. With a ``pacer``, a busy stream is read in batches.
    """
    pending = bytearray()
    while chunk := await content.readany():
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if len(pending) + end - start > limit:
                raise _too_large(limit)
            pending += chunk[start:end]
            yield bytes(pending)
            pending.clear()
            start = end + 1
        pending += chunk[start:]
        if len(pending) > limit:
            raise _too_large(limit)
        if pacer is not None and not content.is_eof():  # an ended body is not paused
            await pacer.after_read()
    if pending:
        yield bytes(pending)


def _too_large(limit: int) -> KubeError:
    return KubeError(f"watch nodes: an event is larger than {limit} bytes; not read")


def watch_event(line: bytes) -> JsonObj:
    """One event line read with orjson; KubeError if malformed or an ERROR event."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise KubeError("watch nodes: malformed event line") from None
    if not isinstance(event, dict):
        raise KubeError("watch nodes: malformed event")
    obj = event.get("object")
    if not isinstance(obj, dict):
        raise KubeError("watch nodes: an event without an object")
    if event.get("type") == "ERROR":
        code = obj.get("code")
        raise error(code if isinstance(code, int) else 0, orjson.dumps(obj), what="watch nodes")
    return event

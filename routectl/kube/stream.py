"""Watch streams: a chunked HTTP body split into events, of any size up to a limit.

Watch events are split into lines here, not by aiohttp's line reader, whose limit (twice
the read buffer: 4 MiB with kubernetes-asyncio's) is smaller than a Node can get with many
images and annotations. Promises: an event larger than the limit, a malformed line or an
ERROR event raise :class:`~routectl.errors.KubeError` (410 as ResourceVersionGoneError).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import orjson

from routectl.errors import KubeError
from routectl.kube.transport import JsonObj, error

__all__ = ["MAX_EVENT_BYTES", "events", "lines", "watch_event"]

MAX_EVENT_BYTES = 64 * 1024 * 1024
"""The largest watch event accepted; far above etcd's object limit (1.5 MiB by default)."""


async def events(content: aiohttp.StreamReader, *, limit: int) -> AsyncIterator[JsonObj]:
    """The watch events of ``content``, blank lines skipped."""
    async for line in lines(content, limit=limit):
        if line.strip():
            yield watch_event(line)


async def lines(content: aiohttp.StreamReader, *, limit: int) -> AsyncIterator[bytes]:
    """The newline-separated lines of ``content``, each at most ``limit`` bytes long.

    The last line may lack its newline. Each chunk is searched once, so a line of many
    megabytes costs linear time.
    """
    pending = bytearray()
    async for chunk in content.iter_any():
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

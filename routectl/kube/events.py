"""Events like client-go's recorder: repeats aggregate into one object, across restarts too.

:class:`EventRecorder` sits between the sync and the API server (it is a
:class:`~routectl.kube.node_status.KubeWriter`). Like client-go's ``EventCorrelator``, an Event that
repeats is not created again: the object already written gets its ``count`` raised and its
``lastTimestamp`` (and ``message``) updated by a strategic-merge PATCH. Promises:

* Events are *similar* when they are about the same object (kind, namespace, name, uid,
  apiVersion) with the same type, reason and source: client-go's aggregation key. Similar
  Events are one object (client-go aggregates them after ten within ten minutes; routectl
  at the first repeat), whose message is the latest one;
* the object's name is derived from that key (``<object name>.<16 hex digits>``), so a new
  process finds the object its predecessor wrote: its create answers 409, and the recorder
  reads the object and raises its count. Four starts that each report the same problem
  leave one Event with ``count: 4``;
* a PATCH of an object that is gone (404: Events expire after an hour) creates it again;
* writes of one key are serialised, so concurrent repeats never lose a count;
* every message passes :data:`routectl.observe.redact.DEFAULT` before it is sent;
* at most ``max_keys`` keys are remembered (client-go keeps 4096), least recently used out.

Node status writes pass through unchanged.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib
from http import HTTPStatus
from typing import Any, Protocol

from routectl.errors import KubeError
from routectl.observe.redact import redact

MAX_KEYS = 4096
JsonObj = dict[str, Any]


class EventApi(Protocol):
    """The API calls the recorder makes (and the status write it passes through)."""

    async def patch_node_status(self, name: str, patch: JsonObj) -> None: ...

    async def create_event(self, event: JsonObj) -> JsonObj: ...

    async def get_event(self, namespace: str, name: str) -> JsonObj: ...

    async def patch_event(self, namespace: str, name: str, patch: JsonObj) -> JsonObj: ...


@dataclasses.dataclass(slots=True)
class _Seen:
    count: int


def aggregation_key(event: JsonObj) -> tuple[str, ...]:
    """client-go's ``getEventKey`` without the message: what makes Events similar."""
    involved = event.get("involvedObject") or {}
    source = event.get("source") or {}
    return (
        str(source.get("component", "")),
        str(source.get("host", "")),
        str(involved.get("kind", "")),
        str(involved.get("namespace", "")),
        str(involved.get("name", "")),
        str(involved.get("uid", "")),
        str(involved.get("apiVersion", "")),
        str(event.get("type", "")),
        str(event.get("reason", "")),
    )


def event_name(event: JsonObj) -> str:
    """``<involved object's name>.<16 hex digits of the key>``: the same in every process."""
    digest = hashlib.sha256("\x00".join(aggregation_key(event)).encode()).hexdigest()[:16]
    involved = str((event.get("involvedObject") or {}).get("name", "event"))
    return f"{involved[:236]}.{digest}"


class EventRecorder:
    """Writes Events through ``api``, aggregating repeats into one object."""

    def __init__(self, api: EventApi, *, max_keys: int = MAX_KEYS) -> None:
        self._api = api
        self._max = max_keys
        self._seen: collections.OrderedDict[tuple[str, ...], _Seen] = collections.OrderedDict()
        self._locks: dict[tuple[str, ...], asyncio.Lock] = {}

    async def patch_node_status(self, name: str, patch: JsonObj) -> None:
        """Pass the status write through."""
        await self._api.patch_node_status(name, patch)

    async def create_event(self, event: JsonObj) -> None:
        """Record ``event``: a new object, or one more occurrence of a similar one."""
        key = aggregation_key(event)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            body = self._named(event)
            seen = self._seen.get(key)
            if seen is None:
                count = await self._create_or_raise(body)
            else:
                count = await self._raise(body, seen.count + 1)
            self._remember(key, count)

    def _named(self, event: JsonObj) -> JsonObj:
        metadata = {**event["metadata"], "name": event_name(event)}
        return {**event, "metadata": metadata, "message": redact(str(event.get("message", "")))}

    async def _create_or_raise(self, body: JsonObj) -> int:
        try:
            await self._api.create_event(body)
        except KubeError as exc:
            if exc.status != HTTPStatus.CONFLICT:
                raise
        else:
            return 1
        meta = body["metadata"]  # written by an earlier process: carry its count on
        existing = await self._api.get_event(meta["namespace"], meta["name"])
        return await self._raise(body, int(existing.get("count") or 1) + 1)

    async def _raise(self, body: JsonObj, count: int) -> int:
        meta = body["metadata"]
        patch = {"count": count, "lastTimestamp": body["lastTimestamp"], "message": body["message"]}
        try:
            await self._api.patch_event(meta["namespace"], meta["name"], patch)
        except KubeError as exc:
            if exc.status != HTTPStatus.NOT_FOUND:
                raise
            await self._api.create_event(body)  # expired meanwhile: start again
            return 1
        return count

    def _remember(self, key: tuple[str, ...], count: int) -> None:
        self._seen[key] = _Seen(count)
        self._seen.move_to_end(key)
        while len(self._seen) > self._max:
            old, _ = self._seen.popitem(last=False)
            lock = self._locks.get(old)
            if lock is not None and not lock.locked():
                del self._locks[old]

"""Stored objects, the global resourceVersion, and each resource's change history.

Promises:

* :class:`Revision` is the one counter shared by every kind (like the etcd revision): each
  committed write takes the next integer, and a write that changes nothing is never
  committed, so it keeps its resourceVersion and produces no event;
* :class:`Store` keeps one resource's objects by (namespace, name) and the last
  ``history_limit`` changes; ``history_start`` is the resourceVersion from which every
  later change is still known, and anything older is "too old" (410);
* :meth:`Store.state_at` rebuilds the exact state at any resourceVersion still in history
  (for ``resourceVersionMatch=Exact`` and continue tokens), by undoing newer changes;
* every committed change is offered, synchronously and in order, to the store's
  subscribers (open watches);
* stored objects are never changed in place, only replaced: a :class:`Change` and a state
  snapshot share them with the store (readers copy what they hand out or change), while
  :meth:`Store.get` and :meth:`Store.objects` return copies. :meth:`Store.commit` takes
  the object it is given as its own (the registry hands over a fresh decode, whose
  unchanged parts may be shared with the object it replaces: never changed either).

Validation, defaulting and HTTP are elsewhere; this module only keeps and orders state.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from collections.abc import Iterable
from typing import Literal, Protocol

from routectl_sim.apiserver.encoding import json_copy
from routectl_sim.apiserver.kinds import Kind, with_meta
from routectl_sim.apiserver.status import JsonObj

Key = tuple[str, str]
"""(namespace, name); the namespace is ``""`` for cluster-scoped kinds."""

EventType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclasses.dataclass(frozen=True, slots=True)
class Change:
    """One committed write: the state after it (for DELETED, the last state) and before."""

    type: EventType
    resource_version: int
    obj: JsonObj
    prev: JsonObj | None


class Subscriber(Protocol):
    """Something that wants every change of a store (an open watch)."""

    def offer(self, change: Change) -> None:
        """Receive one change; must not block."""


class Revision:
    """The global resourceVersion counter; coroutines may wait for it to reach a value."""

    def __init__(self) -> None:
        self.value = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    def advance(self) -> int:
        """Take the next resourceVersion and wake whoever waited for it."""
        self.value += 1
        still_waiting = []
        for target, future in self._waiters:
            if target <= self.value:
                if not future.done():
                    future.set_result(None)
            else:
                still_waiting.append((target, future))
        self._waiters = still_waiting
        return self.value

    async def reached(self, target: int) -> None:
        """Wait until the counter reaches ``target`` (callers bound the wait)."""
        if self.value >= target:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, future))
        try:
            await future
        finally:
            self._waiters = [(t, f) for t, f in self._waiters if f is not future]


def key_of(obj: JsonObj) -> Key:
    """The storage key of an object."""
    meta = obj.get("metadata", {})
    return (str(meta.get("namespace", "")), str(meta.get("name", "")))


def sort_key(key: Key) -> str:
    """The etcd key suffix objects are ordered by (``/ns/name`` or ``/name``)."""
    namespace, name = key
    return f"/{namespace}/{name}" if namespace else f"/{name}"


class TooOldError(Exception):
    """The requested resourceVersion is older than the kept history."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested, self.oldest = requested, oldest


class Store:
    """One resource's objects and change history."""

    def __init__(self, *, kind: Kind, revision: Revision, history_limit: int) -> None:
        self.kind = kind
        self.revision = revision
        self.history: collections.deque[Change] = collections.deque()
        self.history_limit = history_limit
        self.history_start = 0
        self._objects: dict[Key, JsonObj] = {}
        self._subscribers: set[Subscriber] = set()

    def get(self, key: Key) -> JsonObj | None:
        """A copy of the stored object, or ``None``."""
        found = self._objects.get(key)
        return json_copy(found) if found is not None else None

    def peek(self, key: Key) -> JsonObj | None:
        """The stored object itself, or ``None``: to read, never to change (no copy)."""
        return self._objects.get(key)

    def objects(self, namespace: str | None = None) -> list[JsonObj]:
        """Copies of the stored objects (of one namespace), in key order."""
        return _in_key_order(self._objects, namespace)

    def commit(self, key: Key, new: JsonObj | None) -> Change:
        """Store ``new`` (``None`` deletes) under the next resourceVersion and publish it."""
        prev = self._objects.get(key)
        resource_version = self.revision.advance()
        if new is None:
            if prev is None:
                raise KeyError(key)
            obj = _with_resource_version(prev, resource_version)
            del self._objects[key]
            change = Change("DELETED", resource_version, obj, prev)
        else:
            obj = _with_resource_version(new, resource_version)
            self._objects[key] = obj
            kind: EventType = "ADDED" if prev is None else "MODIFIED"
            # Shared with the store, not copied: stored objects are never changed in place.
            change = Change(kind, resource_version, obj, prev)
        self._remember(change)
        for subscriber in list(self._subscribers):
            subscriber.offer(change)
        return change

    def _remember(self, change: Change) -> None:
        self.history.append(change)
        while len(self.history) > self.history_limit:
            self.history_start = self.history.popleft().resource_version

    def changes_since(self, resource_version: int) -> list[Change]:
        """Every change after ``resource_version`` (raise :class:`TooOldError` if unknown)."""
        self._check(resource_version)
        return [c for c in self.history if c.resource_version > resource_version]

    def state_at(self, resource_version: int) -> dict[Key, JsonObj]:
        """The objects as they were at ``resource_version`` (must not be in the future).

        The objects are shared with the store, not copied (a LIST of many objects would
        otherwise copy them all for every page): callers must copy what they hand out.
        Stored objects are never changed in place, only replaced, so sharing is safe.
        """
        self._check(resource_version)
        state = dict(self._objects)
        for change in reversed(self.history):
            if change.resource_version <= resource_version:
                break
            key = key_of(change.obj)
            if change.prev is None:
                state.pop(key, None)
            else:
                state[key] = change.prev
        return state

    def _check(self, resource_version: int) -> None:
        if resource_version < self.history_start:
            raise TooOldError(resource_version, self.history_start)

    def forget_history(self) -> None:
        """Compact: nothing before the current resourceVersion can be replayed any more."""
        self.history.clear()
        self.history_start = self.revision.value

    def subscribe(self, subscriber: Subscriber) -> None:
        """Start offering changes to ``subscriber``."""
        self._subscribers.add(subscriber)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Stop offering changes to ``subscriber``."""
        self._subscribers.discard(subscriber)

    def subscribers(self) -> Iterable[Subscriber]:
        """The current subscribers."""
        return tuple(self._subscribers)


def _with_resource_version(obj: JsonObj, resource_version: int) -> JsonObj:
    return with_meta(obj, resourceVersion=str(resource_version))


def _in_key_order(objects: dict[Key, JsonObj], namespace: str | None) -> list[JsonObj]:
    keys = sorted((k for k in objects if namespace is None or k[0] == namespace), key=sort_key)
    return [json_copy(objects[k]) for k in keys]


def in_key_order(objects: dict[Key, JsonObj], namespace: str | None = None) -> list[JsonObj]:
    """Objects of a state snapshot (of one namespace), in key order, shared, not copied."""
    keys = sorted((k for k in objects if namespace is None or k[0] == namespace), key=sort_key)
    return [objects[k] for k in keys]

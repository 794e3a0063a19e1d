"""WATCH semantics: the event stream of one resource (kube-api-semantics.md §2-3).

Promises:

* the response is ``200``, ``Content-Type: application/json``, chunked, headers sent at once;
  each event is one compact JSON line ending in ``\\n``; objects carry kind/apiVersion;
* resourceVersion unset or ``0`` (unless ``sendInitialEvents=false``), or
  ``sendInitialEvents=true``: a synthetic ADDED per current object in key order, then, with
  ``allowWatchBookmarks``, a BOOKMARK annotated ``k8s.io/initial-events-end: "true"``;
  ``N``: exactly the changes after N; older than the kept history: one ERROR event
  (Status 410 ``Expired``, ``too old resource version: N (M)``) then a clean end, or an
  HTTP 410 when the server is asked to answer that way;
* with selectors, an object that starts matching is ADDED, one that stops matching is
  DELETED (its previous state with the new resourceVersion);
* DELETED carries the last state with the delete's resourceVersion;
* with ``allowWatchBookmarks``, a BOOKMARK (the kind's full empty object, only
  ``metadata.resourceVersion`` meaningful) every ``bookmark_interval`` seconds and 2 s before
  the deadline, but only once the global resourceVersion has moved past the watch's start;
* ``timeoutSeconds`` (default 1800) ends the stream cleanly with no final event; time is the
  running loop's clock, so a virtual clock (looptime's, the simulator's) fast-forwards it;
* :meth:`Watch.end` ends a stream cleanly, :meth:`Watch.drop` cuts the connection mid-body.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from typing import Literal

from aiohttp import web

from routectl_sim.apiserver.encoding import JSON_CONTENT_TYPE, encode
from routectl_sim.apiserver.listing import FUTURE_WAIT, ListOptions
from routectl_sim.apiserver.status import (
    JsonObj,
    build_status,
    error,
    too_large_resource_version,
)
from routectl_sim.apiserver.store import Change, Revision, Store, TooOldError, key_of

DEFAULT_TIMEOUT = 1800.0
"""kube-apiserver's ``--min-request-timeout``: a watch without ``timeoutSeconds`` lasts this."""

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_BOOKMARK_LEAD = 2.0
_LIVENESS_CHECK = 5.0
"""How often (loop seconds) an idle watch checks that its client is still connected."""

_Signal = Literal["end", "drop"]

# Waits shorter than a clock tick (a virtual clock's resolution) may end without the clock
# moving; deadlines this close count as reached, or the loop would spin.
_EPSILON = 1e-6


@dataclasses.dataclass(slots=True, kw_only=True)
class WatchSettings:
    """Server-wide knobs a watch obeys."""

    bookmark_interval: float
    expired_as_http_status: bool = False


class Watch:
    """One open watch: filters store changes into its queue of events."""

    def __init__(self, *, store: Store, options: ListOptions, namespace: str | None) -> None:
        self.store, self.options, self.namespace = store, options, namespace
        self._pending: collections.deque[JsonObj | _Signal] = collections.deque()
        self._arrived = asyncio.Event()
        self.after = 0
        """Changes at or before this resourceVersion are not for this watch."""

    def visible(self, obj: JsonObj | None) -> bool:
        """True when ``obj`` is in this watch's namespace and passes its selectors."""
        if obj is None:
            return False
        if self.namespace is not None and key_of(obj)[0] != self.namespace:
            return False
        return self.options.matches(self.store.kind, obj)

    def events_for(self, change: Change) -> list[JsonObj]:
        """The events this watch sees for one change (none, or one)."""
        was = change.type != "ADDED" and self.visible(change.prev)
        now = change.type != "DELETED" and self.visible(change.obj)
        if was and now:
            kind, obj = "MODIFIED", change.obj
        elif now:
            kind, obj = "ADDED", change.obj
        elif was and change.type == "DELETED":
            kind, obj = "DELETED", change.obj
        elif was and change.prev is not None:
            prev_rv = {"resourceVersion": str(change.resource_version)}
            kind, obj = (
                "DELETED",
                {**change.prev, "metadata": {**change.prev["metadata"], **prev_rv}},
            )
        else:
            return []
        return [{"type": kind, "object": self.store.kind.typed(obj)}]

    def offer(self, change: Change) -> None:
        """Queue the events of one committed change."""
        if change.resource_version <= self.after:
            return
        for event in self.events_for(change):
            self._put(event)

    def end(self) -> None:
        """End the stream cleanly, like a server-side timeout."""
        self._put("end")

    def drop(self) -> None:
        """Cut the connection without finishing the chunked body."""
        self._put("drop")

    def _put(self, item: JsonObj | _Signal) -> None:
        self._pending.append(item)
        self._arrived.set()

    async def arrival(self) -> None:
        """Wait until something is queued."""
        await self._arrived.wait()

    def take(self) -> tuple[list[JsonObj], _Signal | None]:
        """The events queued, in order, up to the first end or drop (and that signal)."""
        events: list[JsonObj] = []
        pending = self._pending
        while pending:
            item = pending.popleft()
            if isinstance(item, str):  # "end" or "drop"
                return events, item
            events.append(item)
        self._arrived.clear()
        return events, None


def _initial_events(watch: Watch) -> list[JsonObj]:
    kind = watch.store.kind
    return [
        {"type": "ADDED", "object": kind.typed(obj)}
        for obj in watch.store.objects(watch.namespace)
        if watch.visible(obj)
    ]


async def _reached(revision: Revision, target: int) -> bool:
    """Whether the resourceVersion reaches ``target`` within :data:`FUTURE_WAIT` seconds."""
    try:
        async with asyncio.timeout(FUTURE_WAIT):
            await revision.reached(target)
    except TimeoutError:
        return False
    return True


def _error_event(exc_status: JsonObj) -> JsonObj:
    return {"type": "ERROR", "object": exc_status}


async def _backlog(watch: Watch, settings: WatchSettings) -> tuple[list[JsonObj], int, bool]:
    """(events to send first, the start resourceVersion, whether to stop after them).

    Must subscribe the watch in the same step as it reads history, so nothing is lost.
    """
    store, options = watch.store, watch.options
    requested = options.numeric_resource_version()
    initial = options.send_initial_events is True or (
        options.send_initial_events is None and options.resource_version in ("", "0")
    )
    revision = store.revision
    if initial and not await _reached(revision, requested):
        status = too_large_resource_version(requested, revision.value).status
        return [_error_event(status)], requested, True
    if initial:
        events = _initial_events(watch)
        if options.allow_bookmarks:
            annotations = {INITIAL_EVENTS_END: "true"}
            bookmark = store.kind.bookmark(revision.value, annotations=annotations)
            events.append({"type": "BOOKMARK", "object": bookmark})
        store.subscribe(watch)
        return events, revision.value, False
    if requested == 0:
        store.subscribe(watch)
        return [], revision.value, False
    watch.after = requested  # a future resourceVersion: wait for changes after it
    try:
        changes = store.changes_since(requested)
    except TooOldError as exc:
        if settings.expired_as_http_status:
            raise error(code=410, message=str(exc), reason="Expired") from None
        status = build_status(code=410, message=str(exc), reason="Expired")
        return [_error_event(status)], requested, True
    store.subscribe(watch)
    return [e for c in changes for e in watch.events_for(c)], requested, False


async def serve_watch(
    request: web.Request,
    *,
    watch: Watch,
    settings: WatchSettings,
    registry: set[Watch],
) -> web.StreamResponse:
    """Stream ``watch`` to the client until its deadline, an end, a drop, or a disconnect."""
    loop = asyncio.get_running_loop()
    timeout = watch.options.timeout_seconds
    deadline = loop.time() + (float(timeout) if timeout and timeout > 0 else DEFAULT_TIMEOUT)
    backlog, start_rv, finished = await _backlog(watch, settings)
    registry.add(watch)
    response = web.StreamResponse(status=200)
    response.content_type = JSON_CONTENT_TYPE
    response.headers["Cache-Control"] = "no-cache, private"
    response.enable_chunked_encoding()
    try:
        await response.prepare(request)
        for event in backlog:
            await response.write(encode(event))
        signal = (
            "end"
            if finished
            else await _stream(
                request, response, watch, settings=settings, deadline=deadline, start_rv=start_rv
            )
        )
        if signal == "drop":
            if request.transport is not None:
                request.transport.abort()
        else:
            await response.write_eof()
    except ConnectionResetError:
        pass  # the client went away; nothing more to say
    finally:
        registry.discard(watch)
        watch.store.unsubscribe(watch)
    return response


async def _stream(
    request: web.Request,
    response: web.StreamResponse,
    watch: Watch,
    *,
    settings: WatchSettings,
    deadline: float,
    start_rv: int,
) -> _Signal:
    loop = asyncio.get_running_loop()
    revision = watch.store.revision
    next_bookmark = _next_bookmark(loop.time(), settings, deadline, watch.options)
    while True:
        now = loop.time()
        if now >= deadline - _EPSILON:
            return "end"
        wake = min(deadline, next_bookmark, now + _LIVENESS_CHECK)
        try:
            async with asyncio.timeout_at(max(wake, now)):
                await watch.arrival()
        except TimeoutError:
            if request.transport is None or request.transport.is_closing():
                return "drop"  # the client is gone; stop serving it
            if loop.time() >= next_bookmark - _EPSILON:
                if revision.value > start_rv:
                    bookmark = watch.store.kind.bookmark(revision.value)
                    await response.write(encode({"type": "BOOKMARK", "object": bookmark}))
                next_bookmark = _next_bookmark(loop.time(), settings, deadline, watch.options)
            continue
        events, signal = watch.take()
        if events:  # the events queued at this instant, in one write (the same bytes)
            await response.write(b"".join(encode(event) for event in events))
        if signal is not None:
            return signal


def _next_bookmark(
    now: float, settings: WatchSettings, deadline: float, options: ListOptions
) -> float:
    """When the next bookmark is due: each interval, and 2 s before the deadline."""
    if not options.allow_bookmarks:
        return float("inf")
    candidates = [now + settings.bookmark_interval]
    if deadline - _BOOKMARK_LEAD > now + _EPSILON:
        candidates.append(deadline - _BOOKMARK_LEAD)
    return min(candidates)

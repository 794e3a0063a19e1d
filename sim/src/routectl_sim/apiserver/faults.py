"""Injected faults: failing, refusing and stalling requests on purpose.

Promises:

* :meth:`Faults.fail_next` makes the next ``times`` requests whose method matches and whose
  path matches ``path_regex`` (searched in the path, without the query) fail with a proper
  ``Status`` of that code, with ``Retry-After`` when asked; optionally only watches or only
  non-watch requests;
* while :attr:`Faults.unavailable` is set, every request gets 503 ``ServiceUnavailable``
  (the connection is accepted; the server answers, like a kube-apiserver behind a proxy whose
  backend is down);
* while :attr:`Faults.hang` is set, new requests stall without an answer; clearing it lets
  them proceed normally, and :meth:`Faults.release_all` ends them (server shutdown).

Faults are checked before authentication, in that order: hang, unavailable, fail_next.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Awaitable, Callable

from aiohttp import web

from routectl_sim.apiserver.auth import request_info
from routectl_sim.apiserver.status import generic

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclasses.dataclass(slots=True, kw_only=True)
class _Failure:
    method: str
    path: re.Pattern[str]
    status: int
    remaining: int
    retry_after: int | None
    watch: bool | None
    body: bytes | None = None
    """Answer with these bytes instead of a ``Status``: an auth proxy's page."""
    content_type: str = "text/html"

    def matches(self, request: web.Request) -> bool:
        if self.remaining <= 0 or request.method != self.method:
            return False
        if self.watch is not None:
            is_watch = request_info(request.method, request.path, request.query).verb == "watch"
            if is_watch != self.watch:
                return False
        return self.path.search(request.path) is not None


class Faults:
    """The fault-injection switches of one server, and the middleware that applies them."""

    def __init__(self) -> None:
        self.unavailable = False
        self._hang = False
        self._hung: list[asyncio.Future[None]] = []
        self._failures: list[_Failure] = []

    @property
    def hang(self) -> bool:
        """Whether new requests stall."""
        return self._hang

    @hang.setter
    def hang(self, value: bool) -> None:
        self._hang = value
        if not value:
            for future in self._hung:
                if not future.done():
                    future.set_result(None)
            self._hung.clear()

    def release_all(self) -> None:
        """Cancel every stalled request (for shutdown)."""
        for future in self._hung:
            future.cancel()
        self._hung.clear()

    def fail_next(
        self,
        *,
        method: str,
        path_regex: str,
        status: int,
        times: int,
        retry_after: int | None,
        watch: bool | None,
        body: bytes | None = None,
        content_type: str = "text/html",
    ) -> None:
        """Queue an injected failure (see the module docstring)."""
        self._failures.append(
            _Failure(
                method=method.upper(),
                path=re.compile(path_regex),
                status=status,
                remaining=times,
                retry_after=retry_after,
                watch=watch,
                body=body,
                content_type=content_type,
            )
        )

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Apply hang, unavailable and the first matching failure, in that order."""
        if self._hang:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._hung.append(future)
            await future
        if self.unavailable:
            raise generic(503)
        for failure in self._failures:
            if failure.matches(request):
                failure.remaining -= 1
                self._failures = [f for f in self._failures if f.remaining > 0]
                if failure.body is not None:
                    return web.Response(
                        status=failure.status, body=failure.body, content_type=failure.content_type
                    )
                raise generic(failure.status, retry_after=failure.retry_after)
        return await handler(request)

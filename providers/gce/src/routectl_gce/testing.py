"""A fake of the Compute Engine REST API v1 over HTTP on 127.0.0.1, for the plugin's tests.

It keeps state and answers in the documented JSON shapes (``compute#route``,
``compute#routeList``, ``compute#operation``, ``compute#instance``,
``compute#instanceAggregatedList``, the ``{"error": {"code", "message", "errors": [{"domain",
"reason", "message"}]}}`` error body), so the real ``google-cloud-compute`` SDK talks to it
through its REST transport:

* ``GET/POST /compute/v1/projects/{p}/global/routes`` (``filter`` with gcfg-style
  ``(field eq "regex") (field ne "regex")`` or ``field = "literal"`` clauses, ANDed;
  ``maxResults``/``pageToken`` pages), ``GET/DELETE .../global/routes/{name}``: a taken name
  is 409 ``alreadyExists``, a missing route 404 ``notFound``;
* every insert and delete answers an operation (``PENDING``); ``GET
  .../global/operations/{op}`` reports ``RUNNING`` then ``DONE``, ``POST .../wait`` returns
  it ``DONE`` (after :attr:`FakeCompute.waits_per_operation` waits); the change is made when
  the operation ends, and an operation nobody follows ends before the next routes read (GCE
  finishes its operations on its own);
* a route's ``warnings`` carry ``NEXT_HOP_INSTANCE_NOT_FOUND`` while its next hop instance
  does not exist; an insert past :attr:`FakeCompute.routes_quota` ends in the operation
  error ``QUOTA_EXCEEDED`` (the route is not made);
* ``GET .../zones/{z}/instances/{name}``, ``GET .../zones/{z}/instances`` and ``GET
  .../aggregated/instances`` (both with ``filter``);
* a metadata server (``/``, ``/computeMetadata/v1/...``: the instance's service account,
  its token, the project), so google.auth's application default credentials find a VM's
  account against the fake as they would on GCE (``GCE_METADATA_HOST``); the bearer token
  of every Compute request is kept in :attr:`FakeCompute.tokens`; ``POST /alt-token`` is
  a token-url endpoint as the CCM's AltTokenSource expects (``{"accessToken",
  "expireTime"}``).

Each of these is a part of its own in :mod:`routectl_gce.fake`; this module holds the state,
the faults and the server.

Faults: :meth:`FakeCompute.fail_next` answers the next matching request with an error
(``rateLimitExceeded`` 403, 429, 5xx, ...), :meth:`FakeCompute.fail_next_operation` makes the
next write's operation end in an error, :meth:`FakeCompute.lose_next_answer` carries out the
next write and drops its answer, :meth:`FakeCompute.garble_next` answers the next matching
read with a body of the wrong shape. :attr:`FakeCompute.requests` logs ``METHOD path`` of every
request received.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from routectl.testing.serving import serve_locally
from routectl_gce.fake.instances import InstancesApi
from routectl_gce.fake.metadata import MetadataServer
from routectl_gce.fake.operations import WAIT_LIMIT, Operation
from routectl_gce.fake.routes import RoutesApi
from routectl_gce.fake.shapes import BASE, error_answer, matches

__all__ = ["BASE", "WAIT_LIMIT", "FakeCompute", "matches"]


@dataclasses.dataclass(slots=True)
class _Fault:
    method: str
    path_part: str
    status: int
    reason: str
    message: str
    headers: dict[str, str]
    after: int = 0
    """Matching requests to let through before this one fails."""


class FakeCompute(RoutesApi, InstancesApi, MetadataServer):
    """Routes, instances and operations of one project; start it with ``async with``."""

    def __init__(self, *, project: str = "fake-project", network: str = "default") -> None:
        self.project = project
        self.network_url = f"{BASE}/projects/{project}/global/networks/{network}"
        self.routes: dict[str, dict[str, Any]] = {}
        self.instances: dict[str, dict[str, Any]] = {}  # selfLink -> instance
        self.operations: dict[str, Operation] = {}
        self.requests: list[str] = []
        self.tokens: list[str] = []
        """The bearer token of each Compute request ("" when it had none)."""
        self.metadata_requests: list[str] = []
        """Requests to the fake metadata server, kept apart from Compute's."""
        self.alt_token_calls: list[tuple[str, str]] = []
        """(Authorization, body) of each POST to the token-url endpoint ``/alt-token``."""
        self.page_size = 500
        """Routes per page at most (the API's maximum is 500)."""
        self.routes_quota = 250
        """Routes the project may hold (the ``ROUTES`` quota)."""
        self.waits_per_operation = 1
        """``wait`` requests an operation needs before it is ``DONE``."""
        self.operation_seconds = 0.0
        """If above 0: an operation ends this long (loop time) after it began, whoever asks;
        a ``wait`` is held until then (at most :data:`WAIT_LIMIT` seconds, as the API)."""
        self.url = ""
        self._faults: collections.deque[_Fault] = collections.deque()
        self._operation_errors: collections.deque[tuple[str, str, int]] = collections.deque()
        self._lose_next: str | None = None
        self._garble: list[tuple[str, Callable[[Any], Any] | str]] = []
        self._ids = itertools.count(1000)
        self._runner: web.AppRunner | None = None

    # -- scenes -----------------------------------------------------------------------------

    def fail_next(
        self,
        status: int,
        reason: str,
        *,
        method: str = "",
        path_part: str = "",
        message: str = "",
        after: int = 0,
        **headers: str,
    ) -> None:
        """Answer the next request (of ``method``, whose path holds ``path_part``) with an
        error of ``status`` and ``reason`` (``rateLimitExceeded``, ``backendError``, ...),
        after letting ``after`` such requests through."""
        self._faults.append(
            _Fault(method, path_part, status, reason, message or reason, dict(headers), after)
        )

    def fail_next_operation(self, code: str, message: str, *, http_status: int = 403) -> None:
        """The next insert or delete is accepted, and its operation ends in error ``code``."""
        self._operation_errors.append((code, message, http_status))

    def garble_next(self, path_part: str, edit: Callable[[Any], Any] | str) -> None:
        """Answer the next ``GET`` whose path holds ``path_part`` with its JSON answer passed
        through ``edit`` (a value of the wrong shape), or with ``edit`` itself as the body
        when it is a string (an HTML page, an empty body), with status 200."""
        self._garble.append((path_part, edit))

    def lose_next_answer(self, method: str = "POST") -> None:
        """Carry out the next ``method`` request on routes, then drop the connection."""
        self._lose_next = method

    def route_requests(self, method: str = "", part: str = "") -> int:
        """Requests received with ``method`` whose path holds ``part``."""
        return sum(1 for r in self.requests if r.startswith(method) and part in r)

    # -- server -----------------------------------------------------------------------------

    async def __aenter__(self) -> FakeCompute:
        app = web.Application(middlewares=[self._middleware])
        base = "/compute/v1/projects/{project}"
        app.router.add_get(f"{base}/global/routes", self._list_routes)
        app.router.add_post(f"{base}/global/routes", self._insert_route)
        app.router.add_get(f"{base}/global/routes/{{name}}", self._get_route)
        app.router.add_delete(f"{base}/global/routes/{{name}}", self._delete_route)
        app.router.add_get(f"{base}/global/operations/{{op}}", self._get_operation)
        app.router.add_post(f"{base}/global/operations/{{op}}/wait", self._wait_operation)
        app.router.add_get(f"{base}/zones/{{zone}}/instances", self._list_instances)
        app.router.add_get(f"{base}/zones/{{zone}}/instances/{{name}}", self._get_instance)
        app.router.add_get(f"{base}/aggregated/instances", self._aggregated_instances)
        app.router.add_post("/alt-token", self._alt_token)
        app.router.add_get("/", self._metadata_ping)
        app.router.add_get("/computeMetadata/v1/{path:.*}", self._metadata)
        self._runner, self.url = await serve_locally(app)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path in {"/", "/alt-token"} or request.path.startswith("/computeMetadata/"):
            self.metadata_requests.append(request.path_qs)
            response: web.StreamResponse = await handler(request)
            return response
        self.requests.append(f"{request.method} {request.path}")
        self.tokens.append(request.headers.get("Authorization", "").removeprefix("Bearer "))
        if request.match_info.get("project") not in {None, self.project}:
            return error_answer(
                404,
                "notFound",
                f"The resource 'projects/{request.match_info['project']}' was not found",
            )
        for fault in self._faults:
            if fault.method in {"", request.method} and fault.path_part in request.path:
                if fault.after:
                    fault.after -= 1
                    break
                self._faults.remove(fault)
                return error_answer(fault.status, fault.reason, fault.message, fault.headers)
        response = await handler(request)
        for index, (part, edit) in enumerate(self._garble):
            if request.method == "GET" and part in request.path:
                del self._garble[index]
                if isinstance(edit, str):
                    return web.Response(text=edit, content_type="text/html")
                text = response.text if isinstance(response, web.Response) else None
                return web.json_response(edit(json.loads(text or "null")))
        lose = self._lose_next
        if lose == request.method and "/global/routes" in request.path and request.transport:
            self._lose_next = None
            self._finish_all()
            request.transport.abort()
        return response

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

Faults: :meth:`FakeCompute.fail_next` answers the next matching request with an error
(``rateLimitExceeded`` 403, 429, 5xx, ...), :meth:`FakeCompute.fail_next_operation` makes the
next write's operation end in an error, :meth:`FakeCompute.lose_next_answer` carries out the
next write and drops its answer, :meth:`FakeCompute.garble_next` answers the next matching
read with a body of the wrong shape. :attr:`FakeCompute.requests` logs ``METHOD path`` of every
request received.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import itertools
import json
import re
from collections.abc import Callable
from typing import Any

from aiohttp import web

BASE = "https://www.googleapis.com/compute/v1"
NOT_FOUND_WARNING = "NEXT_HOP_INSTANCE_NOT_FOUND"
WAIT_LIMIT = 120.0
"""``globalOperations.wait`` returns after about two minutes even if not DONE (API docs)."""
CLAUSE = re.compile(
    r"""\(?\s*([A-Za-z][A-Za-z0-9_.]*)\s+(eq|ne|=|!=)\s+("[^"]*"|'[^']*'|[^\s()]+)\s*\)?"""
)


class FilterError(ValueError):
    """A ``filter`` the fake cannot read (the real API answers 400 invalid)."""


def matches(resource: dict[str, Any], expression: str) -> bool:
    """Whether ``resource`` passes a Compute list ``filter`` (top-level string fields).

    ``eq``/``ne`` take an RE2 regular expression that must match the whole field; ``=`` and
    ``!=`` a literal. Clauses in parentheses are ANDed.
    """
    expression = expression.strip()
    if not expression:
        return True
    position = 0
    for clause in CLAUSE.finditer(expression):
        if expression[position : clause.start()].strip():
            raise FilterError(f"Invalid value for field 'filter': {expression!r}")
        position = clause.end()
        field, op, literal = clause.groups()
        if literal[:1] in {'"', "'"}:
            literal = literal[1:-1]
        value = str(resource.get(field, ""))
        hit = re.fullmatch(literal, value) is not None if op in {"eq", "ne"} else value == literal
        if hit != (op in {"eq", "="}):
            return False
    if expression[position:].strip():
        raise FilterError(f"Invalid value for field 'filter': {expression!r}")
    return True


@dataclasses.dataclass(slots=True)
class _Operation:
    body: dict[str, Any]
    effect: Any  # Callable[[], dict | None]: makes the change, or returns the error body
    waits_left: int
    polls: int = 0
    due: float = 0.0


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


class FakeCompute:
    """Routes, instances and operations of one project; start it with ``async with``."""

    def __init__(self, *, project: str = "fake-project", network: str = "default") -> None:
        self.project = project
        self.network_url = f"{BASE}/projects/{project}/global/networks/{network}"
        self.routes: dict[str, dict[str, Any]] = {}
        self.instances: dict[str, dict[str, Any]] = {}  # selfLink -> instance
        self.operations: dict[str, _Operation] = {}
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

    def add_instance(self, name: str, *, zone: str = "us-central1-b") -> str:
        """An instance ``name`` in ``zone``; its URL."""
        link = f"{BASE}/projects/{self.project}/zones/{zone}/instances/{name}"
        self.instances[link] = {
            "kind": "compute#instance",
            "id": str(next(self._ids)),
            "name": name,
            "zone": f"{BASE}/projects/{self.project}/zones/{zone}",
            "status": "RUNNING",
            "canIpForward": True,
            "selfLink": link,
        }
        return link

    def delete_instance(self, name: str) -> None:
        """Every instance named ``name`` is gone; routes to it stay, with a warning."""
        self.instances = {k: v for k, v in self.instances.items() if v["name"] != name}

    def add_route(
        self,
        name: str,
        destination: str,
        *,
        next_hop_instance: str = "",
        next_hop_ip: str = "",
        description: str = "",
        network: str = "",
    ) -> dict[str, Any]:
        """A route made behind the plugin's back."""
        body: dict[str, Any] = {
            "name": name,
            "destRange": destination,
            "network": network or self.network_url,
            "priority": 1000,
            "description": description,
        }
        if next_hop_instance:
            body["nextHopInstance"] = next_hop_instance
        if next_hop_ip:
            body["nextHopIp"] = next_hop_ip
        self._store_route(body)
        return self.routes[name]

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

    def lose_next_answer(self, method: str = "POST") -> None:
        """Carry out the next ``method`` request on routes, then drop the connection."""
        self._lose_next = method

    def garble_next(self, path_part: str, edit: Callable[[Any], Any] | str) -> None:
        """Answer the next ``GET`` whose path holds ``path_part`` with its JSON answer passed
        through ``edit`` (a value of the wrong shape), or with ``edit`` itself as the body
        when it is a string (an HTML page, an empty body), with status 200."""
        self._garble.append((path_part, edit))

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
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
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
            return _error(
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
                return _error(fault.status, fault.reason, fault.message, fault.headers)
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

    # -- the metadata server (GCE_METADATA_HOST / GCE_METADATA_IP point here) -------------

    async def _alt_token(self, request: web.Request) -> web.Response:
        """The CCM's token-url: POSTed token-body, as the VM's account; answers a token."""
        self.alt_token_calls.append(
            (request.headers.get("Authorization", ""), (await request.read()).decode())
        )
        number = len(self.alt_token_calls)
        return web.json_response(
            {"accessToken": f"alt-token-{number}", "expireTime": "2099-01-01T00:00:00Z"}
        )

    async def _metadata_ping(self, request: web.Request) -> web.Response:
        return web.Response(text="ok", headers={"Metadata-Flavor": "Google"})

    async def _metadata(self, request: web.Request) -> web.Response:
        """The instance's service account and token, and the project, as a VM sees them."""
        if request.headers.get("Metadata-Flavor") != "Google":
            return web.Response(status=403, text="Missing Metadata-Flavor:Google header.")
        path = request.match_info["path"]
        flavor = {"Metadata-Flavor": "Google"}
        account = "instance/service-accounts/default/"
        if path == "project/project-id":
            return web.Response(text=self.project, headers=flavor)
        if path == account:
            scopes = ["https://www.googleapis.com/auth/compute"]
            info = {"aliases": ["default"], "email": "node@fake.iam", "scopes": scopes}
            return web.json_response(info, headers=flavor)
        if path == f"{account}token":
            number = sum(1 for r in self.metadata_requests if "/token" in r)
            token = {"access_token": f"token-{number}", "expires_in": 3599, "token_type": "Bearer"}
            return web.json_response(token, headers=flavor)
        if path == "universe/universe-domain":
            return web.Response(text="googleapis.com", headers=flavor)
        return web.Response(status=404, text="not found", headers=flavor)

    # -- routes -----------------------------------------------------------------------------

    def _store_route(self, body: dict[str, Any]) -> None:
        name = body["name"]
        self.routes[name] = {
            "kind": "compute#route",
            "id": str(next(self._ids)),
            "creationTimestamp": "2026-12-01T00:00:00.000-08:00",
            **body,
            "selfLink": f"{BASE}/projects/{self.project}/global/routes/{name}",
            "routeType": "STATIC",
        }

    def _shown(self, route: dict[str, Any]) -> dict[str, Any]:
        """A route as the API shows it: with a warning while its next hop is missing."""
        shown = dict(route)
        hop = route.get("nextHopInstance")
        if hop and hop not in self.instances:
            shown["warnings"] = [
                {
                    "code": NOT_FOUND_WARNING,
                    "message": f"Next hop instance '{hop}' does not exist.",
                    "data": [{"key": "instance", "value": hop}],
                }
            ]
        return shown

    async def _list_routes(self, request: web.Request) -> web.Response:
        self._finish_all()
        try:
            found = [r for r in self.routes.values() if matches(r, request.query.get("filter", ""))]
        except FilterError as exc:
            return _error(400, "invalid", str(exc))
        size = min(self.page_size, int(request.query.get("maxResults", "500")))
        start = int(request.query.get("pageToken") or "0")
        body: dict[str, Any] = {
            "kind": "compute#routeList",
            "id": f"projects/{self.project}/global/routes",
            "items": [self._shown(r) for r in found[start : start + size]],
            "selfLink": f"{BASE}/projects/{self.project}/global/routes",
        }
        if start + size < len(found):
            body["nextPageToken"] = str(start + size)
        return web.json_response(body)

    async def _get_route(self, request: web.Request) -> web.Response:
        self._finish_all()
        route = self.routes.get(request.match_info["name"])
        if route is None:
            return _not_found(self.project, "routes", request.match_info["name"])
        return web.json_response(self._shown(route))

    async def _insert_route(self, request: web.Request) -> web.Response:
        body = await request.json()
        name = str(body.get("name", ""))
        if not re.fullmatch(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", name):
            return _error(400, "invalid", f"Invalid value for field 'resource.name': '{name}'.")
        if name in self.routes or self._pending(name):
            return _error(
                409,
                "alreadyExists",
                f"The resource 'projects/{self.project}/global/routes/{name}' already exists",
            )
        if not body.get("destRange") or not body.get("network"):
            return _error(400, "required", "Required field 'resource.destRange' not specified")

        def effect() -> dict[str, Any] | None:
            if len(self.routes) >= self.routes_quota:
                return _operation_error(
                    "QUOTA_EXCEEDED",
                    f"Quota 'ROUTES' exceeded.  Limit: {float(self.routes_quota)} globally.",
                    403,
                )
            hop = self._absolute(str(body.get("nextHopInstance", "")))
            if hop and hop not in self.instances:
                return _operation_error(
                    "RESOURCE_NOT_FOUND", f"The resource '{hop}' was not found", 404
                )
            self._store_route({**body, **({"nextHopInstance": hop} if hop else {})})
            return None

        return web.json_response(self._operation("insert", name, effect))

    async def _delete_route(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in self.routes:
            return _not_found(self.project, "routes", name)

        def effect() -> dict[str, Any] | None:
            if self.routes.pop(name, None) is None:
                return _operation_error(
                    "RESOURCE_NOT_FOUND",
                    f"The resource 'projects/{self.project}/global/routes/{name}' was not found",
                    404,
                )
            return None

        return web.json_response(self._operation("delete", name, effect))

    def _absolute(self, hop: str) -> str:
        """A next hop instance as the API stores it: a full URL."""
        if not hop or hop.startswith("https://"):
            return hop
        if hop.startswith("projects/"):
            return f"{BASE}/{hop}"
        return f"{BASE}/projects/{self.project}/{hop}"

    # -- operations -------------------------------------------------------------------------

    def _operation(self, kind: str, route: str, effect: Any) -> dict[str, Any]:
        name = f"operation-{next(self._ids)}-fake"
        body: dict[str, Any] = {
            "kind": "compute#operation",
            "id": str(next(self._ids)),
            "name": name,
            "operationType": kind,
            "targetLink": f"{BASE}/projects/{self.project}/global/routes/{route}",
            "status": "PENDING",
            "progress": 0,
            "insertTime": "2026-12-01T00:00:00.000-08:00",
            "selfLink": f"{BASE}/projects/{self.project}/global/operations/{name}",
        }
        if self._operation_errors:
            code, message, status = self._operation_errors.popleft()
            error = _operation_error(code, message, status)
            op = _Operation(body, lambda: error, self.waits_per_operation)
        else:
            op = _Operation(body, effect, self.waits_per_operation)
        op.due = asyncio.get_running_loop().time() + self.operation_seconds
        self.operations[name] = op
        return dict(body)

    def _pending(self, route: str) -> bool:
        return any(
            op.body["status"] != "DONE"
            and op.body["targetLink"].endswith(f"/routes/{route}")
            and op.body["operationType"] == "insert"
            for op in self.operations.values()
        )

    def _finish(self, op: _Operation) -> None:
        if op.body["status"] == "DONE":
            return
        failure = op.effect()
        op.body.update(status="DONE", progress=100, endTime="2026-12-01T00:00:01.000-08:00")
        if failure is not None:
            op.body.update(failure)

    def _finish_all(self) -> None:
        """Operations nobody follows end on their own before the next read (when due)."""
        now = asyncio.get_running_loop().time()
        for op in list(self.operations.values()):
            if not self.operation_seconds or op.due <= now:
                self._finish(op)

    async def _get_operation(self, request: web.Request) -> web.Response:
        op = self.operations.get(request.match_info["op"])
        if op is None:
            return _not_found(self.project, "operations", request.match_info["op"])
        op.polls += 1
        if self.operation_seconds:
            if op.due <= asyncio.get_running_loop().time():
                self._finish(op)
            elif op.body["status"] == "PENDING":
                op.body.update(status="RUNNING", startTime="2026-12-01T00:00:00.500-08:00")
        elif op.polls > op.waits_left:
            self._finish(op)
        elif op.body["status"] == "PENDING":
            op.body.update(status="RUNNING", startTime="2026-12-01T00:00:00.500-08:00")
        return web.json_response(op.body)

    async def _wait_operation(self, request: web.Request) -> web.Response:
        op = self.operations.get(request.match_info["op"])
        if op is None:
            return _not_found(self.project, "operations", request.match_info["op"])
        if self.operation_seconds:
            loop = asyncio.get_running_loop()
            await asyncio.sleep(min(max(op.due - loop.time(), 0.0), WAIT_LIMIT))
            if op.due <= loop.time():
                self._finish(op)
        elif op.waits_left > 1:
            op.waits_left -= 1
        else:
            self._finish(op)
        if op.body["status"] != "DONE":
            op.body.update(status="RUNNING", startTime="2026-12-01T00:00:00.500-08:00")
        return web.json_response(op.body)

    # -- instances --------------------------------------------------------------------------

    async def _get_instance(self, request: web.Request) -> web.Response:
        zone, name = request.match_info["zone"], request.match_info["name"]
        link = f"{BASE}/projects/{self.project}/zones/{zone}/instances/{name}"
        if link not in self.instances:
            return _not_found(self.project, f"zones/{zone}/instances", name)
        return web.json_response(self.instances[link])

    async def _list_instances(self, request: web.Request) -> web.Response:
        zone = request.match_info["zone"]
        try:
            found = [
                i
                for i in self.instances.values()
                if i["zone"].endswith(f"/zones/{zone}")
                and matches(i, request.query.get("filter", ""))
            ]
        except FilterError as exc:
            return _error(400, "invalid", str(exc))
        return web.json_response(
            {
                "kind": "compute#instanceList",
                "id": f"projects/{self.project}/zones/{zone}/instances",
                "items": found,
                "selfLink": f"{BASE}/projects/{self.project}/zones/{zone}/instances",
            }
        )

    async def _aggregated_instances(self, request: web.Request) -> web.Response:
        by_zone: dict[str, list[dict[str, Any]]] = {}
        try:
            for instance in self.instances.values():
                if matches(instance, request.query.get("filter", "")):
                    zone = "zones/" + instance["zone"].rsplit("/", 1)[-1]
                    by_zone.setdefault(zone, []).append(instance)
        except FilterError as exc:
            return _error(400, "invalid", str(exc))
        items: dict[str, Any] = {zone: {"instances": found} for zone, found in by_zone.items()}
        return web.json_response(
            {
                "kind": "compute#instanceAggregatedList",
                "id": f"projects/{self.project}/aggregated/instances",
                "items": items,
                "selfLink": f"{BASE}/projects/{self.project}/aggregated/instances",
            }
        )


def _error(
    status: int, reason: str, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    domain = "usageLimits" if "imit" in reason else "global"
    body = {
        "error": {
            "code": status,
            "message": message,
            "errors": [{"message": message, "domain": domain, "reason": reason}],
        }
    }
    return web.json_response(body, status=status, headers=headers)


def _not_found(project: str, collection: str, name: str) -> web.Response:
    return _error(
        404, "notFound", f"The resource 'projects/{project}/{collection}/{name}' was not found"
    )


def _operation_error(code: str, message: str, status: int) -> dict[str, Any]:
    return {
        "error": {"errors": [{"code": code, "message": message}]},
        "httpErrorStatusCode": status,
        "httpErrorMessage": {403: "FORBIDDEN", 404: "NOT FOUND", 429: "TOO MANY REQUESTS"}.get(
            status, "BAD REQUEST"
        ),
    }

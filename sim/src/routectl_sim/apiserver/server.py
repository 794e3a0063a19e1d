"""``FakeApiServer``: a stateful kube-apiserver stand-in over real HTTP on 127.0.0.1.

Promises:

* Nodes (with ``/status``), coordination.k8s.io/v1 Leases, core/v1 Events,
  events.k8s.io/v1 Events and networking.k8s.io/v1 ServiceCIDRs behave as kube-apiserver
  v1.36 does for LIST, WATCH, GET, POST, PUT, PATCH and DELETE (see the sibling modules
  for each rule), sharing one global resourceVersion;
* TokenReviews and SubjectAccessReviews answer as the delegated authn/authz API does
  (:mod:`.reviews`): :meth:`FakeApiServer.add_review_token` and
  :meth:`FakeApiServer.grant_review` say which tokens exist and who may do what;
* the synchronous verbs (:meth:`FakeApiServer.create_node` …) go through exactly the same
  code as HTTP requests, so watchers see their changes; call them from the event loop's
  thread;
* fault injection: :meth:`~FakeApiServer.fail_next`, :meth:`~FakeApiServer.forbid`,
  :attr:`~FakeApiServer.unavailable` (every request answered 503 ``ServiceUnavailable``),
  :attr:`~FakeApiServer.hang` (requests stall until it is cleared),
  :meth:`~FakeApiServer.expire_history`, :meth:`~FakeApiServer.drop_watches` and
  :meth:`~FakeApiServer.end_watches`;
* every request is recorded in :attr:`~FakeApiServer.requests`;
* kubectl works against it (``get``, ``apply``, ``describe`` of Nodes): discovery and
  OpenAPI v3 paths (:mod:`.discovery`), Nodes as a ``Table`` when the client asks for one
  (:mod:`.tables`), and Pods as an always-empty list.

It serves JSON only (406 otherwise, as recorded), has no server-side apply, no namespaces
objects, no admission beyond the node not-ready taint, and no managedFields.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from routectl_sim.apiserver import discovery
from routectl_sim.apiserver.auth import Authorizer, request_info
from routectl_sim.apiserver.encoding import json_response
from routectl_sim.apiserver.faults import Faults
from routectl_sim.apiserver.kinds import EVENT, LEASE, NODE, SERVICE_CIDR
from routectl_sim.apiserver.registry import Registry, Result
from routectl_sim.apiserver.reviews import Reviews
from routectl_sim.apiserver.routes import ResourceEndpoints, ServerSettings
from routectl_sim.apiserver.status import (
    ApiError,
    JsonObj,
    build_status,
)
from routectl_sim.apiserver.store import Change, Revision, Store
from routectl_sim.apiserver.strategies import (
    EventStrategy,
    EventsV1Strategy,
    LeaseStrategy,
    NodeStrategy,
    ServiceCidrStrategy,
)
from routectl_sim.apiserver.watch import WatchSettings

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_ACCEPTABLE = ("*/*", "application/*", "application/json")
_NOT_ACCEPTABLE_CODE = 406
_NOT_ACCEPTABLE = (
    "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, "
    "application/vnd.kubernetes.protobuf"
)
VERSION_INFO = {
    "major": "1",
    "minor": "36",
    "emulationMajor": "1",
    "emulationMinor": "36",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "35",
    "gitVersion": "v1.36.2",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-11-01T00:00:00Z",
    "goVersion": "go1.25.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}
"""What ``/version`` answers: every field of ``version.Info`` (typed clients refuse a
missing one); the fixtures were recorded from v1.36.2, whose commit, build date and Go
version were not recorded, so those three are placeholders."""


@dataclasses.dataclass(slots=True, kw_only=True)
class RecordedRequest:
    """One request as the server saw it; ``status`` is set when the response starts."""

    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: bytes = b""
    status: int | None = None

    def json(self) -> Any:
        """The body parsed as JSON (``None`` when there is no body)."""
        return json.loads(self.body) if self.body else None


_RECORD = web.RequestKey("routectl.apiserver.record", RecordedRequest)


class FakeApiServer:
    """A kube-apiserver stand-in for tests and ``routectl simulate``.

    Args:
        token: if set, requests must carry ``Authorization: Bearer <token>``; without a
            header they are ``system:anonymous`` (403), with another token 401.
        history_limit: how many changes per resource are kept for watch resumption and
            exact lists; older resourceVersions get 410.
        bookmark_interval: seconds between periodic BOOKMARK events (real: 60).
        max_list_chunk: if set, no LIST page (except ``resourceVersion=0``) holds more items,
            even without ``limit``, so clients must follow ``continue`` (not real behaviour).
        user: the user name authenticated requests run as (appears in 403 messages).
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        history_limit: int = 1000,
        bookmark_interval: float = 60.0,
        max_list_chunk: int | None = None,
        user: str = "routectl",
    ) -> None:
        self._revision = Revision()
        stores = {
            kind.kind: Store(kind=kind, revision=self._revision, history_limit=history_limit)
            for kind in (NODE, LEASE, EVENT, SERVICE_CIDR)
        }
        self._stores = list(stores.values())
        self._node_store = stores["Node"]
        self._nodes = Registry(store=stores["Node"], strategy=NodeStrategy())
        self._leases = Registry(store=stores["Lease"], strategy=LeaseStrategy())
        self._events = Registry(store=stores["Event"], strategy=EventStrategy())
        self._events_v1 = Registry(store=stores["Event"], strategy=EventsV1Strategy())
        self._service_cidrs = Registry(store=stores["ServiceCIDR"], strategy=ServiceCidrStrategy())
        self._settings = ServerSettings(
            watch=WatchSettings(bookmark_interval=bookmark_interval),
            max_list_chunk=max_list_chunk,
            watches=set(),
        )
        self._auth = Authorizer(token=token, user=user)
        self._reviews = Reviews()
        self._faults = Faults()
        self._runner: web.AppRunner | None = None
        self.requests: list[RecordedRequest] = []
        """Every request received, in arrival order."""
        self.url = ""
        """``http://127.0.0.1:PORT`` once started."""

    # -- lifecycle -------------------------------------------------------------------------

    def build_app(self) -> web.Application:
        """The aiohttp application (routes and middlewares), without serving it."""
        app = web.Application(
            middlewares=[
                self._record,
                self._errors,
                self._faults.middleware,
                self._authn,
                self._negotiate,
            ]
        )
        app.on_response_prepare.append(self._on_prepare)
        settings = self._settings
        core, coordination = "/api/v1", "/apis/coordination.k8s.io/v1"
        nodes = ResourceEndpoints(registry=self._nodes, settings=settings)
        leases = ResourceEndpoints(registry=self._leases, settings=settings)
        events = ResourceEndpoints(registry=self._events, settings=settings)
        events_v1 = ResourceEndpoints(registry=self._events_v1, settings=settings)
        app.add_routes(nodes.routes(core, namespaced=False, status=True))
        app.add_routes(leases.routes(coordination, namespaced=True))
        app.add_routes(events.routes(core, namespaced=True))
        app.add_routes(events_v1.routes("/apis/events.k8s.io/v1", namespaced=True))
        app.add_routes(self._reviews.routes())
        service_cidrs = ResourceEndpoints(registry=self._service_cidrs, settings=settings)
        app.add_routes(service_cidrs.routes("/apis/networking.k8s.io/v1", namespaced=False))
        app.add_routes([web.get("/version", self._version, allow_head=False)])
        app.add_routes([web.get("/version/", self._version, allow_head=False)])
        app.add_routes(
            [
                web.get("/api/v1/pods", self._no_pods, allow_head=False),
                web.get("/api/v1/namespaces/{namespace}/pods", self._no_pods, allow_head=False),
                web.get("/api/v1/namespaces/{namespace}/pods/{name}", self._no_pod),
            ]
        )
        app.add_routes(discovery.routes())
        for probe in ("/healthz", "/livez", "/readyz"):
            app.add_routes([web.get(probe, self._probe, allow_head=False)])
        return app

    async def start(self, *, port: int = 0) -> None:
        """Serve on ``port`` (by default a free one) of 127.0.0.1 and set :attr:`url`."""
        runner = web.AppRunner(self.build_app(), access_log=None, shutdown_timeout=5.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port)
        await site.start()
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"

    async def aclose(self) -> None:
        """End every watch and stalled request, then stop serving."""
        self.end_watches()
        self._faults.release_all()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def kubeconfig(self, path: str | os.PathLike[str]) -> None:
        """Write a kubeconfig (JSON, which is YAML) pointing at :attr:`url`."""
        user: JsonObj = {"token": self._auth.token} if self._auth.token else {}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": user}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "current-context": "fake",
        }
        pathlib.Path(path).write_text(json.dumps(config, indent=2), encoding="utf-8")

    # -- cluster state -------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The global resourceVersion (the last one any write took)."""
        return self._revision.value

    def create_node(self, node: JsonObj) -> JsonObj:
        """Create a Node as ``POST /api/v1/nodes`` does (defaults, taint, validation)."""
        return self._nodes.create(node).body

    def replace_node(self, node: JsonObj) -> JsonObj:
        """``PUT /api/v1/nodes/{name}``: metadata and spec; status changes are ignored."""
        return self._nodes.update(node["metadata"]["name"], node).body

    def replace_node_status(self, node: JsonObj) -> JsonObj:
        """``PUT /api/v1/nodes/{name}/status``: status only; spec changes are ignored."""
        return self._nodes.update(node["metadata"]["name"], node, subresource="status").body

    def patch_node(self, name: str, patch: JsonObj) -> JsonObj:
        """Merge-patch the Node (``application/merge-patch+json``); status is ignored."""
        return self._nodes.patch(name, patch, content_type="application/merge-patch+json").body

    def patch_node_status(self, name: str, patch: JsonObj) -> JsonObj:
        """Strategic-merge-patch ``/status`` (conditions merge by type)."""
        return self._patch_status(name, patch).body

    def post_node_status(self, name: str, patch: JsonObj) -> None:
        """:meth:`patch_node_status` for a caller that reads no answer (a simulated kubelet's
        heartbeat: a copy of the Node to throw away would be a good part of its cost)."""
        self._patch_status(name, patch)

    def _patch_status(self, name: str, patch: JsonObj) -> Result:
        content_type = "application/strategic-merge-patch+json"
        return self._nodes.patch(name, patch, content_type=content_type, subresource="status")

    def watch_nodes(self, callback: Callable[[str, JsonObj], None]) -> None:
        """Call ``callback(event type, node)`` on every committed Node change, in order; the
        node is the store's own object, to read, not to change (copying it for every
        heartbeat would cost the simulator more than the controller it measures)."""
        self._node_store.subscribe(_Callback(callback))

    def delete_node(self, name: str) -> None:
        """Delete a Node (with finalizers it is only marked for deletion)."""
        self._nodes.delete(name)

    def get_node(self, name: str) -> JsonObj:
        """The Node as GET returns it; :class:`ApiError` 404 if there is none."""
        return self._nodes.get(name)

    def list_nodes(self) -> list[JsonObj]:
        """Every Node (with kind/apiVersion), by name."""
        return [self._nodes.present(obj) for obj in self._nodes.store.objects()]

    def events(self) -> list[JsonObj]:
        """Every core/v1 Event (events.k8s.io ones included), by namespace and name."""
        return [self._events.present(obj) for obj in self._events.store.objects()]

    def add_review_token(self, token: str, *, username: str, groups: tuple[str, ...] = ()) -> None:
        """Make TokenReviews of ``token`` authenticate ``username`` (and ``groups``)."""
        self._reviews.add_token(token, username=username, groups=groups)

    def grant_review(self, subject: str, *, verb: str, path: str) -> None:
        """Make SubjectAccessReviews allow a user or group ``verb`` on ``path``."""
        self._reviews.grant(subject, verb=verb, path=path)

    def expire_events(self) -> None:
        """Delete every Event, as the API server's event TTL (1 h by default) does."""
        for obj in list(self._events.store.objects()):
            meta = obj["metadata"]
            self._events.delete(meta["name"], namespace=meta.get("namespace"))

    def leases(self) -> list[JsonObj]:
        """Every Lease, by namespace and name."""
        return [self._leases.present(obj) for obj in self._leases.store.objects()]

    def get_lease(self, namespace: str, name: str) -> JsonObj | None:
        """One Lease, or ``None``."""
        found = self._leases.store.get((namespace, name))
        return self._leases.present(found) if found is not None else None

    def create_lease(self, lease: JsonObj) -> JsonObj:
        """Create a Lease as ``POST`` does (its namespace comes from ``metadata``)."""
        namespace = lease.get("metadata", {}).get("namespace", "default")
        return self._leases.create(lease, namespace=namespace).body

    def delete_lease(self, namespace: str, name: str) -> None:
        """Delete a Lease."""
        self._leases.delete(name, namespace=namespace)

    def create_service_cidr(self, name: str, *cidrs: str) -> JsonObj:
        """Create a networking.k8s.io/v1 ServiceCIDR holding ``cidrs``."""
        body = {"metadata": {"name": name}, "spec": {"cidrs": list(cidrs)}}
        return self._service_cidrs.create(body).body

    def delete_service_cidr(self, name: str) -> None:
        """Delete a ServiceCIDR."""
        self._service_cidrs.delete(name)

    @property
    def open_watches(self) -> int:
        """How many watch streams are being served right now."""
        return len(self._settings.watches)

    # -- fault injection -----------------------------------------------------------------

    @property
    def watch_410_as_http_status(self) -> bool:
        """Answer a too-old watch with HTTP 410 instead of 200 + an ERROR event."""
        return self._settings.watch.expired_as_http_status

    @watch_410_as_http_status.setter
    def watch_410_as_http_status(self, value: bool) -> None:
        self._settings.watch.expired_as_http_status = value

    @property
    def hang(self) -> bool:
        """While true, new requests stall; clearing it lets them proceed normally."""
        return self._faults.hang

    @hang.setter
    def hang(self, value: bool) -> None:
        self._faults.hang = value

    @property
    def unavailable(self) -> bool:
        """While true, every request is answered 503 ``ServiceUnavailable``."""
        return self._faults.unavailable

    @unavailable.setter
    def unavailable(self, value: bool) -> None:
        self._faults.unavailable = value

    def expire_history(self) -> None:
        """Compact: a watch or exact list from any resourceVersion before now gets 410."""
        for store in self._stores:
            store.forget_history()

    def drop_watches(self) -> None:
        """Cut every open watch mid-body (the client sees an incomplete chunked response)."""
        for watch in list(self._settings.watches):
            watch.drop()

    def end_watches(self) -> None:
        """End every open watch cleanly, as a server-side timeout does."""
        for watch in list(self._settings.watches):
            watch.end()

    def fail_next(
        self,
        *,
        method: str,
        path_regex: str,
        status: int,
        times: int = 1,
        retry_after: int | None = None,
        watch: bool | None = None,
        body: bytes | None = None,
        content_type: str = "text/html",
    ) -> None:
        """Answer the next ``times`` matching requests with a ``Status`` of code ``status``.

        ``path_regex`` is searched in the path (without the query); ``watch`` narrows the
        match to watch (``True``) or non-watch (``False``) requests. With ``body``, the answer
        is those bytes as ``content_type`` instead (an auth proxy's page, say, or a broken
        proxy's empty list).
        """
        self._faults.fail_next(
            method=method,
            path_regex=path_regex,
            status=status,
            times=times,
            retry_after=retry_after,
            watch=watch,
            body=body,
            content_type=content_type,
        )

    def list_nodes_next_with(self, *extra: JsonObj) -> None:
        """Answer the next (non-watch) Node list with every stored Node and ``extra`` after
        them: objects a real server can hold but this one refuses to store (``spec: null``
        written before validation, say), to see a client read them."""
        body = {
            "kind": "NodeList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(self.resource_version)},
            "items": [*self.list_nodes(), *extra],
        }
        self.fail_next(
            method="GET",
            path_regex="/api/v1/nodes$",
            status=200,
            body=json.dumps(body).encode(),
            content_type="application/json",
            watch=False,
        )

    def forbid(self, *, verb: str, resource: str) -> None:
        """Deny ``verb`` (or ``*``) on ``resource`` (``nodes``, ``nodes/status`` …) with 403."""
        self._auth.denied.add((verb, resource))

    def allow(self, *, verb: str, resource: str) -> None:
        """Undo :meth:`forbid`."""
        self._auth.denied.discard((verb, resource))

    # -- middlewares ---------------------------------------------------------------------

    @web.middleware
    async def _record(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        body = await request.read() if request.can_read_body else b""
        record = RecordedRequest(
            method=request.method,
            path=request.path,
            query=dict(request.query),
            content_type=request.headers.get("Content-Type", ""),
            body=body,
        )
        self.requests.append(record)
        request[_RECORD] = record
        return await handler(request)

    @staticmethod
    async def _on_prepare(request: web.Request, response: web.StreamResponse) -> None:
        record = request.get(_RECORD)
        if record is not None:
            record.status = response.status

    @web.middleware
    async def _errors(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as exc:
            newline = exc.code != _NOT_ACCEPTABLE_CODE  # the one body Go sends without \n
            return json_response(exc.status, status=exc.code, headers=exc.headers, newline=newline)
        except web.HTTPNotFound:
            message = "the server could not find the requested resource"
            return json_response(build_status(code=404, message=message, details={}), status=404)
        except web.HTTPMethodNotAllowed:
            message = "the server does not allow this method on the requested resource"
            return json_response(build_status(code=405, message=message, details={}), status=405)

    @web.middleware
    async def _authn(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        user = self._auth.authenticate(request.headers.get("Authorization"))
        self._auth.authorize(request_info(request.method, request.path, request.query), user)
        return await handler(request)

    @web.middleware
    async def _negotiate(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        accept = request.headers.get("Accept", "")
        ranges = [part.split(";")[0].strip().lower() for part in accept.split(",")]
        if accept.strip() and not any(r in _ACCEPTABLE for r in ranges):
            raise ApiError(build_status(code=406, message=_NOT_ACCEPTABLE, details={}))
        return await handler(request)

    # -- non-resource endpoints ------------------------------------------------------------

    @staticmethod
    async def _version(request: web.Request) -> web.StreamResponse:
        return json_response(VERSION_INFO)

    async def _no_pods(self, request: web.Request) -> web.StreamResponse:
        """Pods are never stored here: every listing is empty (kubectl describe node asks)."""
        metadata = {"resourceVersion": str(self._revision.value)}
        return json_response(
            {"kind": "PodList", "apiVersion": "v1", "metadata": metadata, "items": []}
        )

    @staticmethod
    async def _no_pod(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        details = {"name": name, "kind": "pods"}
        raise ApiError(build_status(code=404, message=f'pods "{name}" not found', details=details))

    @staticmethod
    async def _probe(request: web.Request) -> web.StreamResponse:
        return web.Response(text="ok", content_type="text/plain")


@dataclasses.dataclass(frozen=True, eq=False)
class _Callback:
    """A store subscriber that hands each change to a function (see watch_nodes)."""

    callback: Callable[[str, JsonObj], None]

    def offer(self, change: Change) -> None:
        """Pass the change on (the store's own object: listeners read it, never change it)."""
        self.callback(change.type, change.obj)

"""HTTP endpoints: the REST verbs of each resource, wired to registry, listing and watch.

Promises:

* ``GET`` on a collection lists, or watches when ``watch`` is true (``?watch=1``,
  ``?watch=true``, kubernetes-asyncio's ``?watch=True``; also the legacy ``/watch/`` paths);
* ``POST``/``PUT`` take ``application/json`` bodies (YAML and protobuf are not served: 415);
  ``PATCH`` takes JSON patch, merge patch or strategic merge patch and answers any other
  content type (server-side apply included) with the recorded 415;
* a body that is not JSON is a 400 worded as kube-apiserver words it;
* responses are framed by :mod:`.encoding`; ``Warning`` headers are added when a strategy
  asks for them; objects of ``GET``/``POST``/``PUT``/``PATCH`` carry kind/apiVersion.

Authentication, fault injection and content negotiation happen in middlewares, not here.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from routectl_sim.apiserver.encoding import JSON_CONTENT_TYPE, json_response
from routectl_sim.apiserver.listing import list_objects, parse_list_options
from routectl_sim.apiserver.registry import PATCH_TYPES, Registry, Result
from routectl_sim.apiserver.status import ApiError, JsonObj, bad_request, build_status
from routectl_sim.apiserver.tables import node_table, wants_table
from routectl_sim.apiserver.watch import Watch, WatchSettings, serve_watch

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclasses.dataclass(slots=True, kw_only=True)
class ServerSettings:
    """What endpoints need from the server object (mutable: tests flip these at run time)."""

    watch: WatchSettings
    max_list_chunk: int | None
    watches: set[Watch]


def unsupported_media_type() -> ApiError:
    """415 exactly as recorded for a PATCH with ``Content-Type: application/json``."""
    return ApiError(build_status(code=415, message="415: Unsupported Media Type", details={}))


def _go_json_error(text: str, exc: json.JSONDecodeError) -> str:
    if exc.pos >= len(text.rstrip()):
        return "unexpected end of JSON input"
    return f"invalid character {text[exc.pos]!r} looking for beginning of value"


async def read_json(request: web.Request, *, kind: str) -> Any:
    """The request body as JSON; 415 for a non-JSON content type, 400 for broken JSON."""
    if "Content-Type" in request.headers and request.content_type != JSON_CONTENT_TYPE:
        raise unsupported_media_type()
    text = (await request.read()).decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad_request(
            f"the object provided is unrecognized (must be of type {kind}): couldn't get "
            f"version/kind; json parse error: {_go_json_error(text, exc)} ({text[:1024]})"
        ) from None


async def read_patch(request: web.Request) -> tuple[str, Any]:
    """(content type, parsed patch); 415 for an unsupported type, 400 for bad JSON."""
    content_type = request.content_type
    if content_type not in PATCH_TYPES:
        raise unsupported_media_type()
    text = (await request.read()).decode("utf-8", errors="replace")
    try:
        return content_type, json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad_request(_go_json_error(text, exc)) from None


def _respond(result: Result) -> web.Response:
    response = json_response(result.body, status=result.code)
    for warning in result.warnings:
        response.headers.add("Warning", warning)
    return response


class ResourceEndpoints:
    """The endpoints of one resource under one API path."""

    def __init__(self, *, registry: Registry, settings: ServerSettings) -> None:
        self.registry, self.settings = registry, settings

    @property
    def _kind(self) -> str:
        return self.registry.strategy.view.kind

    def routes(self, base: str, *, namespaced: bool, status: bool = False) -> list[web.RouteDef]:
        """Route table entries below ``base`` (e.g. ``/api/v1`` + ``/nodes``)."""
        plural = self.registry.strategy.view.resource.resource
        collection = (
            f"{base}/namespaces/{{namespace}}/{plural}" if namespaced else f"{base}/{plural}"
        )
        item = collection + "/{name}"
        table = [
            web.get(collection, self.collection, allow_head=False),
            web.post(collection, self.create),
            web.get(item, self.read, allow_head=False),
            web.put(item, self.replace),
            web.patch(item, self.patch),
            web.delete(item, self.delete),
            web.get(f"{base}/watch/{plural}", self.watch_all, allow_head=False),
        ]
        if namespaced:
            table.append(web.get(f"{base}/{plural}", self.collection, allow_head=False))
        if status:
            table += [
                web.get(item + "/status", self.read, allow_head=False),
                web.put(item + "/status", self.replace_status),
                web.patch(item + "/status", self.patch_status),
            ]
        return table

    async def collection(self, request: web.Request) -> web.StreamResponse:
        """LIST or WATCH."""
        namespace = request.match_info.get("namespace")
        options = parse_list_options(request.query, kind=self.registry.strategy.view)
        if options.watch:
            return await self._watch(request, namespace=namespace, watch_flag=True)
        listed = await list_objects(
            self.registry.store,
            options,
            namespace=namespace,
            max_chunk=self.settings.max_list_chunk,
        )
        if self._table(request):
            return json_response(
                node_table(
                    listed["items"],
                    metadata=listed["metadata"],
                    include=request.query.get("includeObject", "Metadata"),
                )
            )
        listed["items"] = [self._item(obj) for obj in listed["items"]]
        view = self.registry.strategy.view
        listed["kind"], listed["apiVersion"] = view.list_kind, view.api_version
        return json_response(listed)

    def _table(self, request: web.Request) -> bool:
        """``kubectl get`` asks Nodes as a Table (other kinds: served as lists)."""
        view = self.registry.strategy.view
        return view.kind == "Node" and wants_table(request.headers.get("Accept", ""))

    def _item(self, obj: JsonObj) -> JsonObj:
        typed = self.registry.present(obj)
        typed.pop("kind", None)
        typed.pop("apiVersion", None)
        return typed

    async def watch_all(self, request: web.Request) -> web.StreamResponse:
        """The legacy ``/watch/<resource>`` path."""
        return await self._watch(request, namespace=None, watch_flag=True)

    async def _watch(
        self, request: web.Request, *, namespace: str | None, watch_flag: bool
    ) -> web.StreamResponse:
        options = parse_list_options(
            request.query, kind=self.registry.strategy.view, watch=watch_flag
        )
        watch = Watch(store=self.registry.store, options=options, namespace=namespace)
        return await serve_watch(
            request, watch=watch, settings=self.settings.watch, registry=self.settings.watches
        )

    async def create(self, request: web.Request) -> web.StreamResponse:
        """POST."""
        body = await read_json(request, kind=self._kind)
        namespace = request.match_info.get("namespace")
        return _respond(self.registry.create(body, namespace=namespace))

    async def read(self, request: web.Request) -> web.StreamResponse:
        """GET of one object (or its status subresource)."""
        name, namespace = request.match_info["name"], request.match_info.get("namespace")
        found = self.registry.get(name, namespace=namespace)
        if self._table(request) and not request.path.endswith("/status"):
            metadata = {"resourceVersion": found["metadata"].get("resourceVersion", "")}
            include = request.query.get("includeObject", "Metadata")
            return json_response(node_table([found], metadata=metadata, include=include))
        return json_response(found)

    async def replace(self, request: web.Request, *, subresource: str = "") -> web.StreamResponse:
        """PUT."""
        body = await read_json(request, kind=self._kind)
        name, namespace = request.match_info["name"], request.match_info.get("namespace")
        result = self.registry.update(name, body, namespace=namespace, subresource=subresource)
        return _respond(result)

    async def replace_status(self, request: web.Request) -> web.StreamResponse:
        """PUT of ``/status``."""
        return await self.replace(request, subresource="status")

    async def patch(self, request: web.Request, *, subresource: str = "") -> web.StreamResponse:
        """PATCH."""
        content_type, patch = await read_patch(request)
        name, namespace = request.match_info["name"], request.match_info.get("namespace")
        result = self.registry.patch(
            name, patch, content_type=content_type, namespace=namespace, subresource=subresource
        )
        return _respond(result)

    async def patch_status(self, request: web.Request) -> web.StreamResponse:
        """PATCH of ``/status``."""
        return await self.patch(request, subresource="status")

    async def delete(self, request: web.Request) -> web.StreamResponse:
        """DELETE (the body, if any, is ``DeleteOptions``)."""
        options = await read_json(request, kind="DeleteOptions") if request.can_read_body else None
        name, namespace = request.match_info["name"], request.match_info.get("namespace")
        return _respond(self.registry.delete(name, namespace=namespace, options=options))

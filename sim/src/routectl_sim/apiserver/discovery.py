"""Discovery: what kubectl reads before it lists, applies or describes anything.

Promises:

* ``GET /api`` answers ``APIVersions`` (``v1``), ``GET /apis`` an ``APIGroupList`` of the
  groups this server serves, and ``GET /api/v1`` and ``GET /apis/<group>/<version>`` an
  ``APIResourceList`` naming each resource with its kind, scope, short names and the verbs
  the server really answers, shaped as kube-apiserver v1.36 sends them (legacy discovery:
  a client asking for the aggregated form, ``as=APIGroupDiscoveryList``, gets this form
  with ``Content-Type: application/json``, which clients take as "not supported" and fall
  back on, as they do with any server that predates it);
* ``GET /openapi/v3`` lists one document per group version, and each document
  (``/openapi/v3/api/v1``, ``/openapi/v3/apis/<group>/<version>``) holds the paths of its
  resources with their ``x-kubernetes-group-version-kind``, the patch content types the
  server takes and the ``fieldValidation`` query parameter, and no schemas: enough for
  kubectl to see that the server validates fields itself (so it validates nothing on the
  client side) and to build its strategic merge patches from its own built-in types.
  The server takes ``fieldValidation`` but, like ``Ignore``, drops unknown fields
  silently instead of refusing them (``Strict``) or warning (``Warn``).
  ``GET /openapi/v2`` is not served (404), which kubectl tolerates when v3 is there;
* nothing here decides what the resources do: :mod:`.routes` serves them.
"""

from __future__ import annotations

import dataclasses
import hashlib

from aiohttp import web

from routectl_sim.apiserver.encoding import encode, json_response
from routectl_sim.apiserver.status import JsonObj

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "get", "list", "patch", "update", "watch")
"""The verbs of a stored resource, sorted as kube-apiserver sorts them."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Resource:
    """One entry of an ``APIResourceList``."""

    name: str
    singular: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...]
    short_names: tuple[str, ...] = ()

    def json(self) -> JsonObj:
        """The entry, keys in Go order (``metav1.APIResource``)."""
        entry: JsonObj = {
            "name": self.name,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        return entry


CORE_V1 = (
    Resource(name="events", singular="event", kind="Event", namespaced=True, verbs=WRITE,
             short_names=("ev",)),
    Resource(name="nodes", singular="node", kind="Node", namespaced=False, verbs=WRITE,
             short_names=("no",)),
    Resource(name="nodes/status", singular="", kind="Node", namespaced=False,
             verbs=("get", "patch", "update")),
    Resource(name="pods", singular="pod", kind="Pod", namespaced=True, verbs=("get", "list"),
             short_names=("po",)),
)  # fmt: skip
"""core/v1 as served here. Pods: always none (kubectl describe node lists a Node's pods)."""

GROUPS: dict[str, tuple[Resource, ...]] = {
    "coordination.k8s.io/v1": (
        Resource(name="leases", singular="lease", kind="Lease", namespaced=True, verbs=WRITE),
    ),
    "events.k8s.io/v1": (
        Resource(
            name="events",
            singular="event",
            kind="Event",
            namespaced=True,
            verbs=WRITE,
            short_names=("ev",),
        ),
    ),
    "networking.k8s.io/v1": (
        Resource(
            name="servicecidrs",
            singular="servicecidr",
            kind="ServiceCIDR",
            namespaced=False,
            verbs=WRITE,
        ),
    ),
}
"""The named group versions this server serves, and their resources."""


def api_versions() -> JsonObj:
    """``GET /api``: the core group's versions."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}
        ],
    }


def api_group_list() -> JsonObj:
    """``GET /apis``: every named group, each with its one (preferred) version."""
    groups = []
    for group_version in GROUPS:
        name, _, version = group_version.partition("/")
        entry = {"groupVersion": group_version, "version": version}
        groups.append({"name": name, "versions": [entry], "preferredVersion": entry})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(name: str) -> JsonObj | None:
    """``GET /apis/<group>``: the group alone (``None``: not served)."""
    for group in api_group_list()["groups"]:
        if group["name"] == name:
            return {"kind": "APIGroup", "apiVersion": "v1", **group}
    return None


def resource_list(group_version: str) -> JsonObj | None:
    """``GET /api/v1`` or ``/apis/<group>/<version>`` (``None``: not served)."""
    if group_version == "v1":
        return {
            "kind": "APIResourceList",
            "groupVersion": "v1",
            "resources": [r.json() for r in CORE_V1],
        }
    resources = GROUPS.get(group_version)
    if resources is None:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": [r.json() for r in resources],
    }


PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
_FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "description": "fieldValidation instructs the server on how to handle objects in the "
    "request (POST/PUT/PATCH) containing unknown or duplicate fields.",
    "schema": {"type": "string", "uniqueItems": True},
}


def openapi_document(group_version: str) -> JsonObj | None:
    """The OpenAPI v3 document of one group version (``None``: not served): paths only."""
    resources: tuple[Resource, ...]
    if group_version == "v1":
        resources, base, group, version = CORE_V1, "/api/v1", "", "v1"
    elif group_version in GROUPS:
        resources, base = GROUPS[group_version], f"/apis/{group_version}"
        group, _, version = group_version.partition("/")
    else:
        return None
    paths: JsonObj = {}
    for r in resources:  # one collection and its items, as kubectl needs them
        if "/" in r.name or "create" not in r.verbs:
            continue
        gvk = {"group": group, "version": version, "kind": r.kind}
        collection = (
            f"{base}/namespaces/{{namespace}}/{r.name}" if r.namespaced else f"{base}/{r.name}"
        )
        body = {"content": {"*/*": {"schema": {"type": "object"}}}}
        paths[collection] = {
            "post": {
                "operationId": f"create{r.kind}",
                "parameters": [_FIELD_VALIDATION],
                "requestBody": body,
                "x-kubernetes-action": "post",
                "x-kubernetes-group-version-kind": gvk,
            }
        }
        paths[f"{collection}/{{name}}"] = {
            "patch": {
                "operationId": f"patch{r.kind}",
                "parameters": [_FIELD_VALIDATION],
                "requestBody": {
                    "content": {t: {"schema": {"type": "object"}} for t in PATCH_TYPES},
                    "required": True,
                },
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
            }
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.36.2"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def _openapi_path(group_version: str) -> str:
    return "api/v1" if group_version == "v1" else f"apis/{group_version}"


def openapi_root() -> JsonObj:
    """``GET /openapi/v3``: where each group version's document is (with a content hash)."""
    paths = {}
    for group_version in ("v1", *GROUPS):
        digest = hashlib.sha512(encode(openapi_document(group_version))).hexdigest().upper()
        path = _openapi_path(group_version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


async def _openapi_root(request: web.Request) -> web.StreamResponse:
    return json_response(openapi_root())


async def _openapi_document(request: web.Request) -> web.StreamResponse:
    path = request.match_info["path"]
    group_version = "v1" if path == "api/v1" else path.removeprefix("apis/")
    found = openapi_document(group_version) if path.startswith(("api/", "apis/")) else None
    if found is None:
        raise web.HTTPNotFound
    return json_response(found)


async def _api(request: web.Request) -> web.StreamResponse:
    return json_response(api_versions())


async def _apis(request: web.Request) -> web.StreamResponse:
    return json_response(api_group_list())


async def _core_v1(request: web.Request) -> web.StreamResponse:
    return json_response(resource_list("v1"))


async def _group(request: web.Request) -> web.StreamResponse:
    found = api_group(request.match_info["group"])
    if found is None:
        raise web.HTTPNotFound
    return json_response(found)


async def _group_version(request: web.Request) -> web.StreamResponse:
    info = request.match_info
    found = resource_list(f"{info['group']}/{info['version']}")
    if found is None:
        raise web.HTTPNotFound
    return json_response(found)


def routes() -> list[web.RouteDef]:
    """The discovery endpoints (added after the resources' own, which are more specific)."""
    return [
        web.get("/api", _api, allow_head=False),
        web.get("/api/", _api, allow_head=False),
        web.get("/apis", _apis, allow_head=False),
        web.get("/apis/", _apis, allow_head=False),
        web.get("/api/v1", _core_v1, allow_head=False),
        web.get("/api/v1/", _core_v1, allow_head=False),
        web.get("/apis/{group}", _group, allow_head=False),
        web.get("/apis/{group}/", _group, allow_head=False),
        web.get("/apis/{group}/{version}", _group_version, allow_head=False),
        web.get("/apis/{group}/{version}/", _group_version, allow_head=False),
        web.get("/openapi/v3", _openapi_root, allow_head=False),
        web.get("/openapi/v3/{path:.+}", _openapi_document, allow_head=False),
    ]

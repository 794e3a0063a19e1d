"""The fake's global routes: list (``filter``, pages), get, insert, delete.

A taken name is 409 ``alreadyExists`` (while its insert runs, too), a missing route 404
``notFound``; a bad name 400. An insert past ``routes_quota`` ends in the operation error
``QUOTA_EXCEEDED``, one whose next hop instance does not exist in ``RESOURCE_NOT_FOUND``
(the route is not made). A route's ``warnings`` carry ``NEXT_HOP_INSTANCE_NOT_FOUND`` while
its next hop instance does not exist.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from aiohttp import web

from routectl_gce.fake.operations import OperationsApi
from routectl_gce.fake.shapes import (
    BASE,
    FilterError,
    error_answer,
    matches,
    not_found,
    operation_failure,
)

NOT_FOUND_WARNING = "NEXT_HOP_INSTANCE_NOT_FOUND"


class RoutesApi(OperationsApi):
    """Global routes' handlers, and routes made behind the plugin's back."""

    network_url: str
    routes: dict[str, dict[str, Any]]
    instances: dict[str, dict[str, Any]]
    page_size: int
    routes_quota: int
    _ids: itertools.count[int]

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
            return error_answer(400, "invalid", str(exc))
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
            return not_found(self.project, "routes", request.match_info["name"])
        return web.json_response(self._shown(route))

    async def _insert_route(self, request: web.Request) -> web.Response:
        body = await request.json()
        name = str(body.get("name", ""))
        if not re.fullmatch(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", name):
            return error_answer(
                400, "invalid", f"Invalid value for field 'resource.name': '{name}'."
            )
        if name in self.routes or self._pending(name):
            return error_answer(
                409,
                "alreadyExists",
                f"The resource 'projects/{self.project}/global/routes/{name}' already exists",
            )
        if not body.get("destRange") or not body.get("network"):
            return error_answer(
                400, "required", "Required field 'resource.destRange' not specified"
            )

        def effect() -> dict[str, Any] | None:
            if len(self.routes) >= self.routes_quota:
                return operation_failure(
                    "QUOTA_EXCEEDED",
                    f"Quota 'ROUTES' exceeded.  Limit: {float(self.routes_quota)} globally.",
                    403,
                )
            hop = self._absolute(str(body.get("nextHopInstance", "")))
            if hop and hop not in self.instances:
                return operation_failure(
                    "RESOURCE_NOT_FOUND", f"The resource '{hop}' was not found", 404
                )
            self._store_route({**body, **({"nextHopInstance": hop} if hop else {})})
            return None

        return web.json_response(self._operation("insert", name, effect))

    async def _delete_route(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in self.routes:
            return not_found(self.project, "routes", name)

        def effect() -> dict[str, Any] | None:
            if self.routes.pop(name, None) is None:
                return operation_failure(
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

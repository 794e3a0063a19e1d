"""The fake's zonal instances: get, list in a zone, and the aggregated list (``filter``)."""

from __future__ import annotations

import itertools
from typing import Any

from aiohttp import web

from routectl_gce.fake.shapes import BASE, FilterError, error_answer, matches, not_found


class InstancesApi:
    """Instances' handlers, and instances set up by the tests."""

    project: str
    instances: dict[str, dict[str, Any]]
    _ids: itertools.count[int]

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

    async def _get_instance(self, request: web.Request) -> web.Response:
        zone, name = request.match_info["zone"], request.match_info["name"]
        link = f"{BASE}/projects/{self.project}/zones/{zone}/instances/{name}"
        if link not in self.instances:
            return not_found(self.project, f"zones/{zone}/instances", name)
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
            return error_answer(400, "invalid", str(exc))
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
            return error_answer(400, "invalid", str(exc))
        items: dict[str, Any] = {zone: {"instances": found} for zone, found in by_zone.items()}
        return web.json_response(
            {
                "kind": "compute#instanceAggregatedList",
                "id": f"projects/{self.project}/aggregated/instances",
                "items": items,
                "selfLink": f"{BASE}/projects/{self.project}/aggregated/instances",
            }
        )

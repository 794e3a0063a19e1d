"""The fake cloud's HTTP API, from the ``fake`` plugin's side (``endpoint`` option).

It speaks the small REST API that ``routectl_sim.cloudserver.CloudServer`` serves, so
several ``routectl run`` processes can share one simulated cloud. Every request spends the
budget the plugin was handed first. Statuses map onto the error tree: 409 "already
exists" (with the holder the cloud names), 404 "not found", 429 throttled (``Retry-After``
passed through as the cloud said it: the gate caps it), 403 and other 4xx terminal, a 503
that carries a readable ``Retry-After`` throttled too (the cloud said when to come back:
that hint is honoured like a 429's), other 5xx and a lost connection transient. Like a
hastily written plugin, it reads answers without checking their shape: a 200 of the wrong
shape raises whatever parsing raises, and routectl's gate is what turns that into a
transient error.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import aiohttp

from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import RequestBudget
from routectl.ratelimit import parse_retry_after

HTTP_CLIENT_ERRORS, HTTP_SERVER_ERRORS = range(400, 500), range(500, 600)


class HttpCloud:
    """One cluster's routes at a fake cloud's HTTP endpoint."""

    def __init__(
        self, *, endpoint: str, cluster: str, client: str, budget: RequestBudget | None
    ) -> None:
        self._base = f"{endpoint.rstrip('/')}/clusters/{quote(cluster, safe='')}/routes"
        self._headers = {"X-Client": client}
        self._budget = budget
        self._session: aiohttp.ClientSession | None = None

    async def list(self) -> list[Route]:
        """GET the routes."""
        body = await self._request("list", "GET", self._base)
        return [
            Route(
                target_node=item["target"],
                destination_cidr=item["destination"],
                name=item["name"],
                blackhole=item["blackhole"],
            )
            for item in body["routes"]
        ]

    async def create(self, route: Route, name_hint: str) -> None:
        """POST one route."""
        payload = {
            "destination": route.destination_cidr,
            "target": route.target_node,
            "nameHint": name_hint,
        }
        await self._request("create", "POST", self._base, json=payload)

    async def delete(self, route: Route) -> None:
        """DELETE one route by name (its destination and target for the cloud's check)."""
        url = f"{self._base}/{quote(route.name or '-', safe='')}"
        params = {"destination": route.destination_cidr, "target": route.target_node}
        await self._request("delete", "DELETE", url, params=params)

    async def aclose(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()

    async def _request(self, operation: str, method: str, url: str, **kwargs: Any) -> Any:
        if self._budget is not None:
            await self._budget.spend(operation)
        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self._headers)
        try:
            async with self._session.request(method, url, **kwargs) as response:
                if response.status >= HTTP_CLIENT_ERRORS.start:
                    raise _error(response.status, await response.text(), response.headers)
                if response.content_length == 0 or response.status == HTTPStatus.NO_CONTENT:
                    return None
                return await response.json()
        except aiohttp.ClientConnectionError as exc:
            raise ProviderError(f"{operation}: connection failed: {exc}") from exc


def _error(status: int, text: str, headers: Any) -> ProviderError:
    message = f"HTTP {status}: {text[:200]}"
    if status == HTTPStatus.CONFLICT:
        return RouteAlreadyExistsError(message, holder=_holder(text))
    if status == HTTPStatus.NOT_FOUND:
        return RouteNotFoundError(message)
    if status == HTTPStatus.TOO_MANY_REQUESTS:
        return ProviderThrottledError(message, retry_after=_retry_after(headers))
    if status in HTTP_CLIENT_ERRORS:
        return ProviderTerminalError(message)
    hint = _retry_after(headers) if status == HTTPStatus.SERVICE_UNAVAILABLE else None
    if hint is not None:
        return ProviderThrottledError(message, retry_after=hint)
    return ProviderError(message)


def _holder(text: str) -> Route | None:
    """The route a 409 names as holding the destination; None if it names none."""
    try:
        item = json.loads(text)["holder"]
        return Route(
            target_node=str(item["target"]),
            destination_cidr=str(item["destination"]),
            name=str(item["name"]),
            blackhole=bool(item["blackhole"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


def _retry_after(headers: Any) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP-date), as sent."""
    return parse_retry_after(headers.get("Retry-After"), date=headers.get("Date"))

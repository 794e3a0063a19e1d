"""routectl-example: a provider for Example Cloud's REST API, the template for new plugins.

Example Cloud keeps routes in one list that clusters and people share. Each route is
``{"id", "destination", "server", "labels"}``; this cluster's carry the label
``cluster=<cluster name>``, set in the same request that makes the route. Node names are
server names. Every HTTP request spends the request budget routectl hands the factory, and
every answer is read by type: a value of the wrong shape is one error naming the field.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import aiohttp

from routectl.answers import Answer
from routectl.cidr import canonical
from routectl.errors import (
    ConfigError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import BudgetedProviderFactory, RequestBudget
from routectl.ratelimit import parse_retry_after

KNOWN_OPTIONS = ("endpoint",)


class ExampleProvider:
    """The ``example`` provider; the class is its own factory."""

    def __init__(
        self, *, cluster_name: str, options: Mapping[str, str], budget: RequestBudget
    ) -> None:
        unknown = sorted(set(options) - set(KNOWN_OPTIONS))
        if unknown:
            raise ConfigError(
                f"--provider-option: provider example: unknown option(s) {', '.join(unknown)}; "
                f"known: {', '.join(KNOWN_OPTIONS)}"
            )
        endpoint = options.get("endpoint", "")
        if not endpoint.startswith(("http://", "https://")):
            raise ConfigError(
                "--provider-option: provider example: endpoint must be an http(s) URL"
            )
        self.cluster_name = cluster_name
        self.endpoint = endpoint.rstrip("/")
        self.budget = budget
        self.session: aiohttp.ClientSession | None = None  # opened on first use, in the loop

    async def list_routes(self) -> Collection[Route]:
        """This cluster's routes; one whose server is gone is a blackhole without target."""
        servers = await self._servers()
        return [self._as_route(r, servers) for r in await self._routes() if self._ours(r)]

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Route the CIDR to the node's server, labelled as ours in the same request."""
        del name_hint  # Example Cloud names routes itself
        names = await self._servers()
        server = next((id_ for id_, name in names.items() if name == route.target_node), None)
        if server is None:  # transient: the server may not be known yet
            raise ProviderError(f"no server named {route.target_node!r}")
        body = {
            "destination": route.destination_cidr,
            "server": server,
            "labels": {"cluster": self.cluster_name},
        }
        try:
            await self._request("POST", "/routes", json=body)
        except RouteAlreadyExistsError:
            await self._explain_conflict(route, server, names)

    async def delete_route(self, route: Route) -> None:
        """Delete our route to the CIDR if it still leads where ``route`` says."""
        servers = await self._servers()
        key = canonical(route.destination_cidr)
        for r in await self._routes():
            held = self._as_route(r, servers)
            mine = self._ours(r) and canonical(held.destination_cidr) == key
            if mine and held.target_node == route.target_node:
                await self._request("DELETE", f"/routes/{held.name}")
                return
        raise RouteNotFoundError(f"no route to {key} via {route.target_node or 'nothing'}")

    async def aclose(self) -> None:
        """Close the HTTP session; calling it again does nothing."""
        session, self.session = self.session, None
        if session is not None:
            await session.close()

    def _ours(self, raw: Answer) -> bool:
        labels = raw.field("labels")
        return not labels.missing and labels.field("cluster").text(default="") == self.cluster_name

    @staticmethod
    def _as_route(raw: Answer, servers: dict[str, str]) -> Route:
        """A route of the API as routectl lists it; its server gone: a blackhole."""
        server = raw.field("server").text()
        return Route(
            target_node=servers.get(server, ""),
            destination_cidr=raw.field("destination").text(),
            name=raw.field("id").text(),
            blackhole=server not in servers,
        )

    async def _explain_conflict(self, route: Route, server: str, names: dict[str, str]) -> None:
        """The CIDR is taken: by us to the same server (fine), by another Node (say which,
        as ``holder``: routectl checks it), or by someone else (refused, naming it)."""
        key = canonical(route.destination_cidr)
        for r in await self._routes():
            holder = self._as_route(r, names)
            if canonical(holder.destination_cidr) != key:
                continue
            if not self._ours(r):
                raise ProviderTerminalError(f"{key} is routed by someone else ({holder.name})")
            if r.field("server").text() == server:
                return
            raise RouteAlreadyExistsError(f"{key} is routed elsewhere", holder=holder)
        raise ProviderError(f"{key} was taken, then freed while this create ran")  # try again

    async def _servers(self) -> dict[str, str]:
        """Server id -> name (the Node name)."""
        answer = await self._request("GET", "/servers")
        return {
            s.field("id").text(): s.field("name").text() for s in answer.field("servers").items()
        }

    async def _routes(self) -> list[Answer]:
        """Every route, page by page: each page is a request, and spends the budget."""
        routes: list[Answer] = []
        page: int | None = 1
        while page is not None:
            answer = await self._request("GET", f"/routes?page={page}")
            routes.extend(answer.field("routes").items())
            next_page = answer.field("next_page")
            page = None if next_page.missing else next_page.integer()
        return routes

    async def _request(self, method: str, path: str, **kwargs: Any) -> Answer:
        """One HTTP request: budget first, then the call; failures leave as routectl errors,
        the answer is read by type (``Answer``: a field of the wrong shape names itself)."""
        what = f"Example Cloud {method} {path.split('?', maxsplit=1)[0]}"
        await self.budget.spend(what.removeprefix("Example Cloud "))
        if self.session is None:
            self.session = aiohttp.ClientSession()
        try:
            async with self.session.request(method, self.endpoint + path, **kwargs) as response:
                if response.status >= 400:  # noqa: PLR2004
                    raise _error(response.status, await response.text(), response.headers)
                body = await response.json() if response.status != 204 else None  # noqa: PLR2004
        except aiohttp.ClientError as exc:  # refused, reset, a lost answer, not JSON: transient
            raise ProviderError(f"{what}: {type(exc).__name__}") from exc
        except ValueError as exc:  # JSON that does not parse
            raise ProviderError(f"{what}: the answer is not JSON") from exc
        return Answer(body, what=what)


def _error(status: int, text: str, headers: Mapping[str, str]) -> ProviderError:
    """The routectl error for an error answer (section 5 of the guide)."""
    message = f"Example Cloud answered {status}: {text[:200]}"
    if status == 409:  # noqa: PLR2004
        return RouteAlreadyExistsError(message)
    if status == 429 or (status == 503 and "Retry-After" in headers):  # noqa: PLR2004
        return ProviderThrottledError(message, retry_after=_retry_after(headers))  # it said when
    if status >= 500:  # noqa: PLR2004
        return ProviderError(message)
    return ProviderTerminalError(message)


def _retry_after(headers: Mapping[str, str]) -> float:
    """Seconds from ``Retry-After`` (delta-seconds or an HTTP date), else one second."""
    seconds = parse_retry_after(headers.get("Retry-After"), date=headers.get("Date"))
    return 1.0 if seconds is None or seconds <= 0 else seconds


_: BudgetedProviderFactory = ExampleProvider  # mypy proves the class fits routectl's contract

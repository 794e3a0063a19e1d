"""The ``fake`` provider plugin: one cluster's routes in a simulated cloud.

* Built by the plugin loader with ``--provider-option`` values, it runs over a private
  :class:`FakeCloud` configured by them (latency, a server-side budget, a quota, faults).
  Its routes go nowhere, so it refuses to start unless ``demo=true`` says this is a demo: an
  install that names ``fake`` by accident stops at start-up instead of reporting Nodes'
  routes as programmed.
* With ``endpoint=<url>`` (and optionally ``client=<name>``, sent as ``X-Client``) it talks
  HTTP to a shared fake cloud (``routectl_sim.cloudserver``), so several processes can share
  one cloud; the cloud's own behaviour is then the server's, and other options are refused.
* Tests and the simulator hand it a shared in-memory cloud (:meth:`FakeProvider.over`).

It takes the request budget: every request (each call is one, in memory; each HTTP request
over the network) spends it first. A bad option is a ConfigError naming it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import cast

from routectl.errors import ConfigError
from routectl.model import Route
from routectl.provider import BatchResult, RequestBudget
from routectl.testing.cloud import CloudSettings, FakeCloud
from routectl.testing.http_cloud import HttpCloud


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value not in {"1", "0", "true", "false", "yes", "no"}:
        raise ValueError(text)
    return value in {"1", "true", "yes"}


def _number(low: float, high: float = math.inf, *, kind: type = float) -> Callable[[str], object]:
    def parse(text: str) -> object:
        value = kind(text)
        if not (math.isfinite(value) and low <= value <= high):
            raise ValueError(text)
        return value

    return parse


_OPTIONS: dict[str, tuple[Callable[[str], object], str]] = {
    "list-latency": (_number(0.0), "seconds >= 0"),
    "write-latency": (_number(0.0), "seconds >= 0"),
    "qps": (_number(1e-9), "requests per second > 0"),
    "burst": (_number(1, kind=int), "an integer >= 1"),
    "route-quota": (_number(0, kind=int), "an integer >= 0"),
    "failure-rate": (_number(0.0, 1.0), "a share within 0..1"),
    "seed": (_number(-math.inf, kind=int), "an integer"),
    "enable-node-addresses": (_flag, "true or false"),
    "list-lag": (_number(0.0), "seconds >= 0"),
    "whole-table": (_flag, "true or false"),
    "replace": (_flag, "true or false"),
}
_REMOTE = frozenset({"endpoint", "client"})
DEMO = "demo"
"""The option that lets the in-memory cloud run (``--provider-option=demo=true``)."""
NOT_A_DEMO = (
    "--provider fake is an in-memory cloud for tests and demos: the routes it reports go "
    "nowhere. Add --provider-option=demo=true to run it anyway (never in production)"
)


def settings_from_options(options: Mapping[str, str]) -> CloudSettings:
    """Build :class:`CloudSettings` from ``--provider-option`` values; bad ones fail clearly."""
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ConfigError(
            f"--provider-option: unknown option(s) {', '.join(unknown)} for provider fake; "
            f"known: {', '.join(sorted([*_OPTIONS, *_REMOTE, DEMO]))}"
        )
    values: dict[str, object] = {}
    for key, text in options.items():
        parse, expected = _OPTIONS[key]
        try:
            values[key.replace("-", "_")] = parse(text)
        except ValueError:
            raise ConfigError(f"--provider-option {key}={text!r}: expected {expected}") from None
    return CloudSettings(**values)  # type: ignore[arg-type]


def _remote(
    cluster_name: str, options: Mapping[str, str], budget: RequestBudget | None
) -> HttpCloud:
    others = sorted(set(options) - _REMOTE)
    if others:
        raise ConfigError(
            f"--provider-option: {', '.join(others)} cannot be set with endpoint= "
            "(the fake cloud server decides how it behaves)"
        )
    endpoint = options["endpoint"]
    if not endpoint.startswith(("http://", "https://")):
        raise ConfigError(f"--provider-option endpoint={endpoint!r}: expected an http(s) URL")
    return HttpCloud(
        endpoint=endpoint, cluster=cluster_name, client=options.get("client", ""), budget=budget
    )


class FakeProvider:
    """The ``fake`` provider: one cluster's routes in a :class:`FakeCloud`, or over HTTP."""

    def __init__(
        self,
        *,
        cluster_name: str,
        options: Mapping[str, str],
        cloud: FakeCloud | None = None,
        budget: RequestBudget | None = None,
    ) -> None:
        self.cluster_name = cluster_name
        self.budget = budget
        options = dict(options)
        demo = options.pop(DEMO, "false")
        try:
            is_demo = _flag(demo)
        except ValueError:
            message = f"--provider-option {DEMO}={demo!r}: expected true or false"
            raise ConfigError(message) from None
        self.remote = _remote(cluster_name, options, budget) if "endpoint" in options else None
        if cloud is None:
            cloud = FakeCloud(settings_from_options(options if self.remote is None else {}))
            if self.remote is None and not is_demo:
                raise ConfigError(NOT_A_DEMO)
        self.cloud = cloud

    @classmethod
    def over(cls, cloud: FakeCloud, cluster_name: str) -> FakeProvider:
        """A provider of ``cluster_name``'s routes in the shared ``cloud`` (no budget)."""
        return cls(cluster_name=cluster_name, options={}, cloud=cloud)

    async def list_routes(self) -> Collection[Route]:
        """List the cluster's routes."""
        if self.remote is not None:
            return await self.remote.list()
        result = await self._serve("list", lambda: self.cloud.listing(self.cluster_name))
        return tuple(cast("list[Route]", result))

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Create one route."""
        if self.remote is not None:
            await self.remote.create(route, name_hint)
            return
        await self._serve("create", lambda: self.cloud.create(self.cluster_name, route, name_hint))

    async def delete_route(self, route: Route) -> None:
        """Delete one route."""
        if self.remote is not None:
            await self.remote.delete(route)
            return
        await self._serve("delete", lambda: self.cloud.delete(self.cluster_name, route))

    @property
    def supports_batch(self) -> bool:
        """True in whole-table mode: :meth:`apply_routes` writes a batch in one call."""
        return self.remote is None and self.cloud.settings.whole_table

    async def apply_routes(
        self, *, deletes: Sequence[Route], creates: Sequence[tuple[Route, str]]
    ) -> BatchResult:
        """Apply deletes, then creates, as one write of the table (one request)."""
        operation = "create" if creates else "delete"
        outcome = await self._serve(
            operation, lambda: self.cloud.apply(self.cluster_name, deletes, creates)
        )
        return cast("BatchResult", outcome)

    @property
    def supports_replace(self) -> bool:
        """True when the cloud repoints routes in one call (option ``replace``)."""
        return self.remote is None and self.cloud.settings.replace

    async def replace_route(self, old: Route, new: Route, *, name_hint: str) -> None:
        """Repoint ``old`` at ``new``'s target in one request."""
        await self._serve("replace", lambda: self.cloud.replace(self.cluster_name, old, new))

    async def aclose(self) -> None:
        """Close the HTTP session, if there is one."""
        if self.remote is not None:
            await self.remote.aclose()

    async def _serve(self, operation: str, action: Callable[[], object]) -> object:
        if self.budget is not None:
            await self.budget.spend(operation)
        return await self.cloud.serve(self.cluster_name, operation, action)

"""The ``fake`` provider plugin: one cluster's routes in a :class:`FakeCloud`.

Built by the plugin loader with ``--provider-option`` values it runs over a private
simulated cloud configured by them; tests and the simulator hand it a shared cloud.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import cast

from routectl.errors import ConfigError
from routectl.model import Route
from routectl.provider import BatchResult
from routectl.testing.cloud import CloudSettings, FakeCloud

_OPTIONS: dict[str, Callable[[str], object]] = {
    "list-latency": float,
    "write-latency": float,
    "qps": float,
    "burst": int,
    "route-quota": int,
    "failure-rate": float,
    "seed": int,
    "enable-node-addresses": lambda v: v.strip().lower() in {"1", "true", "yes"},
    "list-lag": float,
    "whole-table": lambda v: v.strip().lower() in {"1", "true", "yes"},
}


def settings_from_options(options: Mapping[str, str]) -> CloudSettings:
    """Build :class:`CloudSettings` from ``--provider-option`` values; bad ones fail clearly."""
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ConfigError(
            f"--provider-option: unknown option(s) {', '.join(unknown)} for provider fake; "
            f"known: {', '.join(sorted(_OPTIONS))}"
        )
    values: dict[str, object] = {}
    for key, text in options.items():
        try:
            values[key.replace("-", "_")] = _OPTIONS[key](text)
        except ValueError:
            raise ConfigError(f"--provider-option: {key}={text!r} is not a valid value") from None
    try:
        return CloudSettings(**values)  # type: ignore[arg-type]
    except TypeError as exc:  # pragma: no cover - keys are checked above
        raise ConfigError(str(exc)) from None


class FakeProvider:
    """The ``fake`` provider: one cluster's routes in a :class:`FakeCloud`.

    Built by the plugin loader with ``options`` (``list-latency``, ``write-latency``, ``qps``,
    ``burst``, ``route-quota``, ``failure-rate``, ``seed``, ``enable-node-addresses``) it runs
    over a private simulated cloud; tests and the simulator pass a shared ``cloud`` instead.
    """

    def __init__(
        self, *, cluster_name: str, options: Mapping[str, str], cloud: FakeCloud | None = None
    ) -> None:
        self.cluster_name = cluster_name
        self.cloud = cloud if cloud is not None else FakeCloud(settings_from_options(options))

    async def list_routes(self) -> Collection[Route]:
        """List the cluster's routes."""
        result = await self.cloud.serve(
            self.cluster_name, "list", lambda: self.cloud.listing(self.cluster_name)
        )
        return tuple(cast("list[Route]", result))

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Create one route."""
        await self.cloud.serve(
            self.cluster_name,
            "create",
            lambda: self.cloud._create(self.cluster_name, route, name_hint),  # noqa: SLF001
        )

    async def delete_route(self, route: Route) -> None:
        """Delete one route."""
        await self.cloud.serve(
            self.cluster_name,
            "delete",
            lambda: self.cloud._delete(self.cluster_name, route),  # noqa: SLF001
        )

    @property
    def supports_batch(self) -> bool:
        """True in whole-table mode: :meth:`apply_routes` writes a batch in one call."""
        return self.cloud.settings.whole_table

    async def apply_routes(
        self, *, deletes: Sequence[Route], creates: Sequence[tuple[Route, str]]
    ) -> BatchResult:
        """Apply deletes, then creates, as one write of the table (one request)."""
        operation = "create" if creates else "delete"
        outcome = await self.cloud.serve(
            self.cluster_name,
            operation,
            lambda: self.cloud.apply(self.cluster_name, deletes, creates),
        )
        return cast("BatchResult", outcome)

    async def aclose(self) -> None:
        """Nothing to release."""

"""The provider plugin contract and plugin loading.

A provider is any class (or callable) registered under the entry-point group
``routectl.providers`` that, called with ``cluster_name`` and ``options``, returns a
:class:`RouteProvider`. Only the provider named on the command line is imported; an unknown
name fails with the list of installed names. The contract mirrors upstream's
``cloudprovider.Routes``. Plugins never rate-limit or retry: :mod:`routectl.cloud.gate` wraps
every provider in the one gate every cloud call passes.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import inspect
from collections.abc import Collection, Mapping, Sequence
from typing import Protocol, TypeGuard, cast

from routectl.errors import ProviderError, ProviderNotFoundError
from routectl.model import Route

ENTRY_POINT_GROUP = "routectl.providers"
"""Calls per second (and burst) that stand for "no client-side limit"."""


class RouteProvider(Protocol):
    """What routectl needs from a cloud: the routes of one cluster, and changes to them."""

    async def list_routes(self) -> Collection[Route]:
        """Every route of this cluster the provider manages, with target nodes resolved."""
        ...

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Create ``route``; ``name_hint`` (the node's UID) may help name it."""
        ...

    async def delete_route(self, route: Route) -> None:
        """Delete ``route``, one previously returned by :meth:`list_routes`."""
        ...

    async def aclose(self) -> None:
        """Release connections and other resources."""
        ...


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BatchResult:
    """Per-route outcome of one batched write: the index of each failed delete or create."""

    failed_deletes: Mapping[int, ProviderError] = dataclasses.field(default_factory=dict)
    failed_creates: Mapping[int, ProviderError] = dataclasses.field(default_factory=dict)


class BatchRouteProvider(RouteProvider, Protocol):
    """The optional capability of clouds that store a route table as one object.

    OpenStack router routes and Azure route tables pay one write per route today; a
    provider that sets ``supports_batch`` applies a whole sync's deletes (first) and
    creates in one call and reports which routes failed. A failure of the whole call
    raises, as any call does. "Already exists" and "not found" count as success.
    """

    @property
    def supports_batch(self) -> bool:
        """True when the provider may write whole batches (a plugin may decide at run time)."""
        ...

    async def apply_routes(
        self, *, deletes: Sequence[Route], creates: Sequence[tuple[Route, str]]
    ) -> BatchResult:
        """Delete ``deletes``, then create ``creates`` (route, name hint), in one write."""
        ...


def batch_capable(provider: object) -> TypeGuard[BatchRouteProvider]:
    """True if ``provider`` offers batched writes and says it may use them."""
    return bool(getattr(provider, "supports_batch", False)) and callable(
        getattr(provider, "apply_routes", None)
    )


class ReplaceRouteProvider(RouteProvider, Protocol):
    """The optional capability of clouds that can repoint a route in one call.

    When a Node's address changes, or a pod CIDR moves to another Node, the route to the
    same destination must target something else. Without this capability that is a delete
    and then a create (two writes, a gap between them); AWS's ``ReplaceRoute`` does it in
    one. ``replace_route(old, new)`` makes the route ``old`` (as listed) target what
    ``new`` says; the destination is the same. "Not found" means ``old`` is gone: the
    caller creates ``new`` instead.
    """

    @property
    def supports_replace(self) -> bool:
        """True when the provider may replace routes in one call."""
        ...

    async def replace_route(self, old: Route, new: Route, *, name_hint: str) -> None:
        """Make the listed route ``old`` target ``new``'s node, in one call."""
        ...


def replace_capable(provider: object) -> TypeGuard[ReplaceRouteProvider]:
    """True if ``provider`` can replace a route's target in one call and says it may."""
    return bool(getattr(provider, "supports_replace", False)) and callable(
        getattr(provider, "replace_route", None)
    )


class RequestBudget(Protocol):
    """The budget every HTTP request of a plugin must pass, handed to it by its factory.

    Call :meth:`spend` before *each* request the plugin sends, pages, polls and look-ups
    included: it waits for a token of routectl's bucket (and out any pause a cloud asked
    for), so routectl never spends more than ``--cloud-qps``/``--cloud-burst``.
    """

    async def spend(self, operation: str = "request") -> None:
        """Wait until one more request may be sent, and count it under ``operation``."""
        ...


class ProviderFactory(Protocol):
    """Builds a provider; a plugin's class usually is its own factory.

    A factory that also takes ``budget`` (a :class:`RequestBudget`) promises that every
    request its provider makes spends it; one that does not is paced once per call.
    """

    def __call__(self, *, cluster_name: str, options: Mapping[str, str]) -> RouteProvider: ...


class BudgetedProviderFactory(Protocol):
    """A factory whose provider spends the budget it is given on each of its requests."""

    def __call__(
        self, *, cluster_name: str, options: Mapping[str, str], budget: RequestBudget
    ) -> RouteProvider: ...


def takes_budget(factory: object) -> TypeGuard[BudgetedProviderFactory]:
    """True if ``factory`` accepts the ``budget`` keyword (it paces its own requests)."""
    try:
        parameters = inspect.signature(factory).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return "budget" in parameters


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class InstalledProvider:
    """A provider plugin found in the entry-point group, and the distribution shipping it."""

    name: str
    distribution: str
    version: str
    target: str


def installed_providers() -> list[InstalledProvider]:
    """List installed plugins by name, without importing any of them."""
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return sorted(
        (
            InstalledProvider(
                name=ep.name,
                distribution=ep.dist.name if ep.dist else "",
                version=ep.dist.version if ep.dist else "",
                target=ep.value,
            )
            for ep in found
        ),
        key=lambda p: p.name,
    )


def load_factory(name: str) -> ProviderFactory:
    """Import only the plugin registered as ``name``; the error lists what is installed."""
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP, name=name)
    if not found:
        known = ", ".join(p.name for p in installed_providers()) or "none"
        raise ProviderNotFoundError(f"--provider: no provider {name!r}; installed: {known}")
    (entry_point, *_) = found
    return cast("ProviderFactory", entry_point.load())

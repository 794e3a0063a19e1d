"""The contract's rules for the optional capabilities, tested only where a plugin declares them.

* Batched writes (``supports_batch``): ``apply_routes`` carries out every delete and create
  it does not report, reports each one that failed by its index (a create over another
  Node's or a foreign route is a failure; "already there" and "already gone" are not), and
  never changes a foreign route.
* Replace (``supports_replace``): ``replace_route(old, new)`` repoints the listed route in
  place; if ``old`` no longer holds the CIDR it raises ``RouteNotFoundError`` and changes
  nothing; it never touches a foreign route.
"""

from __future__ import annotations

import pytest

from routectl.cidr import canonical
from routectl.errors import ProviderError, RouteNotFoundError
from routectl.provider import (
    BatchRouteProvider,
    ReplaceRouteProvider,
    RouteProvider,
    batch_capable,
    replace_capable,
)
from routectl.testing.contract_base import GUIDE, ContractBase, keys


def _batch(provider: RouteProvider) -> BatchRouteProvider:
    if not batch_capable(provider):
        pytest.skip("the provider does not declare supports_batch")
    return provider


def _replacer(provider: RouteProvider) -> ReplaceRouteProvider:
    if not replace_capable(provider):
        pytest.skip("the provider does not declare supports_replace")
    return provider


class CapabilityRules(ContractBase):
    """Batched writes and replace, where declared."""

    async def test_batch_applies_every_change(self, provider: RouteProvider) -> None:
        """One batch deletes and creates everything it was given."""
        batch = _batch(provider)
        a, b = self.nodes
        await provider.create_route(self.route(a, self.cidr_v4), name_hint="uid-a")
        listed = await self.listed(provider)
        result = await batch.apply_routes(
            deletes=listed, creates=[(self.route(b, self.cidr_v4_other), "uid-b")]
        )
        assert not result.failed_deletes and not result.failed_creates, (
            f"a batch that could fully succeed reported failures: {result}"
        )
        assert keys(await self.listed(provider)) == {(b, canonical(self.cidr_v4_other))}, (
            f"a batch that reported no failure did not carry out every change ({GUIDE}, section 12)"
        )

    async def test_batch_reports_each_failed_route(self, provider: RouteProvider) -> None:
        """A batch reports exactly the creates that could not be made, and makes the others."""
        batch = _batch(provider)
        a, b = self.nodes
        await provider.create_route(self.route(a, self.cidr_v4), name_hint="uid-a")
        (held,) = await self.listed(provider)
        await provider.delete_route(held)
        creates = [
            (self.route(b, self.cidr_v4), "uid-b"),  # made first: a's create below conflicts
            (self.route(a, self.cidr_v4_other), "uid-a"),
            (self.route(a, self.cidr_v4), "uid-a"),  # b holds it now
        ]
        result = await batch.apply_routes(deletes=[held], creates=creates)
        assert sorted(result.failed_creates) == [2], (
            f"the batch reported failed creates {sorted(result.failed_creates)}, but only #2 "
            f"({self.cidr_v4} -> {a}, which {b} holds) could not be made: report each failure "
            f"by its index, never drop one, never report a success ({GUIDE}, section 12)"
        )
        assert isinstance(result.failed_creates[2], ProviderError)
        assert not result.failed_deletes, (
            f"deleting a route that was already gone was reported as a failure: {result}"
        )
        listed = keys(await self.listed(provider))
        assert listed == {(b, canonical(self.cidr_v4)), (a, canonical(self.cidr_v4_other))}, (
            f"after the batch the cloud lists {listed}: every unreported change must be made"
        )

    async def test_batch_leaves_foreign_routes_alone(
        self, provider: RouteProvider, foreign_kind: str
    ) -> None:
        """A batch touching a foreign route's CIDR reports the create and changes nothing."""
        batch = _batch(provider)
        self.skip_without_foreign(foreign_kind)
        await self.need_foreign(foreign_kind, self.foreign_cidr)
        before = await self.snapshot()
        foreign = {e for e in before if e[0] == self.foreign_cidr}
        result = await batch.apply_routes(
            deletes=[self.route(self.nodes[0], self.foreign_cidr)],
            creates=[
                (self.route(self.nodes[0], self.foreign_cidr), "uid-a"),
                (self.route(self.nodes[1], self.cidr_v4), "uid-b"),
            ],
        )
        after = await self.snapshot()
        beside = {e for e in after if e[0] == self.foreign_cidr}
        assert foreign <= beside and (beside == foreign or not self.shares_table(foreign_kind)), (
            f"a batch changed a {foreign_kind} route: never create over or delete a route you "
            f"did not list as yours ({GUIDE}, section 6)"
        )
        expected = [0] if self.shares_table(foreign_kind) else []
        assert sorted(result.failed_creates) == expected, (
            f"the batch reported failed creates {sorted(result.failed_creates)} around a "
            f"{foreign_kind} route; expected {expected} ({GUIDE}, section 12)"
        )

    async def test_replace_repoints_a_listed_route(self, provider: RouteProvider) -> None:
        """replace_route makes the listed route lead to the new Node, in one call."""
        replacer = _replacer(provider)
        a, b = self.nodes
        await provider.create_route(self.route(a, self.cidr_v4), name_hint="uid-a")
        (old,) = await self.listed(provider)
        await replacer.replace_route(old, self.route(b, self.cidr_v4), name_hint="uid-b")
        assert keys(await self.listed(provider)) == {(b, canonical(self.cidr_v4))}, (
            "replace_route did not repoint the route"
        )

    async def test_replace_of_a_route_now_leading_elsewhere_raises_not_found(
        self, provider: RouteProvider
    ) -> None:
        """A replace whose ``old`` no longer holds the CIDR raises RouteNotFoundError."""
        replacer = _replacer(provider)
        a, b = self.nodes
        await provider.create_route(self.route(a, self.cidr_v4), name_hint="uid-a")
        (stale,) = await self.listed(provider)
        await provider.delete_route(stale)
        await provider.create_route(self.route(b, self.cidr_v4), name_hint="uid-b")
        before = await self.snapshot()
        try:
            await replacer.replace_route(stale, self.route(a, self.cidr_v4), name_hint="uid-a")
        except RouteNotFoundError:
            pass
        else:
            raise AssertionError(
                f"replace_route of the stale route {self.cidr_v4} -> {a} succeeded although {b} "
                "holds the CIDR now: check that ``old`` still holds the CIDR, else raise "
                "RouteNotFoundError (routectl then creates instead)"
            )
        assert await self.snapshot() == before, "a replace that raised changed the cloud anyway"

    async def test_replace_never_touches_foreign_routes(
        self, provider: RouteProvider, foreign_kind: str
    ) -> None:
        """A replace aimed at a foreign route's CIDR fails and changes nothing."""
        replacer = _replacer(provider)
        self.skip_without_foreign(foreign_kind)
        await self.need_foreign(foreign_kind, self.foreign_cidr)
        before = await self.snapshot()
        old = self.route(self.nodes[0], self.foreign_cidr)
        try:
            await replacer.replace_route(
                old, self.route(self.nodes[1], self.foreign_cidr), name_hint="u"
            )
        except ProviderError:
            pass
        else:
            raise AssertionError(
                f"replace_route over a {foreign_kind} route succeeded: replace only a route "
                f"you listed as yours, else raise RouteNotFoundError ({GUIDE}, section 6)"
            )
        assert await self.snapshot() == before, f"replace_route changed a {foreign_kind} route"

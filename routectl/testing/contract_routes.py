"""The contract's rules for routes: listing, creating, deleting, and never touching others'.

Each rule is one test whose failure message says what to fix and where the guide says it:

* a created route is listed with its Node and CIDR; creating it again is harmless;
* a create for a destination another Node holds raises ``RouteAlreadyExistsError`` naming
  that route as ``holder``, and changes nothing (a plugin that declares ``supports_replace``
  may repoint it instead); one over a foreign route raises ``ProviderTerminalError``, or
  ``RouteAlreadyExistsError`` whose holder is no Node of this cluster;
* deleting a route that is gone, or that now leads to another Node, raises
  ``RouteNotFoundError`` and changes nothing;
* dual-stack Nodes get one route per CIDR from one name hint; a family the plugin does not
  route is refused with ``ProviderTerminalError`` before any request;
* a route whose machine is gone is listed as a blackhole without target;
* foreign routes (other clusters', operators') are never listed as this cluster's, and no
  create or delete changes them.
"""

from __future__ import annotations

import contextlib

import pytest

from routectl.cidr import canonical
from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.provider import RouteProvider, replace_capable
from routectl.testing.contract_base import GUIDE, ContractBase, keys
from routectl.testing.contract_budget import CountingBudget


class RouteRules(ContractBase):
    """Listing, creating and deleting this cluster's routes."""

    async def test_empty_cluster_lists_no_routes(self, provider: RouteProvider) -> None:
        """A cluster nobody routed for lists no routes of its own."""
        listed = await self.listed(provider)
        assert not [r for r in listed if r.target_node], (
            f"an empty cluster listed routes with targets: {listed}"
        )

    async def test_created_route_is_listed_with_its_node_and_cidr(
        self, provider: RouteProvider
    ) -> None:
        """A created route comes back from list with the target node and the same CIDR."""
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        listed = await self.listed(provider)
        mine = [r for r in listed if canonical(r.destination_cidr) == canonical(self.cidr_v4)]
        assert keys(mine) == {(self.nodes[0], canonical(self.cidr_v4))}, (
            f"after create_route({self.cidr_v4} -> {self.nodes[0]}) list_routes() gave {listed}: "
            f"list each route with target_node set to the Node's name ({GUIDE}, section 1)"
        )
        assert canonical(mine[0].destination_cidr) == canonical(self.cidr_v4)
        assert not mine[0].blackhole, "a route to a live Node must not be listed as a blackhole"

    async def test_create_twice_is_harmless(self, provider: RouteProvider) -> None:
        """Creating an existing route succeeds or raises RouteAlreadyExistsError; one remains."""
        route = self.route(self.nodes[0], self.cidr_v4)
        await provider.create_route(route, name_hint="uid-a")
        try:
            await provider.create_route(route, name_hint="uid-a")
        except RouteAlreadyExistsError as exc:
            self.check_holder(
                exc, cidr=self.cidr_v4, node=self.nodes[0], scene="creating a route twice"
            )
        listed = await self.listed(provider)
        assert keys(listed) == {(self.nodes[0], canonical(self.cidr_v4))}, (
            f"creating the same route twice left {listed}: a create must be idempotent "
            f"({GUIDE}, section 7)"
        )

    async def test_delete_removes_only_that_route(self, provider: RouteProvider) -> None:
        """Deleting a listed route removes it and leaves the others."""
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        await provider.create_route(
            self.route(self.nodes[1], self.cidr_v4_other), name_hint="uid-b"
        )
        (first,) = [r for r in await self.listed(provider) if r.target_node == self.nodes[0]]
        await provider.delete_route(first)
        assert keys(await self.listed(provider)) == {
            (self.nodes[1], canonical(self.cidr_v4_other))
        }, "delete_route removed more, or less, than the route it was given"

    async def test_delete_of_a_missing_route_raises_route_not_found(
        self, provider: RouteProvider
    ) -> None:
        """Deleting a route that is gone raises RouteNotFoundError (routectl counts it done)."""
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        (listed,) = await self.listed(provider)
        await provider.delete_route(listed)
        try:
            await provider.delete_route(listed)
        except RouteNotFoundError:
            pass
        else:
            raise AssertionError(
                "deleting a route that is already gone returned silently: raise "  # noqa: S608
                f"RouteNotFoundError, so routectl can tell a delete from a no-op ({GUIDE}, "
                "section 7)"
            )
        assert keys(await self.listed(provider)) == set()

    async def test_delete_of_a_route_now_leading_elsewhere_raises_not_found(
        self, provider: RouteProvider
    ) -> None:
        """A late delete of a CIDR that now leads to another Node leaves that Node's route."""
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        (stale,) = await self.listed(provider)
        await provider.delete_route(stale)
        await provider.create_route(self.route(self.nodes[1], self.cidr_v4), name_hint="uid-b")
        before = await self.snapshot()
        try:
            await provider.delete_route(stale)
        except RouteNotFoundError:
            pass
        else:
            raise AssertionError(
                f"delete_route of the stale route {self.cidr_v4} -> {self.nodes[0]} did not raise "
                f"RouteNotFoundError although {self.nodes[1]} now holds the CIDR: delete only "
                f"the route you were given ({GUIDE}, section 6)"
            )
        assert await self.snapshot() == before, (
            f"a late delete of {self.cidr_v4} -> {self.nodes[0]} changed the cloud: it removed "
            f"{self.nodes[1]}'s new route"
        )

    async def test_create_over_another_nodes_route_raises_already_exists(
        self, provider: RouteProvider
    ) -> None:
        """A create for a CIDR another Node holds raises RouteAlreadyExistsError, and no change."""
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        before = await self.snapshot()
        try:
            await provider.create_route(self.route(self.nodes[1], self.cidr_v4), name_hint="uid-b")
        except RouteAlreadyExistsError as exc:
            self.check_holder(
                exc,
                cidr=self.cidr_v4,
                node=self.nodes[0],
                scene=f"a create over {self.nodes[0]}'s route",
            )
        else:
            if replace_capable(provider):
                listed = await self.listed(provider)
                assert keys(listed) == {(self.nodes[1], canonical(self.cidr_v4))}, (
                    f"a create over {self.nodes[0]}'s route that replaced it left {listed}"
                )
                return
            raise AssertionError(
                f"create_route({self.cidr_v4} -> {self.nodes[1]}) succeeded while {self.nodes[0]} "
                "held the CIDR: raise RouteAlreadyExistsError and leave the route alone "
                f"(routectl deletes it first); only a plugin that declares supports_replace may "
                f"repoint it ({GUIDE}, section 7)"
            )
        assert await self.snapshot() == before, (
            "a create that raised RouteAlreadyExistsError changed the cloud anyway"
        )
        assert keys(await self.listed(provider)) == {(self.nodes[0], canonical(self.cidr_v4))}

    async def test_dual_stack_routes_share_one_name_hint(self, provider: RouteProvider) -> None:
        """Both pod CIDRs of a dual-stack node get routes although they share one name hint."""
        if not self.supports_ipv6:
            pytest.skip("supports_ipv6 is False")
        node = self.nodes[0]
        await provider.create_route(self.route(node, self.cidr_v4), name_hint="uid-a")
        await provider.create_route(self.route(node, self.cidr_v6), name_hint="uid-a")
        listed = await self.listed(provider)
        assert keys(listed) == {(node, canonical(self.cidr_v4)), (node, canonical(self.cidr_v6))}, (
            f"two CIDRs with one name hint gave {listed}: name routes per CIDR ({GUIDE}, section 8)"
        )
        (v6,) = [r for r in listed if ":" in r.destination_cidr]
        await provider.delete_route(v6)
        assert keys(await self.listed(provider)) == {(node, canonical(self.cidr_v4))}

    async def test_unsupported_family_is_refused_without_a_request(
        self, provider: RouteProvider, budget: CountingBudget
    ) -> None:
        """A plugin that cannot route IPv6 refuses it terminally, before sending anything."""
        if self.supports_ipv6:
            pytest.skip("supports_ipv6 is True: the plugin routes both families")
        before = budget.requests()
        try:
            await provider.create_route(self.route(self.nodes[0], self.cidr_v6), name_hint="u")
        except ProviderTerminalError:
            pass
        except ProviderError as exc:
            raise AssertionError(
                f"an IPv6 create raised {type(exc).__name__}: refuse a family the cloud cannot "
                f"route with ProviderTerminalError, retrying cannot help ({GUIDE}, section 8)"
            ) from exc
        else:
            raise AssertionError("an IPv6 create succeeded although supports_ipv6 is False")
        assert budget.requests() == before, (
            f"refusing IPv6 cost {budget.requests() - before} request(s): refuse it before any "
            f"API call ({GUIDE}, section 8)"
        )

    async def test_blackholes_are_listed_as_blackholes(self, provider: RouteProvider) -> None:
        """A route whose machine is gone is listed with blackhole=True and no target."""
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        await provider.create_route(
            self.route(self.nodes[1], self.cidr_v4_other), name_hint="uid-b"
        )
        await self.lose_node(self.nodes[0])
        listed = await self.listed(provider)
        gone = [r for r in listed if canonical(r.destination_cidr) == canonical(self.cidr_v4)]
        assert [(r.target_node, r.blackhole) for r in gone] == [("", True)], (
            f"after {self.nodes[0]}'s machine was removed its route was listed as {gone}: list "
            f"it once, with target_node='' and blackhole=True ({GUIDE}, section 6)"
        )
        assert (self.nodes[1], canonical(self.cidr_v4_other)) in keys(listed)
        await provider.delete_route(gone[0])
        assert keys(await self.listed(provider)) == {
            (self.nodes[1], canonical(self.cidr_v4_other))
        }, "deleting a listed blackhole must remove it"

    async def test_aclose_can_be_called_twice(self, provider: RouteProvider) -> None:
        """aclose releases resources without raising, and may be called again."""
        await provider.list_routes()
        await provider.aclose()
        await provider.aclose()


class OwnershipRules(ContractBase):
    """Foreign routes are never listed as ours, and never changed by any call."""

    async def test_foreign_routes_are_not_listed_as_ours(
        self, provider: RouteProvider, foreign_kind: str
    ) -> None:
        """A route another cluster or an operator made is not listed with one of our Nodes."""
        self.skip_without_foreign(foreign_kind)
        await self.need_foreign(foreign_kind, self.foreign_cidr)
        listed = await self.listed(provider)
        foreign = [r for r in listed if canonical(r.destination_cidr) == self.foreign_cidr]
        if self.lists_unmarked_routes:
            assert all(not r.target_node for r in foreign), (
                f"a {foreign_kind} route was listed with a target Node: {foreign}"
            )
        else:
            assert not foreign, (
                f"a {foreign_kind} route was listed as this cluster's: {foreign}; list only "
                f"routes marked as this cluster's ({GUIDE}, section 6)"
            )

    async def test_create_never_takes_over_a_foreign_route(
        self, provider: RouteProvider, foreign_kind: str
    ) -> None:
        """A create for the CIDR a foreign route holds fails and leaves the cloud as it was.

        Where the foreign route lives in a table of its own, the create may succeed, in this
        cluster's table only.
        """
        self.skip_without_foreign(foreign_kind)
        await self.need_foreign(foreign_kind, self.foreign_cidr)
        before = await self.snapshot()
        foreign = {entry for entry in before if entry[0] == self.foreign_cidr}
        try:
            await provider.create_route(
                self.route(self.nodes[0], self.foreign_cidr), name_hint="uid-a"
            )
        except (RouteAlreadyExistsError, ProviderTerminalError) as exc:
            if isinstance(exc, RouteAlreadyExistsError):
                self.check_holder(
                    exc,
                    cidr=self.foreign_cidr,
                    node=None,
                    scene=f"a create over a {foreign_kind} route",
                )
            assert await self.snapshot() == before, (
                f"a create for {self.foreign_cidr} that failed changed the cloud anyway"
            )
            return
        after = await self.snapshot()
        if self.shares_table(foreign_kind):
            raise AssertionError(
                f"create_route over a {foreign_kind} route to {self.foreign_cidr} succeeded: never "
                "create over, beside or instead of a route you did not list as yours; raise "
                f"ProviderTerminalError naming it ({GUIDE}, section 6)"
            )
        assert foreign <= after, f"a create for {self.foreign_cidr} changed a {foreign_kind} route"
        assert (self.nodes[0], self.foreign_cidr) in keys(await self.listed(provider))

    async def test_delete_never_removes_a_foreign_route(
        self, provider: RouteProvider, foreign_kind: str
    ) -> None:
        """Deleting our route, or a CIDR a foreign route holds, leaves foreign routes alone."""
        self.skip_without_foreign(foreign_kind)
        await self.need_foreign(foreign_kind, self.foreign_cidr)
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        before = await self.snapshot()
        foreign = {entry for entry in before if entry[0] == self.foreign_cidr}
        mine = [r for r in await self.listed(provider) if r.target_node == self.nodes[0]]
        for route in mine:
            await provider.delete_route(route)
        with contextlib.suppress(RouteNotFoundError):
            await provider.delete_route(self.route(self.nodes[0], self.foreign_cidr))
        after = await self.snapshot()
        assert foreign <= after, (
            f"deleting routes removed a {foreign_kind} route {sorted(foreign - after)}: delete "
            f"only what list_routes() returned as yours ({GUIDE}, section 6)"
        )
        assert {entry for entry in after if entry[0] == self.foreign_cidr} == foreign

    async def test_our_creates_leave_foreign_routes_alone(
        self, provider: RouteProvider, foreign_kind: str
    ) -> None:
        """Creating and listing this cluster's routes does not change foreign ones."""
        self.skip_without_foreign(foreign_kind)
        await self.need_foreign(foreign_kind, self.foreign_cidr)
        foreign = await self.snapshot()
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        await provider.create_route(
            self.route(self.nodes[1], self.cidr_v4_other), name_hint="uid-b"
        )
        await self.listed(provider)
        after = await self.snapshot()
        assert foreign <= after, (
            f"creating this cluster's routes removed or changed {sorted(foreign - after)}"
        )

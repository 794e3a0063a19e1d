"""The provider contract as an executable pytest suite every provider plugin's tests subclass.

Usage, in a plugin's tests::

    from routectl.testing.contract import ProviderContract

    class TestMyCloud(ProviderContract):
        @pytest.fixture
        async def provider(self):          # a provider for an empty cluster whose nodes
            p = MyCloudProvider(...)       # ``self.nodes`` the cloud can route to
            yield p
            await p.aclose()

Optional hooks: ``supports_ipv6``; ``nodes`` (two node names the fixture provisions);
``inject_fault(provider, kind)`` to make the next call fail as ``"throttled"``,
``"transient"`` or ``"terminal"`` (tests of the error mapping are skipped if it is not
implemented). The suite checks behaviour routectl relies on: listing, creating, deleting,
idempotency, dual-stack with one name hint, exact CIDR strings, and errors from the tree.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from routectl.cidr import canonical
from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import NodeAddress, Route
from routectl.provider import RouteProvider


def _keys(routes: Any) -> set[tuple[str, str]]:
    return {(r.target_node, canonical(r.destination_cidr)) for r in routes}


class ProviderContract:
    """Conformance tests for a :class:`~routectl.provider.RouteProvider`."""

    nodes: tuple[str, str] = ("contract-node-a", "contract-node-b")
    cidr_v4: str = "10.244.1.0/24"
    cidr_v4_other: str = "10.244.2.0/24"
    cidr_v6: str = "fd00:10:244:1::/64"
    supports_ipv6: bool = True

    async def inject_fault(self, provider: RouteProvider, kind: str) -> None:
        """Make the next call of ``provider`` fail as ``kind``; override to test error mapping."""
        raise NotImplementedError

    def route(self, node: str, cidr: str) -> Route:
        """The route routectl would ask for: target, CIDR and the node's addresses."""
        return Route(
            target_node=node,
            destination_cidr=cidr,
            target_node_addresses=(NodeAddress(type="InternalIP", address="10.0.0.10"),),
        )

    async def test_empty_cluster_lists_no_routes(self, provider: RouteProvider) -> None:
        """A cluster nobody routed for lists no routes of its own."""
        assert _keys(await provider.list_routes()) == set()

    async def test_created_route_is_listed_with_its_node_and_cidr(
        self, provider: RouteProvider
    ) -> None:
        """A created route comes back from list with the target node and the same CIDR."""
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        listed = list(await provider.list_routes())
        assert _keys(listed) == {(self.nodes[0], canonical(self.cidr_v4))}
        assert listed[0].destination_cidr == self.cidr_v4
        assert not listed[0].blackhole

    async def test_create_twice_is_harmless(self, provider: RouteProvider) -> None:
        """Creating an existing route succeeds or raises RouteAlreadyExistsError; one remains."""
        route = self.route(self.nodes[0], self.cidr_v4)
        await provider.create_route(route, name_hint="uid-a")
        with contextlib.suppress(RouteAlreadyExistsError):
            await provider.create_route(route, name_hint="uid-a")
        assert len(list(await provider.list_routes())) == 1

    async def test_delete_removes_only_that_route(self, provider: RouteProvider) -> None:
        """Deleting a listed route removes it and leaves the others."""
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        await provider.create_route(
            self.route(self.nodes[1], self.cidr_v4_other), name_hint="uid-b"
        )
        (first,) = [r for r in await provider.list_routes() if r.target_node == self.nodes[0]]
        await provider.delete_route(first)
        assert _keys(await provider.list_routes()) == {
            (self.nodes[1], canonical(self.cidr_v4_other))
        }

    async def test_delete_of_a_missing_route_is_harmless(self, provider: RouteProvider) -> None:
        """Deleting a route that is gone succeeds or raises RouteNotFoundError."""
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        (listed,) = await provider.list_routes()
        await provider.delete_route(listed)
        with contextlib.suppress(RouteNotFoundError):
            await provider.delete_route(listed)
        assert _keys(await provider.list_routes()) == set()

    async def test_dual_stack_routes_share_one_name_hint(self, provider: RouteProvider) -> None:
        """Both pod CIDRs of a dual-stack node get routes although they share one name hint."""
        if not self.supports_ipv6:
            pytest.skip("provider does not route IPv6")
        node = self.nodes[0]
        await provider.create_route(self.route(node, self.cidr_v4), name_hint="uid-a")
        await provider.create_route(self.route(node, self.cidr_v6), name_hint="uid-a")
        listed = list(await provider.list_routes())
        assert _keys(listed) == {(node, canonical(self.cidr_v4)), (node, canonical(self.cidr_v6))}
        (v6,) = [r for r in listed if ":" in r.destination_cidr]
        await provider.delete_route(v6)
        assert _keys(await provider.list_routes()) == {(node, canonical(self.cidr_v4))}

    @pytest.mark.parametrize(
        ("kind", "expected"),
        [
            pytest.param("throttled", ProviderThrottledError, id="throttled"),
            pytest.param("transient", ProviderError, id="transient"),
            pytest.param("terminal", ProviderTerminalError, id="terminal"),
        ],
    )
    async def test_failures_are_errors_of_the_tree(
        self, provider: RouteProvider, kind: str, expected: type[ProviderError]
    ) -> None:
        """A cloud failure reaches routectl as the matching error of routectl.errors."""
        try:
            await self.inject_fault(provider, kind)
        except NotImplementedError:
            pytest.skip("this provider's tests do not inject faults")
        with pytest.raises(expected):
            await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="u")

    async def test_aclose_can_be_called(self, provider: RouteProvider) -> None:
        """aclose releases resources without raising."""
        await provider.aclose()

"""The hooks a plugin's contract tests implement, and the fixtures the suite builds on them.

A plugin's test class subclasses :class:`~routectl.testing.contract.ProviderContract` and
gives the suite a fake of its cloud through these hooks (the suite never sees the fake):

* the ``cloud`` fixture: start the fake cloud with :attr:`ContractBase.nodes` provisioned
  (machines the cloud can route to), empty of routes;
* :meth:`ContractBase.make_provider`: a new provider instance over that cloud, built by the
  plugin's factory with the ``budget`` the suite hands it (called again for a restart);
* :meth:`ContractBase.requests_made`: HTTP requests the fake received *from the plugin*
  (scenes set behind the plugin's back are not counted);
* :meth:`ContractBase.inject_fault`, :meth:`ContractBase.add_foreign_route`,
  :meth:`ContractBase.cloud_routes`, :meth:`ContractBase.remove_node`: faults and scenes.

Class attributes say what the cloud can do (IPv6, which faults, which kinds of foreign
routes, whether it can mark routes at all). A hook left unimplemented fails the tests that
need it with a message naming it: nothing is skipped silently.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection
from typing import Any

import pytest

from routectl.cidr import canonical
from routectl.errors import RouteAlreadyExistsError
from routectl.model import NodeAddress, Route, malformed
from routectl.provider import RequestBudget, RouteProvider
from routectl.testing.contract_budget import CountingBudget

GUIDE = "docs/writing-a-provider.md"
FAULT_KINDS = ("throttled", "transient", "terminal", "lost-answer")
FOREIGN_KINDS = ("other-cluster", "operator")


def keys(routes: Collection[Route]) -> set[tuple[str, str]]:
    """(target node, canonical destination) of each route."""
    return {(r.target_node, canonical(r.destination_cidr)) for r in routes}


class ContractBase:
    """Settings, hooks and fixtures shared by every rule of the contract."""

    nodes: tuple[str, str] = ("contract-node-a", "contract-node-b")
    """Two Node names the ``cloud`` fixture provisions machines for."""
    cidr_v4: str = "10.244.1.0/24"
    cidr_v4_other: str = "10.244.2.0/24"
    cidr_v6: str = "fd00:10:244:1::/64"
    foreign_cidr: str = "10.244.3.0/24"
    """Where foreign routes go: inside the cluster's pod range, so only ownership saves them."""
    supports_ipv6: bool = True
    """False: IPv6 creates must be refused with ProviderTerminalError and no request."""
    fault_kinds: tuple[str, ...] = FAULT_KINDS
    """The kinds :meth:`inject_fault` can make; tests of the others are skipped, with reason."""
    foreign_kinds: tuple[str, ...] = FOREIGN_KINDS
    """The kinds of foreign route :meth:`add_foreign_route` can put in place."""
    foreign_kinds_elsewhere: tuple[str, ...] = ()
    """Kinds whose routes live in a table of their own (AWS: another cluster's route table),
    where this cluster may route the same CIDR without touching them."""
    lists_unmarked_routes: bool = False
    """True for clouds that cannot mark a route as a cluster's (Hetzner networks): foreign
    routes are then listed, but never with a target Node of this cluster."""
    throttle_retry_after: float | None = None
    """Seconds the injected "throttled" fault asks to wait; None: any positive hint passes."""
    settle_seconds: float = 0.0
    """Seconds the cloud needs before a listing shows a change (actions, eventual consistency)."""
    knows_machines: bool = True
    """False for a fake cloud that routes to any name (no machines to look up)."""
    parses_answers: bool = True
    """False where the plugin reads no answer itself (an in-memory fake; the malformed
    answer rule is then skipped, with that reason). SDKs do not validate for you: botocore,
    openstacksdk and google-cloud-compute all read garbage as empty answers or objects."""
    target_cache_seconds: float = 0.0
    """Seconds a listing may resolve targets from the plugin's cache: the suite waits this
    long after removing a machine before it expects the route listed as a blackhole."""
    call_timeout: float = 30.0
    """The suite's own timeout for a call whose answer the cloud loses (loop clock)."""

    # -- hooks ----------------------------------------------------------------------------

    @pytest.fixture
    async def cloud(self) -> object:
        """Start the fake cloud with :attr:`nodes` provisioned; override this fixture."""
        pytest.fail(
            f"{type(self).__name__} defines no `cloud` fixture: start a fake of your cloud with "
            f"machines for {self.nodes} and yield it ({GUIDE}, section 11)"
        )

    def make_provider(self, *, budget: RequestBudget) -> RouteProvider:
        """A new provider over the ``cloud`` fixture's cloud, its factory handed ``budget``."""
        pytest.fail(f"implement make_provider(budget=...) in {type(self).__name__}")

    def requests_made(self) -> int:
        """HTTP requests the fake cloud has received from the plugin so far."""
        pytest.fail(
            f"implement requests_made() in {type(self).__name__}: count the requests your fake "
            "cloud receives, so the suite can check every one spent the budget"
        )

    async def inject_fault(self, kind: str, *, after: int = 0) -> None:
        """Make the plugin's next request fail as ``kind`` (see :data:`FAULT_KINDS`); with
        ``after``, let that many requests through first (the suite fails each request of a
        listing, a create and a delete in turn: later pages, look-ups, polls).

        ``"throttled"``: 429-style, asking to wait :attr:`throttle_retry_after`;
        ``"transient"``: a 5xx without ``Retry-After``, or a lock; ``"terminal"``: a
        403-style refusal; ``"lost-answer"``: the next *write* is carried out, but its answer
        never arrives (the connection drops, or the call hangs until the suite's timeout).
        """
        raise NotImplementedError

    async def inject_malformed_answer(self) -> str:
        """Make the answer to the plugin's next listing request carry one value of the
        wrong shape (a string where a route object belongs, ``"two"`` where a number does);
        return the field's name or path as the plugin's error should name it.

        Raise ``NotImplementedError`` only where the plugin never reads an answer itself
        (an in-memory fake): say so in :attr:`parses_answers`.
        """
        raise NotImplementedError

    async def add_foreign_route(self, kind: str, destination: str) -> None:
        """Put a route to ``destination`` in place that this cluster did not make.

        ``"other-cluster"``: made by another cluster (another cluster name) where your
        plugin reads; ``"operator"``: made by a person, unmarked, to something that is not
        one of :attr:`nodes` (a gateway, an appliance), in the table your plugin writes.
        """
        raise NotImplementedError

    async def cloud_routes(self) -> Collection[tuple[str, str]]:
        """Every route of the cloud where the plugin reads or writes, read from the fake:
        (destination, a description of its target and owner)."""
        raise NotImplementedError

    async def remove_node(self, node: str) -> None:
        """The machine of ``node`` is gone (deleted or terminated), as the cloud shows it."""
        raise NotImplementedError

    # -- fixtures built on the hooks ------------------------------------------------------

    @pytest.fixture
    def budget(self, cloud: object) -> CountingBudget:
        """The budget handed to the plugin: it counts spends against the cloud's requests."""
        del cloud
        return CountingBudget(self.requests_made)

    @pytest.fixture
    async def provider(self, cloud: object, budget: CountingBudget) -> AsyncIterator[RouteProvider]:
        """The provider under test; every instance made in a test is closed after it."""
        del cloud
        self._made: list[RouteProvider] = []
        yield self.fresh_provider(budget)
        for made in self._made:
            await made.aclose()

    # -- helpers for the rules ------------------------------------------------------------

    def fresh_provider(self, budget: CountingBudget) -> RouteProvider:
        """Another provider instance over the same cloud (a restart), closed after the test."""
        made = self.make_provider(budget=budget)
        self._made.append(made)
        return made

    def route(self, node: str, cidr: str) -> Route:
        """The route routectl would ask for: target, CIDR and the node's addresses."""
        return Route(
            target_node=node,
            destination_cidr=cidr,
            target_node_addresses=(NodeAddress(type="InternalIP", address="10.0.0.10"),),
        )

    async def settle(self) -> None:
        """Give the cloud :attr:`settle_seconds` to show what was written."""
        if self.settle_seconds:
            await asyncio.sleep(self.settle_seconds)

    async def listed(self, provider: RouteProvider) -> list[Route]:
        """The provider's listing after the cloud settled; every entry a well-typed Route
        (routectl leaves any other out of its listings, and so never changes it)."""
        await self.settle()
        routes = list(await provider.list_routes())
        for route in routes:
            why = malformed(route)
            assert why is None, (
                f"list_routes() returned {route!r}: {why}; every field of a Route has its "
                f"declared type ({GUIDE}, section 1)"
            )
        return routes

    async def need_fault(self, kind: str) -> None:
        """Inject ``kind``, skipping where the class says the cloud cannot make it."""
        if kind not in self.fault_kinds:
            pytest.skip(f"{type(self).__name__}.fault_kinds leaves out {kind!r}")
        try:
            await self.inject_fault(kind)
        except NotImplementedError:
            pytest.fail(
                f"implement inject_fault({kind!r}) in {type(self).__name__}, or leave {kind!r} "
                "out of fault_kinds if your cloud can never fail that way"
            )

    async def need_foreign(self, kind: str, destination: str) -> None:
        """Put a foreign route of ``kind`` in place, failing clearly if the hook is missing."""
        try:
            await self.add_foreign_route(kind, destination)
        except NotImplementedError:
            pytest.fail(
                f"implement add_foreign_route({kind!r}, destination) in {type(self).__name__} "
                "(or leave the kind out of foreign_kinds)"
            )

    async def snapshot(self) -> set[tuple[str, str]]:
        """:meth:`cloud_routes`, failing clearly if the hook is missing."""
        try:
            return {(canonical(d), what) for d, what in await self.cloud_routes()}
        except NotImplementedError:
            pytest.fail(
                f"implement cloud_routes() in {type(self).__name__}: read every route from "
                "your fake directly, so the suite can see what the plugin changed"
            )

    async def lose_node(self, node: str) -> None:
        """:meth:`remove_node`, failing clearly if the hook is missing; then the time the
        plugin's target cache may take to notice (:attr:`target_cache_seconds`)."""
        try:
            await self.remove_node(node)
        except NotImplementedError:
            pytest.fail(f"implement remove_node(node) in {type(self).__name__}")
        if self.target_cache_seconds:
            await asyncio.sleep(self.target_cache_seconds)

    def pytest_generate_tests(self, metafunc: Any) -> None:
        """Run each foreign-route rule once per kind the class declares."""
        if "foreign_kind" in metafunc.fixturenames:
            kinds = metafunc.cls.foreign_kinds
            metafunc.parametrize("foreign_kind", kinds or ["none"], ids=kinds or ["none"])

    def shares_table(self, kind: str) -> bool:
        """Whether a foreign route of ``kind`` lives in the table this cluster writes."""
        return kind not in self.foreign_kinds_elsewhere

    @staticmethod
    def skip_without_foreign(kind: str) -> None:
        """Foreign-route rules are skipped only for a class that declares no kind at all."""
        if kind == "none":
            pytest.skip("foreign_kinds is empty")

    def check_holder(
        self, exc: RouteAlreadyExistsError, *, cidr: str, node: str | None, scene: str
    ) -> None:
        """``exc`` names the route holding ``cidr``: to ``node``, or (None) to no Node of
        this cluster. routectl counts a create done only when the holder is the route it
        asked for, so a missing or wrong holder would mark a Node routed that is not."""
        holder = getattr(exc, "holder", None)
        assert holder is not None and malformed(holder) is None, (
            f"{scene}: create_route raised RouteAlreadyExistsError without a holder ({exc}): "
            "say who holds the destination, RouteAlreadyExistsError(..., holder=<the route, "
            f"as list_routes() would list it>) ({GUIDE}, section 7)"
        )
        assert canonical(holder.destination_cidr) == canonical(cidr), (
            f"{scene}: the holder named, {holder}, is not a route to {cidr} ({GUIDE}, section 7)"
        )
        if node is None:
            assert holder.target_node not in self.nodes, (
                f"{scene}: the holder named, {holder}, claims one of this cluster's Nodes, but "
                "the destination is held by a route this cluster did not make: say who holds "
                "it (target_node='' for no Node of this cluster), or raise "
                f"ProviderTerminalError naming it ({GUIDE}, section 6)"
            )
        else:
            assert holder.target_node == node and not holder.blackhole, (
                f"{scene}: the holder named, {holder}, is not the route to {node} that holds "
                f"{cidr}: name the route as list_routes() lists it ({GUIDE}, section 7)"
            )

    @staticmethod
    async def bounded(call: Any, seconds: float) -> BaseException | None:
        """Await ``call`` for at most ``seconds``; what it raised, if anything."""
        try:
            async with asyncio.timeout(seconds):
                await call
        except Exception as exc:  # noqa: BLE001 -- the suite inspects whatever happened
            return exc
        return None

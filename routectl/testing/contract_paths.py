"""The contract's rules for every path a call can take, not only the first request's.

* an error on *any* request of a listing, a create or a delete (a later page, a look-up, the
  write itself, a poll) reaches routectl as the error the cloud meant: throttling as
  ``ProviderThrottledError``, a transient failure as a retryable ``ProviderError``, never
  terminal and never "not found";
* a delete whose answer was lost, retried, ends with the route gone and "not found";
* concurrent calls on one provider instance do not disturb each other;
* a call cancelled half-way (routectl's timeouts, shutdown) leaves the cloud with nothing
  unlisted and the instance usable;
* a Node whose machine does not exist yet is a transient error, not a terminal one;
* every spelling of a CIDR Kubernetes accepts (leading zeros, host bits, IPv6 forms) is
  routed, listed and deleted as the same route;
* a listing's cost is bounded: routes whose target is gone cost no extra requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect

import pytest

from routectl.cidr import canonical
from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.provider import RouteProvider
from routectl.testing.contract_base import GUIDE, ContractBase, keys
from routectl.testing.contract_budget import CountingBudget

MAX_REQUESTS_PER_CALL = 12
"""Requests of one call the per-request rule walks through (a listing's pages, look-ups)."""
SPELLINGS_V4 = ("10.244.01.0/24", "010.244.001.000/24", "10.244.1.7/24")
"""How Kubernetes may spell 10.244.1.0/24 in a Node's podCIDRs (ParseCIDRSloppy)."""
SPELLINGS_V6 = (
    "FD00:10:244:1::/64",
    "fd00:0010:0244:0001:0000:0000:0000:0000/64",
    "fd00:10:244:1:0:0:0:0/64",
)
"""Spellings of fd00:10:244:1::/64."""


class _Parked(CountingBudget):
    """A budget that parks the call at one spend, so the suite can cancel it there."""

    def __init__(self, inner: CountingBudget, park_at: int) -> None:
        super().__init__(inner.requests)
        self._inner = inner
        self._park_at = park_at
        self.parked = asyncio.Event()
        self.armed = True
        """Parks only while armed (the call under test), never a later call."""

    async def spend(self, operation: str = "request") -> None:
        await self._inner.spend(operation)
        if self.armed and self._inner.spent == self._park_at:
            self.parked.set()
            await asyncio.Event().wait()  # until cancelled


class PathRules(ContractBase):
    """Errors on every request, lost deletes, concurrency, cancellation, spellings, cost."""

    async def fault_after(self, kind: str, after: int) -> None:
        """Make the request after the next ``after`` fail as ``kind``, or fail clearly."""
        if kind not in self.fault_kinds:
            pytest.skip(f"{type(self).__name__}.fault_kinds leaves out {kind!r}")
        if "after" not in inspect.signature(self.inject_fault).parameters:
            pytest.fail(
                f"inject_fault() of {type(self).__name__} takes no `after`: let that many "
                "requests through before the injected fault, so the suite can fail each "
                f"request of a call in turn ({GUIDE}, section 11)"
            )
        await self.inject_fault(kind, after=after)

    async def _scene(self, provider: RouteProvider, operation: str) -> None:
        """Routes to list (more than one page's worth, where pages are small) and delete."""
        del operation
        await provider.create_route(self.route(self.nodes[1], self.cidr_v4_other), name_hint="b")
        await provider.create_route(self.route(self.nodes[1], "10.244.5.0/24"), name_hint="b")
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="a")
        await self.settle()

    async def _run(self, provider: RouteProvider, operation: str) -> None:
        if operation == "list":
            await provider.list_routes()
        elif operation == "create":
            await provider.create_route(
                self.route(self.nodes[0], self.cidr_v6_or_v4), name_hint="c"
            )
        else:
            (route,) = [r for r in await self.listed(provider) if r.target_node == self.nodes[0]]
            await provider.delete_route(route)

    @property
    def cidr_v6_or_v4(self) -> str:
        """A CIDR no scene routes: the third IPv4 one (creates of IPv6 may be refused)."""
        return "10.244.4.0/24"

    async def _requests_of(
        self, provider: RouteProvider, budget: CountingBudget, operation: str
    ) -> int:
        before = budget.requests()
        if operation == "delete":
            (route,) = [r for r in await self.listed(provider) if r.target_node == self.nodes[0]]
            before = budget.requests()
            await provider.delete_route(route)
        else:
            await self._run(provider, operation)
        return budget.requests() - before

    @pytest.mark.parametrize("operation", ["list", "create", "delete"])
    @pytest.mark.parametrize("kind", ["throttled", "transient"])
    async def test_an_error_on_any_request_of_a_call_keeps_its_meaning(
        self, provider: RouteProvider, budget: CountingBudget, operation: str, kind: str
    ) -> None:
        """Each request of a listing, a create and a delete, failed in turn, fails the call
        with the error the cloud meant: never terminal, never "not found"."""
        await self._scene(provider, operation)
        fresh = self.fresh_provider(budget)
        await fresh.list_routes()  # warm whatever the plugin caches, as a running one has
        count = await self._requests_of(fresh, budget, operation)
        if operation == "delete":
            await fresh.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="a")
        elif operation == "create":
            (made,) = [
                r
                for r in await self.listed(fresh)
                if canonical(r.destination_cidr) == canonical(self.cidr_v6_or_v4)
            ]
            await fresh.delete_route(made)
        await self.settle()
        for index in range(min(count, MAX_REQUESTS_PER_CALL)):
            route_listed = None
            if operation == "delete":
                (route_listed,) = [
                    r for r in await self.listed(fresh) if r.target_node == self.nodes[0]
                ]
            await self.fault_after(kind, index)
            try:
                if route_listed is not None:
                    await fresh.delete_route(route_listed)
                else:
                    await self._run(fresh, operation)
            except ProviderError as exc:
                expected = ProviderThrottledError if kind == "throttled" else ProviderError
                wrong = isinstance(exc, ProviderTerminalError | RouteNotFoundError) or not (
                    isinstance(exc, expected)
                )
                assert not wrong, (
                    f"a {kind} failure of request {index + 1} of {count} of a {operation} "
                    f"surfaced as {type(exc).__name__}: {exc}; map every request's errors the "
                    f"same way, pages, look-ups and polls included ({GUIDE}, section 5)"
                )
            else:
                raise AssertionError(
                    f"a {kind} failure of request {index + 1} of {count} of a {operation} was "
                    f"swallowed: the call succeeded ({GUIDE}, section 5)"
                )
            await self.settle()
            await self._restore(fresh, operation)

    async def _restore(self, provider: RouteProvider, operation: str) -> None:
        """Put the scene back after a failed call (it may have been carried out)."""
        listed = await self.listed(provider)
        if operation == "create":
            for route in listed:
                if canonical(route.destination_cidr) == canonical(self.cidr_v6_or_v4):
                    await provider.delete_route(route)
        elif operation == "delete" and self.nodes[0] not in {r.target_node for r in listed}:
            await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="a")
        await self.settle()

    async def test_a_delete_whose_answer_was_lost_is_done_when_retried(
        self, provider: RouteProvider
    ) -> None:
        """A delete the cloud carried out but whose answer was lost, retried, says "not
        found" (routectl counts it done), and the route is gone."""
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        (route,) = await self.listed(provider)
        await self.need_fault("lost-answer")
        await self.bounded(provider.delete_route(route), self.call_timeout)
        await self.settle()
        try:
            await provider.delete_route(route)
        except RouteNotFoundError:
            pass
        except ProviderError as exc:
            raise AssertionError(
                f"retrying a delete whose answer was lost raised {type(exc).__name__}: {exc}; "
                "the route is gone, so raise RouteNotFoundError (check the cloud, not what "
                f"this instance remembers) ({GUIDE}, section 7)"
            ) from exc
        assert keys(await self.listed(provider)) == set(), "the retried delete left the route"

    async def test_concurrent_calls_on_one_instance_do_not_disturb_each_other(
        self, provider: RouteProvider
    ) -> None:
        """routectl calls one instance concurrently: creates and listings at once all work."""
        a, b = self.nodes
        await asyncio.gather(
            provider.create_route(self.route(a, self.cidr_v4), name_hint="uid-a"),
            provider.create_route(self.route(b, self.cidr_v4_other), name_hint="uid-b"),
            provider.create_route(self.route(a, self.cidr_v6_or_v4), name_hint="uid-a"),
        )
        await self.settle()
        want = {
            (a, canonical(self.cidr_v4)),
            (b, canonical(self.cidr_v4_other)),
            (a, canonical(self.cidr_v6_or_v4)),
        }
        listings = await asyncio.gather(*(provider.list_routes() for _ in range(3)))
        for listed in listings:
            assert keys(listed) >= want, (
                f"three concurrent listings gave {[sorted(keys(x)) for x in listings]}, not "
                f"{sorted(want)} each: keep no per-call state (a page cursor, a current "
                f"request) on the instance ({GUIDE}, section 9)"
            )

    async def test_a_call_cancelled_half_way_leaves_cloud_and_instance_usable(
        self, provider: RouteProvider, budget: CountingBudget
    ) -> None:
        """A create cancelled between two of its requests leaves no route the next listing
        does not show, and the same instance creates and lists normally afterwards."""
        route = self.route(self.nodes[0], self.cidr_v4)
        counting = CountingBudget(budget.requests)
        probe = self.fresh_provider(counting)
        await probe.create_route(self.route(self.nodes[1], self.cidr_v4_other), name_hint="b")
        steps = counting.spent
        for park_at in range(1, steps + 1):
            parked = _Parked(budget, park_at + budget.spent)
            instance = self.fresh_provider(parked)
            call = asyncio.ensure_future(instance.create_route(route, name_hint="uid-a"))
            waiter = asyncio.ensure_future(parked.parked.wait())
            await asyncio.wait([call, waiter], return_when=asyncio.FIRST_COMPLETED)
            parked.armed = False
            waiter.cancel()
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError, ProviderError):
                await call
            await self.settle()
            listed = keys(await self.listed(instance))
            made = {e for e in await self.snapshot() if e[0] == canonical(self.cidr_v4)}
            assert not made or (self.nodes[0], canonical(self.cidr_v4)) in listed, (
                f"a create cancelled before request {park_at} left {sorted(made)}, which the "
                f"next listing does not show as this cluster's: make and mark a route in one "
                f"request ({GUIDE}, section 7)"
            )
            failed = await self.bounded(
                instance.create_route(route, name_hint="uid-a"), self.call_timeout
            )
            if isinstance(failed, RouteAlreadyExistsError):
                self.check_holder(failed, cidr=self.cidr_v4, node=self.nodes[0], scene="a retry")
            elif failed is not None:
                exc = failed
                raise AssertionError(
                    f"after a create was cancelled before request {park_at}, the same "
                    f"instance failed the next create: {type(exc).__name__}: {exc}; release "
                    f"what a call holds in `finally`, cancellation included ({GUIDE}, section 5)"
                ) from exc
            await self.settle()
            for held in await self.listed(instance):
                if held.target_node == self.nodes[0]:
                    await instance.delete_route(held)
            await self.settle()

    async def test_a_node_without_a_machine_is_a_transient_error(
        self, provider: RouteProvider
    ) -> None:
        """A Node whose machine does not exist (yet) fails the create transiently and makes
        nothing: the machine may show up seconds later."""
        if not self.knows_machines:
            pytest.skip(f"{type(self).__name__}.knows_machines is False")
        before = await self.snapshot()
        with pytest.raises(ProviderError) as caught:
            await provider.create_route(
                self.route("contract-node-without-machine", self.cidr_v4), name_hint="uid-x"
            )
        assert not isinstance(caught.value, ProviderTerminalError | RouteAlreadyExistsError), (
            f"a create for a Node without a machine raised {type(caught.value).__name__}: "
            "raise a plain ProviderError, the machine may show up a few seconds later and "
            f"routectl retries ({GUIDE}, section 5)"
        )
        assert await self.snapshot() == before, "a create for a Node without a machine wrote"

    @pytest.mark.parametrize("spelling", [*SPELLINGS_V4, *SPELLINGS_V6])
    async def test_every_spelling_kubernetes_accepts_is_one_route(
        self, provider: RouteProvider, spelling: str
    ) -> None:
        """A pod CIDR spelled with leading zeros, host bits or an IPv6 long form is routed,
        listed as that CIDR, and deleted like any other."""
        if ":" in spelling and not self.supports_ipv6:
            pytest.skip("supports_ipv6 is False")
        node = self.nodes[0]
        try:
            await provider.create_route(self.route(node, spelling), name_hint="uid-a")
        except ProviderError as exc:
            raise AssertionError(
                f"create_route({spelling!r}) raised {type(exc).__name__}: {exc}; Kubernetes "
                f"accepts this spelling: send routectl.cidr.canonical() of it ({GUIDE}, "
                "section 8)"
            ) from exc
        listed = await self.listed(provider)
        assert keys(listed) == {(node, canonical(spelling))}, (
            f"after create_route({spelling!r}) list_routes() gave {listed}"
        )
        await provider.delete_route(listed[0])
        assert keys(await self.listed(provider)) == set(), (
            f"deleting the listed route of {spelling!r} left it: compare CIDRs with "
            f"routectl.cidr.canonical() ({GUIDE}, section 8)"
        )

    async def test_routes_whose_target_is_gone_cost_a_listing_nothing_extra(
        self, provider: RouteProvider, budget: CountingBudget
    ) -> None:
        """A listing costs as many requests with its targets gone as with them there: no
        look-up per unknown target (hccm #482 spent Hetzner's hourly budget that way)."""
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        await provider.create_route(
            self.route(self.nodes[1], self.cidr_v4_other), name_hint="uid-b"
        )
        await self.settle()
        await provider.list_routes()
        before = budget.requests()
        await provider.list_routes()
        known = budget.requests() - before
        for node in self.nodes:
            await self.lose_node(node)
        await self.listed(provider)  # the first listing may refresh what it caches
        before = budget.requests()
        await provider.list_routes()
        gone = budget.requests() - before
        assert gone <= known, (
            f"a listing cost {known} requests with both targets there and {gone} with both "
            f"gone: resolve targets with one look-up per listing, never one per unknown "
            f"route ({GUIDE}, section 6)"
        )

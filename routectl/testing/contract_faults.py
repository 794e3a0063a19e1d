"""The contract's rules for failures, restarts and the request budget.

* a cloud failure reaches routectl as the matching error of ``routectl.errors``; throttling
  carries the cloud's retry hint as ``retry_after``; an answer of the wrong shape is one
  ``ProviderError`` naming the field;
* a create whose answer was lost (a timeout, a dropped connection) but that the cloud
  carried out is listed as this cluster's by the next listing, and creating it again
  leaves exactly one route: nothing leaks;
* a fresh provider instance (a restart, a failover) lists exactly the routes, Node names
  and route names the instance that made them lists;
* every HTTP request spends the budget the factory was handed, before it is sent.
"""

from __future__ import annotations

import contextlib
import math

import pytest

from routectl.cidr import canonical
from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import BatchRouteProvider, RouteProvider, batch_capable, replace_capable
from routectl.testing.contract_base import GUIDE, ContractBase, keys
from routectl.testing.contract_budget import CountingBudget


def _sorted(routes: list[Route]) -> list[Route]:
    return sorted(routes, key=lambda r: (canonical(r.destination_cidr), r.target_node, r.name))


class FaultRules(ContractBase):
    """Errors, lost answers, restarts and the budget."""

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
        await self.need_fault(kind)
        try:
            await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="u")
        except ProviderError as exc:
            assert isinstance(exc, expected), (
                f"a {kind} failure surfaced as {type(exc).__name__}: map it to "
                f"{expected.__name__} ({GUIDE}, section 5)"
            )
            if kind == "transient":
                assert not isinstance(exc, ProviderTerminalError), (
                    "a transient failure surfaced as terminal: routectl would not retry it"
                )
        else:
            raise AssertionError(f"an injected {kind} failure did not fail the call")

    async def test_throttling_carries_the_clouds_retry_hint(self, provider: RouteProvider) -> None:
        """Throttling becomes ProviderThrottledError with the cloud's hint as retry_after."""
        await self.need_fault("throttled")
        with pytest.raises(ProviderThrottledError) as caught:
            await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="u")
        hint = caught.value.retry_after
        assert hint is not None and math.isfinite(hint) and hint > 0, (
            f"throttling carried retry_after={hint!r}: compute it from what the cloud sent "
            f"(Retry-After, rate-limit headers), about 1s without a hint ({GUIDE}, section 5)"
        )
        if self.throttle_retry_after is not None:
            assert hint == pytest.approx(self.throttle_retry_after, abs=0.5), (
                f"the cloud asked to wait {self.throttle_retry_after:g}s, the plugin said "
                f"{hint:g}s: pass the cloud's hint through ({GUIDE}, section 5)"
            )

    async def test_a_malformed_answer_is_one_error_naming_the_field(
        self, provider: RouteProvider
    ) -> None:
        """An answer with a value of the wrong shape fails the call with one ProviderError
        naming the field, never an AttributeError or ValueError from inside the plugin."""
        if not self.parses_answers:
            pytest.skip(f"{type(self).__name__}.parses_answers is False")
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        await self.settle()
        try:
            field = await self.inject_malformed_answer()
        except NotImplementedError:
            pytest.fail(
                f"implement inject_malformed_answer() in {type(self).__name__}: answer the "
                "next listing request with one value of the wrong shape"
            )
        try:
            await provider.list_routes()
        except ProviderError as exc:
            assert field in str(exc), (
                f"a malformed answer raised {type(exc).__name__}({exc}), which does not name "
                f"{field!r}: say which field was wrong ({GUIDE}, section 5)"
            )
        except Exception as exc:
            raise AssertionError(
                f"a malformed answer ({field} of the wrong shape) raised "
                f"{type(exc).__name__}: {exc}; check the shape of what the cloud answers and "
                f"raise one ProviderError naming the field, e.g. with routectl.answers.Answer "
                f"({GUIDE}, section 5)"
            ) from exc
        else:
            raise AssertionError(
                f"a listing whose answer had {field} of the wrong shape succeeded: a route "
                f"left out of a listing may be created over; raise ProviderError ({GUIDE}, "
                "section 5)"
            )
        assert (self.nodes[0], canonical(self.cidr_v4)) in keys(await self.listed(provider)), (
            "after the malformed answer the next listing did not show the route again"
        )

    async def test_a_lost_create_is_adopted_by_the_next_listing(
        self, provider: RouteProvider
    ) -> None:
        """A create the cloud carried out but whose answer was lost is listed as ours next."""
        await self.need_fault("lost-answer")
        route = self.route(self.nodes[0], self.cidr_v4)
        await self.bounded(provider.create_route(route, name_hint="uid-a"), self.call_timeout)
        listed = await self.listed(provider)
        assert (self.nodes[0], canonical(self.cidr_v4)) in keys(listed), (
            f"the cloud made {self.cidr_v4} -> {self.nodes[0]} but lost the answer, and the next "
            f"listing gave {listed}: mark a route as this cluster's in the same request that "
            f"makes it, so a lost answer never leaks a route ({GUIDE}, section 7)"
        )
        try:
            await provider.create_route(route, name_hint="uid-a")
        except RouteAlreadyExistsError as exc:
            self.check_holder(
                exc, cidr=self.cidr_v4, node=self.nodes[0], scene="retrying a lost create"
            )
        entries = [e for e in await self.snapshot() if e[0] == canonical(self.cidr_v4)]
        assert len(entries) == 1, f"retrying the lost create left {entries}"

    async def test_a_fresh_instance_lists_the_same_routes(
        self, provider: RouteProvider, budget: CountingBudget
    ) -> None:
        """A restarted plugin maps the cloud's routes to the same Node and route names."""
        await provider.create_route(self.route(self.nodes[0], self.cidr_v4), name_hint="uid-a")
        await provider.create_route(
            self.route(self.nodes[1], self.cidr_v4_other), name_hint="uid-b"
        )
        before = _sorted(await self.listed(provider))
        after = _sorted(list(await self.fresh_provider(budget).list_routes()))
        assert after == before, (
            f"the instance that made the routes lists {before}, a fresh instance lists {after}: "
            "derive Node names from the cloud alone (tags, names, addresses), never from what "
            f"this process remembers; a restart would delete and re-create every route ({GUIDE}, "
            "section 6)"
        )

    async def test_every_request_spends_the_budget(
        self, provider: RouteProvider, budget: CountingBudget
    ) -> None:
        """Every HTTP request, pages and polls included, spends the budget first."""
        await self._busy_workload(provider, budget)
        assert budget.requests() > 0, "the workload sent no request: is requests_made() counting?"
        assert budget.spent == budget.requests(), (
            f"the plugin sent {budget.requests()} requests but spent the budget {budget.spent} "
            "times: take `budget` in your factory and spend it before each request, pages, "
            f"polls and look-ups included ({GUIDE}, section 9)"
        )
        assert not budget.early, (
            "requests went out before the budget was spent: "
            + "; ".join(budget.early[:3])
            + f". Call budget.spend() before every request, not after ({GUIDE}, section 9)"
        )

    async def _busy_workload(self, provider: RouteProvider, budget: CountingBudget) -> None:
        """Exercise every path that may send requests: writes, conflicts, restarts, batches."""
        a, b = self.nodes
        await provider.list_routes()
        await provider.create_route(self.route(a, self.cidr_v4), name_hint="uid-a")
        await provider.create_route(self.route(b, self.cidr_v4_other), name_hint="uid-b")
        with contextlib.suppress(RouteAlreadyExistsError):
            await provider.create_route(self.route(b, self.cidr_v4), name_hint="uid-b")
        listed = await self.listed(provider)
        if self.supports_ipv6:
            await provider.create_route(self.route(a, self.cidr_v6), name_hint="uid-a")
        for route in listed:
            if route.target_node == b:
                await provider.delete_route(route)
                with contextlib.suppress(RouteNotFoundError):
                    await provider.delete_route(route)
        await self.fresh_provider(budget).list_routes()
        if batch_capable(provider):
            await self._batch_workload(provider)
        if replace_capable(provider):
            old = next(r for r in await self.listed(provider) if r.target_node == a)
            await provider.replace_route(old, self.route(b, old.destination_cidr), name_hint="b")
        await self.lose_node(a)
        await self.listed(provider)

    async def _batch_workload(self, provider: BatchRouteProvider) -> None:
        a, b = self.nodes
        mine = [r for r in await self.listed(provider) if r.target_node == a]
        await provider.apply_routes(
            deletes=mine, creates=[(self.route(b, self.cidr_v4_other), "uid-b")]
        )
        await provider.apply_routes(deletes=[], creates=[(self.route(a, self.cidr_v4), "uid-a")])

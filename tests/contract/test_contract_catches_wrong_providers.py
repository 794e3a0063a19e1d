"""The contract has teeth: each deliberately wrong provider fails it, for its own reason.

Each case runs the whole suite (pytest in-process, the settings the guide gives plugin
authors) against one provider of ``wrong_providers`` and checks that exactly the expected
tests fail, the first of them with a message that tells the author what to fix. The
reference provider passing the same suite (``test_reference_provider_contract``) shows the
failures come from the provider, not from the harness.
"""

from __future__ import annotations

import dataclasses

import pytest

pytest_plugins = ["pytester"]

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
asyncio_default_test_loop_scope = function
filterwarnings = error
"""

FOREIGN = ("other-cluster", "operator")
ANY_REQUEST = "test_an_error_on_any_request_of_a_call_keeps_its_meaning"
CANCELLED = "test_a_call_cancelled_half_way_leaves_cloud_and_instance_usable"


def on_every_request(operation: str) -> set[str]:
    """The per-request rule for ``operation``, once per fault kind."""
    return {f"{ANY_REQUEST}[{kind}-{operation}]" for kind in ("throttled", "transient")}


def each(name: str) -> set[str]:
    """A foreign-route rule's test, once per kind."""
    return {f"{name}[{kind}]" for kind in FOREIGN}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Case:
    """A wrong provider, the tests it must fail, and what the failure of ``checked`` says."""

    provider: str
    fails: set[str]
    checked: str
    says: str
    ipv4_only: bool = False


CASES = [
    Case(
        provider="IssueProvider",
        checked="test_create_over_another_nodes_route_raises_already_exists",
        fails={
            "test_create_over_another_nodes_route_raises_already_exists",
            "test_delete_of_a_missing_route_raises_route_not_found",
            "test_delete_of_a_route_now_leading_elsewhere_raises_not_found",
        }
        | each("test_create_never_takes_over_a_foreign_route")
        | each("test_delete_never_removes_a_foreign_route")
        | on_every_request("delete"),
        says="raise RouteAlreadyExistsError and leave the route alone",
    ),
    Case(
        provider="OverwritesOnCreate",
        checked="test_create_over_another_nodes_route_raises_already_exists",
        fails={"test_create_over_another_nodes_route_raises_already_exists"}
        | each("test_create_never_takes_over_a_foreign_route"),
        says="raise RouteAlreadyExistsError and leave the route alone",
    ),
    Case(
        provider="DeletesForeignRoutes",
        checked="test_delete_of_a_route_now_leading_elsewhere_raises_not_found",
        fails={"test_delete_of_a_route_now_leading_elsewhere_raises_not_found"}
        | each("test_delete_never_removes_a_foreign_route"),
        says="delete only the route you were given",
    ),
    Case(
        provider="HidesMissingRoutes",
        checked="test_delete_of_a_missing_route_raises_route_not_found",
        fails={
            "test_delete_of_a_missing_route_raises_route_not_found",
            "test_delete_of_a_route_now_leading_elsewhere_raises_not_found",
        },
        says="raise RouteNotFoundError",
    ),
    Case(
        provider="DropsRetryHints",
        checked="test_throttling_carries_the_clouds_retry_hint",
        fails={"test_throttling_carries_the_clouds_retry_hint"},
        says="pass the cloud's hint through",
    ),
    Case(
        provider="AsksAboutIPv6",
        checked="test_unsupported_family_is_refused_without_a_request",
        fails={"test_unsupported_family_is_refused_without_a_request"},
        says="refuse it before any API call",
        ipv4_only=True,
    ),
    Case(
        provider="ListsNoBlackholes",
        checked="test_blackholes_are_listed_as_blackholes",
        fails={"test_blackholes_are_listed_as_blackholes"},
        says="target_node='' and blackhole=True",
    ),
    Case(
        provider="ListsNoneForGoneMachines",
        checked="test_blackholes_are_listed_as_blackholes",
        fails={
            "test_blackholes_are_listed_as_blackholes",
            "test_routes_whose_target_is_gone_cost_a_listing_nothing_extra",
        },
        says="every field of a Route has its declared type",
    ),
    Case(
        provider="RemembersNodeNames",
        checked="test_a_fresh_instance_lists_the_same_routes",
        fails={
            "test_a_fresh_instance_lists_the_same_routes",
            "test_a_lost_create_is_adopted_by_the_next_listing",
            CANCELLED,
        }
        | on_every_request("delete"),
        says="derive Node names from the cloud alone",
    ),
    Case(
        provider="MarksAfterCreating",
        checked="test_a_lost_create_is_adopted_by_the_next_listing",
        fails={"test_a_lost_create_is_adopted_by_the_next_listing", CANCELLED},
        says="mark a route as this cluster's in the same request",
    ),
    Case(
        provider="UnpacedPages",
        checked="test_every_request_spends_the_budget",
        fails={"test_every_request_spends_the_budget"},
        says="spend it before each request, pages",
    ),
    Case(
        provider="SpendsAfterSending",
        checked="test_every_request_spends_the_budget",
        fails={"test_every_request_spends_the_budget"},
        says="requests went out before the budget was spent",
    ),
    Case(
        provider="BatchHidesFailures",
        checked="test_batch_reports_each_failed_route",
        fails={"test_batch_reports_each_failed_route"}
        | each("test_batch_leaves_foreign_routes_alone"),
        says="report each failure by its index",
    ),
    Case(
        provider="ReplacesBlindly",
        checked="test_replace_of_a_route_now_leading_elsewhere_raises_not_found",
        fails={"test_replace_of_a_route_now_leading_elsewhere_raises_not_found"}
        | each("test_replace_never_touches_foreign_routes"),
        says="check that ``old`` still holds the CIDR",
    ),
    Case(
        provider="AlreadyExistsForForeign",
        checked="test_create_never_takes_over_a_foreign_route[operator]",
        fails=each("test_create_never_takes_over_a_foreign_route"),
        says="say who holds the destination",
    ),
    Case(
        provider="ClaimsForeignRoutesAsOurs",
        checked="test_create_never_takes_over_a_foreign_route[other-cluster]",
        fails=each("test_create_never_takes_over_a_foreign_route"),
        says="claims one of this cluster's Nodes",
    ),
    Case(
        provider="TrustsAnswers",
        checked="test_a_malformed_answer_is_one_error_naming_the_field",
        fails={"test_a_malformed_answer_is_one_error_naming_the_field"},
        says="a route left out of a listing may be created over",
    ),
    Case(
        provider="ThrottleIsTerminalOnLaterPages",
        checked=f"{ANY_REQUEST}[throttled-list]",
        fails={f"{ANY_REQUEST}[throttled-list]", f"{ANY_REQUEST}[throttled-delete]"},
        says="map every request's errors the same way",
    ),
    Case(
        provider="DeleteFailuresAreNotFound",
        checked=f"{ANY_REQUEST}[transient-delete]",
        fails=on_every_request("delete"),
        says="surfaced as RouteNotFoundError",
    ),
    Case(
        provider="ForgetsLostDeletes",
        checked="test_a_delete_whose_answer_was_lost_is_done_when_retried",
        fails={"test_a_delete_whose_answer_was_lost_is_done_when_retried"},
        says="check the cloud, not what this instance remembers",
    ),
    Case(
        provider="SharesPageCursor",
        checked="test_concurrent_calls_on_one_instance_do_not_disturb_each_other",
        fails={"test_concurrent_calls_on_one_instance_do_not_disturb_each_other"},
        says="keep no per-call state",
    ),
    Case(
        provider="StuckAfterCancel",
        checked=CANCELLED,
        fails={CANCELLED},
        says="release what a call holds in `finally`",
    ),
    Case(
        provider="NoMachineIsTerminal",
        checked="test_a_node_without_a_machine_is_a_transient_error",
        fails={"test_a_node_without_a_machine_is_a_transient_error"},
        says="the machine may show up a few seconds later",
    ),
    Case(
        provider="SendsCidrAsGiven",
        checked="test_every_spelling_kubernetes_accepts_is_one_route[10.244.01.0/24]",
        fails={
            f"test_every_spelling_kubernetes_accepts_is_one_route[{spelling}]"
            for spelling in (
                "10.244.01.0/24",
                "010.244.001.000/24",
                "10.244.1.7/24",
                "FD00:10:244:1::/64",
                "fd00:0010:0244:0001:0000:0000:0000:0000/64",
                "fd00:10:244:1:0:0:0:0/64",
            )
        },
        says="Kubernetes accepts this spelling",
    ),
    Case(
        provider="LooksUpEachGoneMachine",
        checked="test_routes_whose_target_is_gone_cost_a_listing_nothing_extra",
        fails={"test_routes_whose_target_is_gone_cost_a_listing_nothing_extra"},
        says="never one per unknown route",
    ),
    Case(
        provider="ListsForeignRoutes",
        checked="test_foreign_routes_are_not_listed_as_ours[operator]",
        fails=each("test_foreign_routes_are_not_listed_as_ours"),
        says="list only routes marked as this cluster's",
    ),
]


def contract_module() -> str:
    """One test class per case, each running the whole contract on its provider."""
    lines = [
        "from tests.contract.shared_cloud_contract import SharedCloudContract",
        "from tests.contract import wrong_providers",
    ]
    for case in CASES:
        lines += [
            f"class Test{case.provider}(SharedCloudContract):",
            f"    provider_class = wrong_providers.{case.provider}",
            f"    ipv4_only = {case.ipv4_only}",
        ]
    return "\n".join(lines) + "\n"


_RUN: dict[str, dict[str, str]] = {}
"""The one run's results, shared by the cases (the contract runs once for all of them)."""


@pytest.fixture
def failures(pytester: pytest.Pytester) -> dict[str, dict[str, str]]:
    """Run the contract on every case once: provider -> failed test name -> failure text."""
    if _RUN:
        return _RUN
    pytester.makeini(INI)
    pytester.makepyfile(test_wrong=contract_module())
    recorder = pytester.inline_run("-p", "no:cacheprovider", "-p", "no:timeout")
    reports = recorder.getreports("pytest_runtest_logreport")
    assert not [r for r in reports if r.failed and r.when != "call"], "the harness broke"
    _RUN.update({case.provider: {} for case in CASES})
    for report in reports:
        if report.failed:
            _, cls, test = report.nodeid.split("::", 2)
            _RUN[cls.removeprefix("Test")][test] = report.longreprtext
    return _RUN


@pytest.mark.parametrize("case", CASES, ids=[c.provider for c in CASES])
@pytest.mark.slow
def test_wrong_provider_fails_the_contract_for_its_reason(
    failures: dict[str, dict[str, str]], case: Case
) -> None:
    """Exactly the expected rules fail, and the failure tells the author what to fix."""
    failed = failures[case.provider]
    assert set(failed) == case.fails
    assert case.says in " ".join(failed[case.checked].split()), failed[case.checked]

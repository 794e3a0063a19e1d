"""NodeStatus: conditions written only where they change, Events, problems reported once."""

from __future__ import annotations

import datetime

import pytest

from routectl.errors import KubeError, ProviderTerminalError
from routectl.kube.informer import NodeStore
from routectl.kube.node_status import NodeStatus, go_condition
from routectl.model import Condition, NodeView, Route
from routectl.plan.reconcile import CONDITION_ROUTE_CREATED, Plan, Problem, RouteCreate
from tests.fakes import RecordingKube

NOW = datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.UTC)


def node(name: str, *cidrs: str, condition: Condition | None = None) -> NodeView:
    return NodeView(
        name=name, uid=f"uid-{name}", pod_cidrs=cidrs, addresses=(), network_unavailable=condition
    )


def writer(kube: RecordingKube, *nodes: NodeView) -> tuple[NodeStatus, list[str]]:
    store = NodeStore()
    for n in nodes:
        store.upsert(n)
    counted: list[str] = []
    status = NodeStatus(
        kube=kube,
        nodes=store,
        lease=("kube-system", "routectl"),
        wall_clock=lambda: NOW,
        count_problem=counted.append,
    )
    return status, counted


async def test_conditions_are_written_only_where_status_or_reason_change() -> None:
    """A Node already RouteCreated gets no patch; a new one RouteCreated, a failed one
    NoRouteCreated, both stamped with the wall clock."""
    done = node("done", "10.244.1.0/24", condition=CONDITION_ROUTE_CREATED)
    new, failing = node("new", "10.244.2.0/24"), node("failing", "10.244.3.0/24")
    kube = RecordingKube()
    status, _ = writer(kube, done, new, failing)
    results = [
        await status.write_condition("done", created=True),
        await status.write_condition("new", created=True),
        await status.write_condition("failing", created=False),
        await status.write_condition("unknown", created=True),
    ]
    assert results == [None, None, None, None]
    assert kube.conditions() == {
        "new": ("False", "RouteCreated"),
        "failing": ("True", "NoRouteCreated"),
    }
    (_, patch), *_ = kube.patches
    assert patch["status"]["conditions"][0]["lastTransitionTime"] == "2026-12-01T12:00:00Z"


async def test_a_gone_node_needs_nothing_but_other_failures_are_returned() -> None:
    """404 on the patch is fine (the Node was deleted); a 500 is returned for a retry."""
    kube = RecordingKube()
    kube.fail = {"gone": KubeError("not found", status=404), "sick": KubeError("boom", status=500)}
    a, b = node("gone", "10.244.1.0/24"), node("sick", "10.244.2.0/24")
    status, _ = writer(kube, a, b)
    assert await status.write_condition("gone", created=True) is None
    error = await status.write_condition("sick", created=True)
    assert error is not None
    assert error.status == 500


async def test_failed_create_records_upstreams_event_on_the_node() -> None:
    """FailedToCreateRoute: upstream's message, on the Node, as a Warning."""
    kube = RecordingKube()
    a = node("a", "10.244.1.0/24")
    status, _ = writer(kube, a)
    create = RouteCreate(
        route=Route(target_node="a", destination_cidr="10.244.1.0/24"), name_hint="uid-a"
    )
    await status.create_failed(create, ProviderTerminalError("quota"), 1.5)
    (event,) = kube.events
    assert event["reason"] == "FailedToCreateRoute"
    assert event["type"] == "Warning"
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Node",
        "name": "a",
        "uid": "uid-a",
    }
    assert (
        event["message"]
        == "Could not create route uid-a 10.244.1.0/24 for node a after 1.5s: quota"
    )


@pytest.mark.parametrize("full", [True, False])
async def test_problems_are_reported_once(full: bool) -> None:
    """A problem seen again is not reported again; a scoped plan forgets none it cannot see."""
    kube = RecordingKube()
    a, b = node("a"), node("b")
    status, counted = writer(kube, a, b)
    one = Problem(node="a", reason="InvalidPodCIDR", message="bad")
    two = Problem(node="b", reason="PodCIDRConflict", message="taken")
    await status.report_problems(Plan(problems=(one,)), [a, b], full=True)
    await status.report_problems(Plan(problems=(two,)), [a, b], full=full)
    await status.report_problems(Plan(problems=(one, two)), [a, b], full=True)
    expected = ["InvalidPodCIDR", "PodCIDRConflict"] + (["InvalidPodCIDR"] if full else [])
    assert counted == expected
    assert kube.reasons() == expected


async def test_an_event_that_cannot_be_written_is_not_fatal() -> None:
    """Event writes that fail are logged and dropped; the caller goes on."""
    kube = RecordingKube()
    kube.fail = {"event": KubeError("forbidden", status=403)}
    status, _ = writer(kube, node("a"))
    await status.controller_event(reason="MassDeleteRefused", message="no")
    assert kube.calls["event"] == 1


def test_the_patching_line_prints_the_previous_condition_as_upstream_does() -> None:
    """Go's %+v of a *NodeCondition (the fields routectl keeps), or <nil>: not Python's repr."""
    before = Condition(status="False", reason="CalicoIsUp", message="Calico is running")
    assert go_condition(before) == (
        "&NodeCondition{Type:NetworkUnavailable,Status:False,Reason:CalicoIsUp,"
        "Message:Calico is running,}"
    )
    assert go_condition(None) == "<nil>"

"""Applying a plan: per route (deletes before the creates that replace them) and batched."""

from __future__ import annotations

import asyncio

import pytest

from routectl.cloud.policy import CallPolicy
from routectl.errors import ProviderError, ProviderTerminalError
from routectl.model import Route
from routectl.plan.reconcile import Plan, RouteCreate
from routectl.sync.apply import apply_batch, apply_routes
from routectl.testing import CloudSettings, FakeCloud, FakeProvider, Fault
from tests.fakes import gated

pytestmark = pytest.mark.looptime


def route(node: str, cidr: str) -> Route:
    return Route(target_node=node, destination_cidr=cidr)


def create(node: str, cidr: str, *replaces: Route) -> RouteCreate:
    return RouteCreate(route=route(node, cidr), name_hint=f"uid-{node}", replaces=replaces)


class Failures:
    """Collects the failed creates on_create_done is told of."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.done: list[str] = []

    async def __call__(self, c: RouteCreate, error: ProviderError | None, elapsed: float) -> None:
        self.done.append(c.route.target_node)
        if error is not None:
            self.seen.append((c.route.target_node, type(error).__name__))


async def test_everything_runs_concurrently() -> None:
    """Independent deletes and creates overlap: the whole plan takes about one write."""
    cloud = FakeCloud(CloudSettings(write_latency=1.0))
    for i in range(5):
        cloud.add_route("c", route(f"old{i}", f"10.244.{i}.0/24"))
    stale = tuple(cloud.listing("c"))
    plan = Plan(
        deletes=stale, creates=tuple(create(f"n{i}", f"10.244.{50 + i}.0/24") for i in range(5))
    )
    applied = await apply_routes(
        plan, provider=FakeProvider.over(cloud, "c"), on_create_done=Failures()
    )
    assert len(applied.created) == 5
    assert len(applied.deleted) == 5
    assert applied.changed
    assert cloud.max_in_flight == 10


async def test_a_replacing_create_waits_for_its_delete_and_skips_if_it_failed() -> None:
    """A create whose delete failed is not attempted; the error is counted once."""
    cloud = FakeCloud()
    cloud.add_route("c", route("old", "10.244.1.0/24"))
    (stale,) = cloud.listing("c")
    cloud.fail_next("delete", Fault(error=ProviderError("boom")))
    failures = Failures()
    plan = Plan(deletes=(stale,), creates=(create("new", "10.244.1.0/24", stale),))
    applied = await apply_routes(
        plan, provider=FakeProvider.over(cloud, "c"), on_create_done=failures
    )
    assert cloud.count("create") == 0
    assert [c.route.target_node for c, _ in applied.failed] == ["new"]
    assert [str(e) for e in applied.errors] == ["boom"]
    # no create was attempted: its outcome is a skip, which the caller tells apart
    assert failures.seen == [("new", "CreateSkippedError")]


class SlowFor(FakeProvider):
    """A fake provider whose creates for one node take 30 s longer."""

    def __init__(self, cloud: FakeCloud, node: str) -> None:
        super().__init__(cluster_name="c", options={}, cloud=cloud)
        self.node = node

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Wait first if the route is for the slow node."""
        if route.target_node == self.node:
            await asyncio.sleep(30)
        await super().create_route(route, name_hint=name_hint)


async def test_a_failed_create_is_reported_as_soon_as_known() -> None:
    """on_create_failed hears of a failed create while slower creates still run."""
    cloud = FakeCloud(CloudSettings(write_latency=1.0))
    cloud.fail_next("create", Fault(error=ProviderTerminalError("quota")))
    failures = Failures()
    task = asyncio.create_task(
        apply_routes(
            Plan(creates=(create("fails", "10.244.1.0/24"), create("slow", "10.244.2.0/24"))),
            provider=SlowFor(cloud, "slow"),
            on_create_done=failures,
        )
    )
    await asyncio.sleep(5)
    assert failures.seen == [("fails", "ProviderTerminalError")]
    applied = await task
    assert [c.route.target_node for c in applied.created] == ["slow"]


async def test_batch_reports_each_failed_route() -> None:
    """A batched write reports per route; a whole failed call fails every route of it."""
    cloud = FakeCloud(CloudSettings(whole_table=True, route_quota=1))
    provider = FakeProvider.over(cloud, "c")
    failures = Failures()
    plan = Plan(creates=(create("a", "10.244.1.0/24"), create("b", "10.244.2.0/24")))
    applied = await apply_batch(plan, provider=provider, on_create_done=failures)
    assert [c.route.target_node for c in applied.created] == ["a"]
    assert failures.seen == [("b", "ProviderTerminalError")]
    cloud.fail_next("create", Fault(error=ProviderError("down")))  # a batch with creates
    again = Plan(creates=(create("c", "10.244.3.0/24"),), deletes=tuple(cloud.listing("c")))
    applied = await apply_batch(again, provider=provider, on_create_done=failures)
    assert not applied.changed
    assert len(applied.errors) == 2


async def test_cancelling_the_sync_cancels_every_write_it_planned() -> None:
    """Writes are children of the sync: once it is cancelled, none of them starts."""
    cloud = FakeCloud()
    for i in range(10):
        cloud.add_route("c", route(f"gone{i}", f"10.244.{i}.0/24"))
    provider = gated(FakeProvider.over(cloud, "c"), CallPolicy(qps=1.0, burst=1))
    plan = Plan(
        deletes=tuple(cloud.listing("c")),
        creates=tuple(create(f"n{i}", f"10.244.{50 + i}.0/24") for i in range(10)),
    )
    task = asyncio.create_task(apply_routes(plan, provider=provider, on_create_done=Failures()))
    await asyncio.sleep(3.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    sent = len(cloud.calls)
    assert 0 < sent < 20
    await asyncio.sleep(60)
    assert len(cloud.calls) == sent


async def test_a_replace_capable_cloud_repoints_in_one_write() -> None:
    """A create that replaces one route is one replace call where the provider can."""
    cloud = FakeCloud(CloudSettings(replace=True, write_latency=1.0))
    cloud.add_route("c", route("old", "10.244.1.0/24"))
    (stale,) = cloud.listing("c")
    plan = Plan(deletes=(stale,), creates=(create("new", "10.244.1.0/24", stale),))
    done = Failures()
    applied = await apply_routes(plan, provider=FakeProvider.over(cloud, "c"), on_create_done=done)
    assert [c.operation for c in cloud.calls] == ["replace"]
    assert [(r.target_node, r.destination_cidr) for r in cloud.routes("c")] == [
        ("new", "10.244.1.0/24")
    ]
    assert (applied.deleted, [c.route.target_node for c in applied.created]) == ([stale], ["new"])
    assert done.done == ["new"]
    assert asyncio.get_running_loop().time() == pytest.approx(1.0)


async def test_a_replace_that_finds_the_old_route_gone_creates() -> None:
    """The route to replace is gone already: the new one is created instead."""
    cloud = FakeCloud(CloudSettings(replace=True))
    gone = route("old", "10.244.1.0/24")
    plan = Plan(deletes=(gone,), creates=(create("new", "10.244.1.0/24", gone),))
    await apply_routes(plan, provider=FakeProvider.over(cloud, "c"), on_create_done=Failures())
    assert [c.operation for c in cloud.calls] == ["replace", "create"]
    assert [r.target_node for r in cloud.routes("c")] == ["new"]


async def test_without_the_capability_a_replace_is_a_delete_then_a_create() -> None:
    """Plugins without replace keep delete-then-create."""
    cloud = FakeCloud()
    cloud.add_route("c", route("old", "10.244.1.0/24"))
    (stale,) = cloud.listing("c")
    plan = Plan(deletes=(stale,), creates=(create("new", "10.244.1.0/24", stale),))
    await apply_routes(plan, provider=FakeProvider.over(cloud, "c"), on_create_done=Failures())
    assert [c.operation for c in cloud.calls] == ["delete", "create"]


async def test_one_info_line_per_outcome_with_node_cidr_and_duration(caplog) -> None:
    """Upstream's outcome lines: Created ... after <dur>, Deleted ... after <dur>, and a
    replace says which Node the route went from and to (durations in loop time)."""
    cloud = FakeCloud(CloudSettings(write_latency=1.0))
    cloud.add_route("c", route("gone", "10.244.9.0/24"))
    (stale,) = cloud.listing("c")
    plan = Plan(deletes=(stale,), creates=(create("n1", "10.244.1.0/24"),))
    with caplog.at_level("INFO", logger="routectl.controller"):
        await apply_routes(plan, provider=FakeProvider.over(cloud, "c"), on_create_done=Failures())
    lines = {r.getMessage() for r in caplog.records}
    assert "Created route for node n1 10.244.1.0/24 with hint uid-n1 after 1s" in lines
    assert f"Deleted route {stale.name} 10.244.9.0/24 after 1s" in lines
    created = next(r for r in caplog.records if r.getMessage().startswith("Created route"))
    assert (created.node, created.cidr) == ("n1", "10.244.1.0/24")
    caplog.clear()
    replacing = FakeCloud(CloudSettings(replace=True, write_latency=2.0))
    replacing.add_route("c", route("old", "10.244.1.0/24"))
    (old,) = replacing.listing("c")
    plan = Plan(deletes=(old,), creates=(create("new", "10.244.1.0/24", old),))
    with caplog.at_level("INFO", logger="routectl.controller"):
        await apply_routes(plan, provider=FakeProvider.over(replacing, "c"), on_create_done=Failures())  # fmt: skip
    assert f"Replaced route {old.name} 10.244.1.0/24 of node old with node new after 2s" in {
        r.getMessage() for r in caplog.records
    }


async def test_a_batch_logs_each_route_with_the_batchs_duration(caplog) -> None:
    cloud = FakeCloud(CloudSettings(whole_table=True, write_latency=3.0))
    plan = Plan(creates=(create("n1", "10.244.1.0/24"), create("n2", "10.244.2.0/24")))
    with caplog.at_level("INFO", logger="routectl.controller"):
        await apply_batch(plan, provider=FakeProvider.over(cloud, "c"), on_create_done=Failures())
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Created")]
    assert lines == [
        "Created route for node n1 10.244.1.0/24 with hint uid-n1 after 3s",
        "Created route for node n2 10.244.2.0/24 with hint uid-n2 after 3s",
    ]

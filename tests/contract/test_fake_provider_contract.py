"""FakeProvider passes the provider contract, and its plugin options are validated."""

from __future__ import annotations

from typing import ClassVar

import pytest

from routectl.cloud.policy import CallPolicy
from routectl.errors import (
    ConfigError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import ProviderFactory, RequestBudget, batch_capable, load_factory
from routectl.testing import CloudSettings, FakeCloud, FakeProvider, Fault
from routectl.testing.contract import ProviderContract
from routectl.testing.fake_provider import NOT_A_DEMO, settings_from_options
from tests.fakes import gated

_: ProviderFactory = FakeProvider


@pytest.mark.looptime
class TestFakeProvider(ProviderContract):
    """The contract suite against the in-memory cloud (another cluster's table beside ours)."""

    options: ClassVar[dict[str, str]] = {}
    foreign_kinds: tuple[str, ...] = ("other-cluster",)
    foreign_kinds_elsewhere: tuple[str, ...] = ("other-cluster",)
    throttle_retry_after: float | None = 7.0
    parses_answers = False  # the in-memory cloud hands over Route values: nothing to parse
    knows_machines = False  # it routes to any name
    fake: FakeCloud

    @pytest.fixture
    async def cloud(self) -> FakeCloud:
        """A private in-memory cloud configured by ``options``."""
        self.fake = FakeCloud(settings_from_options(self.options))
        return self.fake

    def make_provider(self, *, budget: RequestBudget) -> FakeProvider:
        """A fake provider of cluster ``contract`` over the shared cloud."""
        return FakeProvider(cluster_name="contract", options={}, cloud=self.fake, budget=budget)

    def requests_made(self) -> int:
        """Every call the cloud served is one request."""
        return self.fake.count()

    async def inject_fault(self, kind: str, *, after: int = 0) -> None:
        """Queue one failure of the requested kind: for the next request (after ``after``),
        or the next write for a lost answer."""
        fault = {
            "throttled": Fault(error=ProviderThrottledError("throttled", retry_after=7.0)),
            "transient": Fault(error=ProviderError("503")),
            "terminal": Fault(error=ProviderTerminalError("forbidden")),
            "lost-answer": Fault(hang_after_success=True),
        }[kind]
        if kind == "lost-answer":
            self.fake.fail_next("write", fault)
        else:
            self.fake.fail_next("*", fault, after=after)

    async def add_foreign_route(self, kind: str, destination: str) -> None:
        """Another cluster's route, in that cluster's table of the same cloud."""
        del kind
        self.fake.add_route("other", Route(target_node="their-node", destination_cidr=destination))

    async def cloud_routes(self) -> list[tuple[str, str]]:
        """Every route of every cluster's table."""
        return [
            (r.destination_cidr, f"{cluster}:{r.target_node}:{r.blackhole}")
            for cluster in self.fake.clusters()
            for r in self.fake.routes(cluster)
        ]

    async def remove_node(self, node: str) -> None:
        """The cloud marks the node's routes as blackholes."""
        self.fake.blackhole_node("contract", node)


class TestFakeProviderWholeTable(TestFakeProvider):
    """The contract holds in whole-table mode too, batched writes included."""

    options: ClassVar[dict[str, str]] = {"whole-table": "true"}


class TestFakeProviderReplace(TestFakeProvider):
    """The contract holds with the replace capability."""

    options: ClassVar[dict[str, str]] = {"replace": "true"}


def test_entry_point_resolves_to_fake_provider() -> None:
    """The plugin loader finds the fake provider by its entry-point name."""
    assert load_factory("fake") is FakeProvider


def test_options_build_the_cloud() -> None:
    """Options configure the private simulated cloud."""
    p = FakeProvider(
        cluster_name="c",
        options={
            "qps": "1",
            "burst": "3",
            "route-quota": "50",
            "enable-node-addresses": "true",
            "demo": "true",
        },
    )
    assert (p.cloud.settings.qps, p.cloud.settings.burst, p.cloud.settings.route_quota) == (
        1.0,
        3,
        50,
    )
    assert p.cloud.settings.enable_node_addresses


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"latency": "1"}, "unknown option(s) latency", id="unknown"),
        pytest.param(
            {"qps": "fast"}, "qps='fast': expected requests per second > 0", id="bad-value"
        ),
        pytest.param(
            {"write-latency": "-1"}, "write-latency='-1': expected seconds >= 0", id="negative"
        ),
        pytest.param({"burst": "0"}, "burst='0': expected an integer >= 1", id="zero-burst"),
        pytest.param({"failure-rate": "nan"}, "failure-rate='nan'", id="nan"),
        pytest.param({"list-latency": "inf"}, "list-latency='inf'", id="infinite"),
        pytest.param(
            {"whole-table": "maybe"}, "whole-table='maybe': expected true or false", id="bool"
        ),
        pytest.param({"endpoint": "localhost:80"}, "expected an http(s) URL", id="endpoint"),
        pytest.param(
            {"endpoint": "http://x", "qps": "1"}, "qps cannot be set with endpoint=", id="both"
        ),
    ],
)
def test_bad_options_fail_clearly(options, message) -> None:
    """Unknown options and bad values raise ConfigError naming them."""
    with pytest.raises(ConfigError) as info:
        FakeProvider(cluster_name="c", options=options)
    assert message in str(info.value)


@pytest.mark.parametrize("options", [{}, {"demo": "false"}, {"qps": "1", "demo": "no"}])
def test_the_in_memory_cloud_refuses_to_start_unless_told_it_is_a_demo(options) -> None:
    """Loaded by name (``--provider=fake``) without ``demo=true``, the in-memory cloud
    refuses to start, saying what it is and how to run it anyway: an install that names it by
    accident never reports routes as programmed that exist nowhere."""
    with pytest.raises(ConfigError) as info:
        FakeProvider(cluster_name="c", options=options)
    assert str(info.value) == NOT_A_DEMO
    assert "--provider-option=demo=true" in NOT_A_DEMO


def test_demo_must_say_true_or_false() -> None:
    """A value of ``demo`` that is no boolean is named, like any bad option."""
    with pytest.raises(ConfigError, match="demo='maybe': expected true or false"):
        FakeProvider(cluster_name="c", options={"demo": "maybe"})


async def test_a_fake_cloud_server_or_a_shared_cloud_needs_no_demo_option() -> None:
    """``endpoint=`` names a fake cloud server someone started on purpose, and tests hand a
    cloud in: both are explicit already."""
    remote = FakeProvider(cluster_name="c", options={"endpoint": "http://127.0.0.1:1"})
    assert remote.remote is not None
    await remote.aclose()
    assert FakeProvider.over(FakeCloud(), "c").remote is None


@pytest.mark.looptime
async def test_an_unchanged_route_is_listed_as_the_same_record_a_changed_one_anew() -> None:
    """The fake cloud lists an unchanged row as the record it listed before (as a plugin's
    cache would); a route replaced, or deleted and made again, is a new record."""
    cloud = FakeCloud()
    cloud.add_route("c", Route(target_node="a", destination_cidr="10.0.1.0/24"))
    cloud.add_route("c", Route(target_node="b", destination_cidr="10.0.2.0/24"))
    first, again = cloud.routes("c"), cloud.routes("c")
    assert all(x is y for x, y in zip(first, again, strict=True))
    cloud.remove_route("c", "10.0.1.0/24")
    cloud.add_route("c", Route(target_node="z", destination_cidr="10.0.1.0/24"))
    later = {r.destination_cidr: r for r in cloud.routes("c")}
    assert later["10.0.1.0/24"].target_node == "z"
    assert later["10.0.2.0/24"] is again[1]


@pytest.mark.looptime
async def test_route_quota_is_terminal() -> None:
    """Creating beyond the route quota fails terminally, like AWS's 50 routes per table."""
    cloud = FakeCloud()
    p = FakeProvider(cluster_name="c", options={}, cloud=cloud)
    cloud.settings = type(cloud.settings)(route_quota=1)
    await p.create_route(Route(target_node="a", destination_cidr="10.0.1.0/24"), name_hint="a")
    with pytest.raises(ProviderTerminalError, match="quota"):
        await p.create_route(Route(target_node="b", destination_cidr="10.0.2.0/24"), name_hint="b")


@pytest.mark.looptime
async def test_a_batch_is_one_write_with_per_route_results() -> None:
    """apply_routes deletes first, then creates, in one request, and reports failures by index."""
    cloud = FakeCloud(CloudSettings(whole_table=True, route_quota=2))
    p = FakeProvider.over(cloud, "c")
    assert batch_capable(p)
    old = Route(target_node="gone", destination_cidr="10.0.1.0/24")
    cloud.add_route("c", old)
    creates = [
        (Route(target_node=f"n{i}", destination_cidr=f"10.0.{i}.0/24"), f"h{i}") for i in (1, 2, 3)
    ]
    result = await p.apply_routes(deletes=[old], creates=creates)
    assert cloud.count() == 1
    assert sorted(result.failed_creates) == [2]
    assert "quota" in str(result.failed_creates[2])
    assert {r.target_node for r in cloud.routes("c")} == {"n1", "n2"}


@pytest.mark.looptime
async def test_cloud_gate_passes_batches_through_one_token() -> None:
    """The gate forwards the capability and spends one token per batch."""
    cloud = FakeCloud(CloudSettings(whole_table=True))
    gate = gated(FakeProvider.over(cloud, "c"), CallPolicy(qps=1.0, burst=1))
    assert gate.supports_batch
    creates = [
        (Route(target_node=f"n{i}", destination_cidr=f"10.0.{i}.0/24"), "h") for i in range(50)
    ]
    await gate.apply_routes(deletes=[], creates=creates)
    assert gate.statistics().count("batch", "ok") == 1
    assert len(cloud.routes("c")) == 50
    assert not gated(FakeProvider.over(FakeCloud(), "c"), CallPolicy()).supports_batch


@pytest.mark.looptime
async def test_replace_repoints_a_route_in_one_call_through_the_gate() -> None:
    """With ``replace=true`` the fake cloud repoints a route in one (fenced) request."""
    cloud = FakeCloud(CloudSettings(replace=True))
    cloud.add_route("c", Route(target_node="old", destination_cidr="10.244.1.0/24", name="r1"))
    gate = gated(FakeProvider.over(cloud, "c"), CallPolicy())
    assert gate.supports_replace
    (listed,) = cloud.listing("c")
    new = Route(target_node="new", destination_cidr="10.244.1.0/24")
    await gate.replace_route(listed, new, name_hint="uid-new")
    assert [(r.target_node, r.name) for r in cloud.routes("c")] == [("new", "r1")]
    assert [c.operation for c in cloud.calls] == ["replace"]
    with pytest.raises(RouteNotFoundError):
        await FakeProvider.over(cloud, "c").replace_route(listed, new, name_hint="u")
    assert not gated(FakeProvider.over(FakeCloud(), "c"), CallPolicy()).supports_replace

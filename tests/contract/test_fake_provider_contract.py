"""FakeProvider passes the provider contract, and its plugin options are validated."""

from __future__ import annotations

import pytest

from routectl.errors import (
    ConfigError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteNotFoundError,
)
from routectl.gate import CallPolicy
from routectl.model import Route
from routectl.provider import ProviderFactory, batch_capable, load_factory
from routectl.testing import CloudSettings, FakeCloud, FakeProvider, Fault
from routectl.testing.contract import ProviderContract
from tests.fakes import gated

_: ProviderFactory = FakeProvider


class TestFakeProvider(ProviderContract):
    """The contract suite against the in-memory cloud."""

    @pytest.fixture
    async def provider(self):
        """A fake provider for an empty cluster."""
        p = FakeProvider(cluster_name="contract", options={})
        yield p
        await p.aclose()

    async def inject_fault(self, provider, kind: str) -> None:
        """Queue one failure of the requested kind on the fake cloud."""
        error = {
            "throttled": ProviderThrottledError("throttled", retry_after=1.0),
            "transient": ProviderError("503"),
            "terminal": ProviderTerminalError("forbidden"),
        }[kind]
        provider.cloud.fail_next("create", Fault(error=error))


def test_entry_point_resolves_to_fake_provider() -> None:
    """The plugin loader finds the fake provider by its entry-point name."""
    assert load_factory("fake") is FakeProvider


def test_options_build_the_cloud() -> None:
    """Options configure the private simulated cloud."""
    p = FakeProvider(
        cluster_name="c",
        options={"qps": "1", "burst": "3", "route-quota": "50", "enable-node-addresses": "true"},
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


@pytest.mark.looptime
async def test_route_quota_is_terminal() -> None:
    """Creating beyond the route quota fails terminally, like AWS's 50 routes per table."""
    cloud = FakeCloud()
    p = FakeProvider(cluster_name="c", options={}, cloud=cloud)
    cloud.settings = type(cloud.settings)(route_quota=1)
    await p.create_route(Route(target_node="a", destination_cidr="10.0.1.0/24"), name_hint="a")
    with pytest.raises(ProviderTerminalError, match="quota"):
        await p.create_route(Route(target_node="b", destination_cidr="10.0.2.0/24"), name_hint="b")


class TestFakeProviderWholeTable(ProviderContract):
    """The contract holds in whole-table mode too (single-route calls still work)."""

    @pytest.fixture
    async def provider(self):
        """A whole-table fake provider for an empty cluster."""
        p = FakeProvider(cluster_name="contract", options={"whole-table": "true"})
        yield p
        await p.aclose()


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
async def test_rate_limited_provider_passes_batches_through_one_token() -> None:
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

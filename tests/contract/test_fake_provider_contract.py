"""FakeProvider passes the provider contract, and its plugin options are validated."""

from __future__ import annotations

import pytest

from routectl.errors import (
    ConfigError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
)
from routectl.model import Route
from routectl.provider import ProviderFactory, load_factory
from routectl.testing import FakeCloud, FakeProvider, Fault
from routectl.testing.contract import ProviderContract

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
        pytest.param({"qps": "fast"}, "qps='fast' is not a valid value", id="bad-value"),
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

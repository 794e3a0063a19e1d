"""call_policy(): the settings' cloud budget as the gate's CallPolicy, defaults written once."""

from __future__ import annotations

import dataclasses
from typing import Any

from routectl.cloud.policy import UNLIMITED, CallPolicy, call_policy
from routectl.config import OPTIONS, Settings, parse_cluster_cidrs
from routectl.observe.metrics import Metrics
from routectl.process.wiring import Sources, gate
from routectl.testing import FakeCloud, FakeProvider
from tests.fakes import gated

REQUIRED: dict[str, Any] = {
    "cluster_cidrs": parse_cluster_cidrs("10.244.0.0/16"),
    "provider": "fake",
}
SETTING_OF = {
    "qps": "cloud_qps",
    "burst": "cloud_burst",
    "concurrency": "max_concurrent_route_operations",
    "timeout": "cloud_call_timeout",
    "max_attempts": "cloud_max_attempts",
    "backoff_base": "cloud_call_backoff_base",
    "backoff_cap": "cloud_call_backoff_cap",
}


def test_every_policy_field_defaults_to_its_settings_default() -> None:
    """CallPolicy's defaults are the settings table's, field by field."""
    defaults = {o.name: o.default for o in OPTIONS}
    fields = {f.name: f.default for f in dataclasses.fields(CallPolicy)}
    assert fields == {field: defaults[setting] for field, setting in SETTING_OF.items()}


def test_default_settings_make_the_default_policy() -> None:
    """Settings left at their defaults ask for CallPolicy()."""
    assert call_policy(Settings(**REQUIRED)) == CallPolicy()


def test_each_setting_reaches_its_policy_field() -> None:
    """Every setting the policy mirrors is passed on unchanged."""
    values = {
        "cloud_qps": 0.5,
        "cloud_burst": 3,
        "max_concurrent_route_operations": 7,
        "cloud_call_timeout": 9.0,
        "cloud_max_attempts": 2,
        "cloud_call_backoff_base": 0.25,
        "cloud_call_backoff_cap": 4.0,
    }
    policy = call_policy(Settings(**(REQUIRED | values)))
    assert {field: getattr(policy, field) for field in SETTING_OF} == {
        field: values[setting] for field, setting in SETTING_OF.items()
    }


def test_zero_qps_means_no_client_side_limit() -> None:
    """``--cloud-qps=0`` gives a bucket so large no call waits, which the gate accepts."""
    policy = call_policy(Settings(**REQUIRED, cloud_qps=0.0))
    assert (policy.qps, policy.burst) == (UNLIMITED, int(UNLIMITED))
    gated(FakeProvider.over(FakeCloud(), "c"), policy)


def test_the_service_gate_uses_the_settings_policy() -> None:
    """The gate every cloud call of the service passes is built from call_policy()."""
    for qps in (0.0, 2.0):
        settings = Settings(**REQUIRED, cloud_qps=qps, cloud_burst=4)
        gated = gate(
            FakeProvider.over(FakeCloud(), "c"),
            settings,
            metrics=Metrics.create(),
            sources=Sources.system(),
        )
        assert gated.policy == call_policy(settings)

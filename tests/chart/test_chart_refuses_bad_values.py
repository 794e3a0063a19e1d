"""The chart fails at render, not in the cluster: every value routectl would refuse is refused
by the schema or the templates, with a message that says what to change.

``test_chart_flags_match_settings.py`` probes each value against its own option; this file
covers what one option cannot see: rules across values (the lease timings), durations longer
than Go's, credential mappings without a Secret, a missing ServiceAccount name, names over 63
characters, the one metrics port, and memory sized from the measured per-Node cost.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import helm_python
import pytest

from routectl.cli.flags import parse_run_flags
from routectl.config.serving import PLAIN_DEFAULT
from routectl.errors import ConfigError

Manifest = dict[str, Any]
Render = Callable[[dict[str, Any]], list[Manifest]]
REQUIRED = {
    "clusterCIDRs": ["10.244.0.0/16"],
    "provider": {"name": "fake", "options": {"demo": "true"}},
    "image": {"repository": "registry.example.com/routectl"},
}
REPO = Path(__file__).resolve().parents[2]


def refusal(render: Render, values: dict[str, Any]) -> str:
    """The message Helm refuses ``values`` with (fails the test if it renders)."""
    with pytest.raises((helm_python.HelmValuesError, helm_python.HelmRenderError)) as info:
        render({**REQUIRED, **values})
    return str(info.value)


def args(manifests: list[Manifest]) -> list[str]:
    (deployment,) = (m for m in manifests if m["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    found: list[str] = container["args"][1:]
    return found


@pytest.mark.parametrize(
    ("lease", "renew", "retry"),
    [("10s", "10s", "2s"), ("5s", "10s", "2s"), ("15s", "10s", "9s"), ("15s", "2400ms", "2s")],
)
def test_lease_timings_routectl_refuses_are_refused(
    render: Render, lease: str, renew: str, retry: str
) -> None:
    """leaseDuration > renewDeadline > 1.2 x retryPeriod, or no render (and routectl agrees)."""
    timings = {"leaseDuration": lease, "renewDeadline": renew, "retryPeriod": retry}
    message = refusal(render, {"leaderElection": timings})
    assert "must exceed renewDeadline" in message
    flags = [f"--leader-elect-lease-duration={lease}", f"--leader-elect-renew-deadline={renew}", f"--leader-elect-retry-period={retry}"]  # fmt: skip
    with pytest.raises(ConfigError):
        parse_run_flags(["--cluster-cidr=10.244.0.0/16", "--provider=fake", *flags])


def test_good_lease_timings_render(render: Render) -> None:
    """The boundary's good side renders: 15s > 10s > 1.2 x 8s."""
    values = {
        "leaderElection": {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "8s"}
    }
    assert "--leader-elect-retry-period=8s" in args(render({**REQUIRED, **values}))


@pytest.mark.parametrize(
    "path",
    ["reconciliationPeriod", "resyncPeriod", "syncBatchWindow", "minSyncInterval",
     "routeListingMaxAge", "batchWriteInterval", "cloud.callTimeout", "cloud.retryAfterCap",
     "gracefulShutdownTimeout"],
)  # fmt: skip
def test_durations_longer_than_gos_are_refused(render: Render, path: str) -> None:
    """3,000,000 hours is past Go's longest duration: routectl refuses it, so does the chart."""
    *parents, key = path.split(".")
    nested: dict[str, Any] = {key: "3000000h"}
    for parent in reversed(parents):
        nested = {parent: nested}
    assert "longer than Go's longest duration" in refusal(render, {"mode": "periodic", **nested})


@pytest.mark.parametrize("path", ["cloud.burst", "cloud.maxConcurrentRouteOperations", "cloud.maxAttempts", "kubeApi.burst"])  # fmt: skip
def test_integers_beyond_int32_are_refused(render: Render, path: str) -> None:
    """routectl's integer flags are Go's int32; the schema stops there too."""
    parent, key = path.split(".")
    refusal(render, {parent: {key: 2**31}})
    assert args(render({**REQUIRED, parent: {key: 2**31 - 1}}))


@pytest.mark.parametrize(
    "credentials",
    [
        {"mode": "env", "env": {"HCLOUD_TOKEN": "token"}},
        {"mode": "file", "file": {"options": {"token-file": "token"}}},
        {"mode": "file", "file": {"env": {"AWS_SHARED_CREDENTIALS_FILE": "credentials"}}},
    ],
)
def test_credential_mappings_without_a_secret_fail_and_say_so(
    render: Render, credentials: dict[str, Any]
) -> None:
    """Mappings that would be dropped silently (no Secret to read) fail the render."""
    message = refusal(render, {"provider": {"name": "hcloud", "credentials": credentials}})
    assert "existingSecret is empty" in message


def test_a_service_account_name_is_required_when_not_created(render: Render) -> None:
    """Never the namespace's default account."""
    message = refusal(render, {"serviceAccount": {"create": False}})
    assert "serviceAccount.name is required" in message
    manifests = render({**REQUIRED, "serviceAccount": {"create": False, "name": "mine"}})
    (deployment,) = (m for m in manifests if m["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "mine"
    bindings = [m for m in manifests if m["kind"] in {"RoleBinding", "ClusterRoleBinding"}]
    assert {s["name"] for b in bindings for s in b["subjects"]} == {"mine"}


def test_every_name_fits_63_characters(render: Render) -> None:
    """A long fullnameOverride is cut, suffixes included (Services, Roles, bindings)."""
    values = {
        **REQUIRED,
        "fullnameOverride": "a" * 70,
        "metrics": {"serviceMonitor": {"enabled": True}},
    }
    names = [m["metadata"]["name"] for m in render(values)]
    assert max(len(n) for n in names) <= 63
    assert any(n.endswith("-metrics") for n in names)
    assert all(not n.endswith("-") and "--" not in n for n in names)


def test_one_metrics_port_everywhere(render: Render) -> None:
    """The binary's default, the Dockerfile, the README and the chart say the same port."""
    port = int(PLAIN_DEFAULT.rpartition(":")[2])  # the plain listener's default, when it opens
    manifests = render({**REQUIRED, "metrics": {"serviceMonitor": {"enabled": True}}})
    (deployment,) = (m for m in manifests if m["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["ports"][0]["containerPort"] == port
    assert f"--secure-port={port}" in container["args"]
    (service,) = (m for m in manifests if m["kind"] == "Service")
    assert service["spec"]["ports"][0]["port"] == port
    plain = args(render({**REQUIRED, "metrics": {"secure": False}}))
    assert f"--metrics-bind-address=0.0.0.0:{port}" in plain
    assert f"EXPOSE {port}" in (REPO / "Dockerfile").read_text()
    for text in ((REPO / "README.md").read_text(), (REPO / "docs" / "deploy.md").read_text()):
        assert str(port) in text
        assert ":8080" not in text


@pytest.mark.parametrize(("nodes", "request_mib", "limit_mib"), [(500, 100, 256), (5000, 131, 262), (65000, 541, 1082)])  # fmt: skip
def test_memory_follows_the_measured_per_node_cost(
    render: Render, nodes: int, request_mib: int, limit_mib: int
) -> None:
    """96 MiB + 7 KiB per expected Node, limit twice that (at least 256 MiB): the table in
    docs/deploy.md."""
    (deployment,) = (
        m for m in render({**REQUIRED, "expectedNodes": nodes}) if m["kind"] == "Deployment"
    )
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["requests"]["memory"] == f"{request_mib}Mi"
    assert container["resources"]["limits"]["memory"] == f"{limit_mib}Mi"
    table = (REPO / "docs" / "deploy.md").read_text()
    assert f"| {nodes:,} | {request_mib} MiB | {limit_mib} MiB |" in table


def test_resources_given_win(render: Render) -> None:
    """Explicit resources replace the computed ones whole."""
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
    (deployment,) = (
        m for m in render({**REQUIRED, "resources": resources}) if m["kind"] == "Deployment"
    )
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"] == resources

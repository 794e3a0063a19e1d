"""Values: the schema refuses bad values at install, required values fail with a clear message."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import helm_python
import jsonschema
import pytest
import yaml

Manifest = dict[str, Any]
REQUIRED = {
    "clusterCIDRs": ["10.244.0.0/16"],
    "provider": {"name": "fake", "options": {"demo": "true"}},
    "image": {"repository": "registry.example.com/routectl"},
}


def with_required(**overrides: Any) -> dict[str, Any]:
    """The required values plus ``overrides`` (top-level keys replace, not merge)."""
    return {**REQUIRED, **overrides}


@pytest.fixture(scope="module")
def schema(chart_dir: Path) -> dict[str, Any]:
    """The chart's values.schema.json."""
    loaded: dict[str, Any] = json.loads((chart_dir / "values.schema.json").read_text())
    return loaded


def test_schema_is_valid_draft7(schema: dict[str, Any]) -> None:
    """values.schema.json is itself a valid JSON Schema (draft 7, as Helm reads it)."""
    jsonschema.Draft7Validator.check_schema(schema)


def test_default_values_satisfy_the_schema(schema: dict[str, Any], chart_dir: Path) -> None:
    """values.yaml as shipped satisfies its own schema."""
    defaults = yaml.safe_load((chart_dir / "values.yaml").read_text())
    jsonschema.Draft7Validator(schema).validate(defaults)


def test_scenario_values_satisfy_the_schema(
    schema: dict[str, Any], chart: helm_python.Chart, scenario_values: dict[str, Any]
) -> None:
    """Each scenario, merged over the defaults as an install would, satisfies the schema."""
    jsonschema.Draft7Validator(schema).validate(chart.merge_values(scenario_values))


BAD_VALUES = [
    pytest.param(with_required(mode="foo"), "/mode", id="unknown-mode"),
    pytest.param(with_required(cloud={"qps": -1}), "/cloud/qps", id="negative-qps"),
    pytest.param(with_required(cloud={"burst": 0}), "/cloud/burst", id="zero-burst"),
    pytest.param(
        with_required(cloud={"maxConcurrentRouteOperations": 1.5}),
        "/cloud/maxConcurrentRouteOperations",
        id="fractional-concurrency",
    ),
    pytest.param(
        with_required(massDelete={"threshold": 1.5}), "/massDelete/threshold", id="threshold"
    ),
    pytest.param(with_required(resyncPeriod="1 hour"), "/resyncPeriod", id="not-a-go-duration"),
    pytest.param(with_required(resyncPeriod="0h0m"), "/resyncPeriod", id="zero-duration"),
    pytest.param(
        with_required(leaderElection={"resourceName": "routes..a"}),
        "/leaderElection/resourceName",
        id="lease-name-empty-label",
    ),
    pytest.param(
        with_required(reconciliationPeriod=10), "/reconciliationPeriod", id="duration-int"
    ),
    pytest.param(with_required(clusterCIDRs="10.244.0.0/16"), "/clusterCIDRs", id="cidrs-not-list"),
    pytest.param(
        with_required(clusterCIDRs=["10.244.0.0"]), "/clusterCIDRs/0", id="cidr-no-prefix"
    ),
    pytest.param(
        with_required(clusterCIDRs=["10.0.0.0/16", "fd00::/56", "10.1.0.0/16"]),
        "/clusterCIDRs",
        id="three-cidrs",
    ),
    pytest.param(with_required(logging={"format": "xml"}), "/logging/format", id="log-format"),
    pytest.param(with_required(logging={"verbosity": -1}), "/logging/verbosity", id="verbosity"),
    pytest.param(with_required(replicaCount=0), "/replicaCount", id="zero-replicas"),
    pytest.param(with_required(clusterCidrs=["10.0.0.0/8"]), "clusterCidrs", id="typo-key"),
    pytest.param(
        {**REQUIRED, "provider": {"name": "fake", "credentials": {"token": "s3cr3t"}}},
        "token",
        id="secret-in-values",
    ),
    pytest.param(
        {**REQUIRED, "provider": {"name": "fake", "credentials": {"mode": "vault"}}},
        "/provider/credentials/mode",
        id="credentials-mode",
    ),
    pytest.param(
        {**REQUIRED, "provider": {"name": "Fake Cloud"}}, "/provider/name", id="provider-name"
    ),
    pytest.param(with_required(extraArgs=["run"]), "/extraArgs/0", id="extra-arg-not-a-flag"),
    pytest.param(with_required(podAntiAffinity="maybe"), "/podAntiAffinity", id="anti-affinity"),
    pytest.param(with_required(metrics={"port": 80}), "/metrics/port", id="privileged-port"),
]


@pytest.mark.parametrize(("values", "where"), BAD_VALUES)
def test_helm_refuses_bad_values(
    render: Callable[..., list[Manifest]], values: dict[str, Any], where: str
) -> None:
    """Helm fails the install on the bad value and names where it is."""
    with pytest.raises(helm_python.HelmValuesError) as caught:
        render(values)
    assert where in str(caught.value)


@pytest.mark.parametrize(("values", "where"), BAD_VALUES)
def test_jsonschema_refuses_bad_values(
    schema: dict[str, Any], chart: helm_python.Chart, values: dict[str, Any], where: str
) -> None:
    """The schema alone (no Helm) refuses the bad value, so tools other than Helm agree."""
    errors = jsonschema.Draft7Validator(schema).iter_errors(chart.merge_values(values))
    found = ["/" + "/".join(str(p) for p in e.absolute_path) + " " + e.message for e in errors]
    assert any(where in text for text in found), found


@pytest.mark.parametrize(
    "values",
    [
        pytest.param({"provider": {"name": "fake"}}, id="absent"),
        pytest.param({"provider": {"name": "fake"}, "clusterCIDRs": []}, id="empty"),
    ],
)
def test_missing_cluster_cidrs_fails_with_a_clear_message(
    render: Callable[..., list[Manifest]], values: dict[str, Any]
) -> None:
    """Without clusterCIDRs rendering fails and says what to set and where to find the value."""
    with pytest.raises(helm_python.HelmRenderError, match="clusterCIDRs is required") as caught:
        render(values)
    assert "--cluster-cidr" in str(caught.value)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param({"clusterCIDRs": ["10.0.0.0/16"]}, "provider.name is required", id="provider"),
        pytest.param(
            with_required(clusterCIDRs=["10.0.0.0/16", "10.1.0.0/16"]),
            "one IPv4 and one IPv6",
            id="two-v4-cidrs",
        ),
        pytest.param(
            with_required(replicaCount=2, leaderElection={"enabled": False}),
            "needs leader election",
            id="replicas-without-leader-election",
        ),
        pytest.param(
            with_required(extraArgs=["--cloud-qps=100"]),
            "--cloud-qps is managed by the chart",
            id="managed-flag-in-extra-args",
        ),
        pytest.param(
            with_required(extraArgs=["--v=4"]), "--v is managed by the chart", id="verbosity-flag"
        ),
        pytest.param(
            {**REQUIRED, "provider": {"name": "aws", "credentials": {"existingSecret": "aws"}}},
            "provider.credentials.env is empty",
            id="env-credentials-without-keys",
        ),
        pytest.param(
            {
                **REQUIRED,
                "provider": {
                    "name": "hcloud",
                    "credentials": {"existingSecret": "hcloud", "mode": "file"},
                },
            },
            "says where routectl finds the file",
            id="file-credentials-without-target",
        ),
    ],
)
def test_unworkable_values_fail_with_a_clear_message(
    render: Callable[..., list[Manifest]], values: dict[str, Any], message: str
) -> None:
    """Values the schema cannot rule out but that cannot work fail rendering with a reason."""
    with pytest.raises(helm_python.HelmRenderError, match=re.escape(message)):
        render(values)


def _schema_node(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    """The schema of the value at ``path``, or None when the chart does not define that key."""
    node: dict[str, Any] | None = schema
    for key in path:
        properties = node.get("properties", {}) if node else {}
        node = properties.get(key)
    return node


def test_every_chart_key_in_values_yaml_is_commented(
    schema: dict[str, Any], chart_dir: Path
) -> None:
    """Each key the chart defines (not Kubernetes fields passed through) has a comment above it."""
    key_line = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w.-]*):")
    stack: list[tuple[int, str]] = []
    previous = ""
    uncommented: list[str] = []
    for line in (chart_dir / "values.yaml").read_text().splitlines():
        match = key_line.match(line)
        if match:
            indent = len(match["indent"])
            stack = [(i, k) for i, k in stack if i < indent]
            stack.append((indent, match["key"]))
            path = tuple(k for _, k in stack)
            if _schema_node(schema, path) is not None and not previous.lstrip().startswith("#"):
                uncommented.append(".".join(path))
        if line.strip():
            previous = line
    assert uncommented == []


def test_every_schema_property_is_described(schema: dict[str, Any]) -> None:
    """Every property in values.schema.json carries a description."""
    missing: list[str] = []

    def walk(node: dict[str, Any], path: str) -> None:
        for key, child in node.get("properties", {}).items():
            if "description" not in child:
                missing.append(f"{path}{key}")
            walk(child, f"{path}{key}.")

    walk(schema, "")
    assert missing == []

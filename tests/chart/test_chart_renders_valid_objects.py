"""Every scenario renders with the real Helm engine into objects the Kubernetes API accepts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import helm_python
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

Manifest = dict[str, Any]

# The newest Kubernetes schemas kubernetes-validate ships; the brief asks for 1.33 or later.
KUBERNETES_VERSION = kubernetes_validate.latest_version()

# Custom resources kubernetes-validate has no schema for; checked by hand below.
CUSTOM_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor")}
# The fields of a ServiceMonitor endpoint the chart may render (Prometheus Operator v1 API).
ENDPOINT_FIELDS = {
    "port", "path", "scheme", "interval", "scrapeTimeout", "authorization", "tlsConfig",
}  # fmt: skip

DASHBOARD_METRICS = (
    "route_controller_route_sync_total",
    "routectl_cloud_calls_total",
    "routectl_cloud_budget_held_seconds_total",
    "routectl_cloud_token_wait_seconds_bucket",
    "routectl_route_programming_latency_seconds_bucket",
    "routectl_sync_duration_seconds_bucket",
    "workqueue_longest_running_processor_seconds",
    "rest_client_requests_total",
)


def test_schemas_are_a_current_kubernetes_version() -> None:
    """The Kubernetes schemas used for validation are 1.33 or newer."""
    major, minor = (int(part) for part in KUBERNETES_VERSION.split(".")[:2])
    assert (major, minor) >= (1, 33)


def test_scenario_objects_validate_against_kubernetes_schemas(manifests: list[Manifest]) -> None:
    """Every rendered built-in object validates strictly (no unknown fields) against the schemas."""
    checked = 0
    for manifest in manifests:
        if (manifest["apiVersion"], manifest["kind"]) in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = "/".join(str(p) for p in exc.path)
            pytest.fail(
                f"{manifest['kind']}/{manifest['metadata']['name']} at {where}: {exc.message}"
            )
        checked += 1
    assert checked >= 4


def test_scenario_renders_the_expected_kinds(manifests: list[Manifest]) -> None:
    """Each scenario renders a Deployment, a ServiceAccount and the cluster RBAC, and no Secret
    with data: the only Secret the chart makes is the scraper's token, which Kubernetes fills."""
    kinds = [m["kind"] for m in manifests]
    assert kinds.count("Deployment") == 1
    assert {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"} <= set(kinds)
    for secret in (m for m in manifests if m["kind"] == "Secret"):
        assert secret["type"] == "kubernetes.io/service-account-token"
        assert not {"data", "stringData"} & set(secret)


def test_scenario_objects_live_in_the_release_namespace(manifests: list[Manifest]) -> None:
    """Namespaced objects go to the release namespace (the dashboard may go elsewhere, the
    Node Events' Role is in `default`)."""
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding"}
    for manifest in manifests:
        if manifest["kind"] in cluster_scoped or manifest["kind"] == "ConfigMap":
            continue
        if manifest["kind"] in {"Role", "RoleBinding"} and manifest["metadata"]["name"].endswith(
            "-events"
        ):
            assert manifest["metadata"]["namespace"] == "default"  # Node Events live there
            continue
        assert manifest["metadata"]["namespace"] == "kube-system", manifest["kind"]


def test_lint_is_clean_for_every_scenario(chart_dir: Path, scenario_values: dict[str, Any]) -> None:
    """``helm lint --strict`` reports no warning or error for the scenario."""
    report = helm_python.lint(chart_dir, scenario_values, strict=True, namespace="kube-system")
    findings = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["errors"] == []
    assert findings == []


def test_lint_is_clean_without_values(chart_dir: Path) -> None:
    """``helm lint --strict`` on the bare chart (required values unset) reports no warning."""
    report = helm_python.lint(chart_dir, strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_service_monitor_scrapes_the_metrics_service(render: Callable[..., list[Manifest]]) -> None:
    """The ServiceMonitor selects the metrics Service and scrapes its named port at /metrics."""
    manifests = render(
        {
            "clusterCIDRs": ["10.244.0.0/16"],
            "provider": {"name": "fake", "options": {"demo": "true"}},
            "image": {"repository": "registry.example.com/routectl"},
            "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "kps"}}},
        }
    )
    (monitor,) = (m for m in manifests if m["kind"] == "ServiceMonitor")
    (service,) = (m for m in manifests if m["kind"] == "Service")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "kps"
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["kube-system"]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    # The Prometheus Operator's current form: `authorization` with a Secret, never the
    # deprecated bearerTokenFile/bearerTokenSecret.
    assert endpoint["authorization"]["type"] == "Bearer"
    assert set(endpoint["authorization"]["credentials"]) == {"name", "key"}
    assert not {"bearerTokenFile", "bearerTokenSecret"} & set(endpoint)
    assert set(endpoint) <= ENDPOINT_FIELDS


def test_service_monitor_without_service_fails_clearly(
    render: Callable[..., list[Manifest]],
) -> None:
    """Asking for a ServiceMonitor with the metrics Service off fails with a message saying why."""
    values = {
        "clusterCIDRs": ["10.244.0.0/16"],
        "provider": {"name": "fake", "options": {"demo": "true"}},
        "image": {"repository": "registry.example.com/routectl"},
        "metrics": {"service": {"enabled": False}, "serviceMonitor": {"enabled": True}},
    }
    with pytest.raises(helm_python.HelmRenderError, match=r"needs metrics\.service\.enabled"):
        render(values)


def test_dashboard_json_charts_the_routectl_metrics(chart_dir: Path) -> None:
    """The shipped Grafana dashboard queries syncs, cloud calls by result, token wait and latency."""
    dashboard = json.loads((chart_dir / "dashboards" / "routectl.json").read_text())
    exprs = " ".join(
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])
    )
    for metric in DASHBOARD_METRICS:
        assert metric in exprs, metric
    assert "by (operation, result)" in exprs
    assert dashboard["uid"] == "routectl"


def test_dashboard_configmap_carries_the_dashboard(
    render: Callable[..., list[Manifest]], chart_dir: Path
) -> None:
    """With the dashboard on, a labelled ConfigMap holds the dashboard JSON unchanged."""
    manifests = render(
        {
            "clusterCIDRs": ["10.244.0.0/16"],
            "provider": {"name": "fake", "options": {"demo": "true"}},
            "image": {"repository": "registry.example.com/routectl"},
            "grafanaDashboard": {"enabled": True, "namespace": "monitoring"},
        }
    )
    (config_map,) = (m for m in manifests if m["kind"] == "ConfigMap")
    assert config_map["metadata"]["namespace"] == "monitoring"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = json.loads((chart_dir / "dashboards" / "routectl.json").read_text())
    assert json.loads(config_map["data"]["routectl.json"]) == shipped


def test_notes_say_how_to_check_it_works(
    render_files: Callable[[dict[str, Any]], dict[str, str]],
) -> None:
    """NOTES.txt points at the metrics, the NetworkUnavailable condition and ``routectl plan``."""
    files = render_files(
        {
            "clusterCIDRs": ["10.244.0.0/16"],
            "provider": {"name": "aws"},
            "image": {"repository": "registry.example.com/routectl"},
        }
    )
    (notes,) = (text for path, text in files.items() if path.endswith("NOTES.txt"))
    assert "/metrics" in notes
    assert "NetworkUnavailable" in notes
    assert "routectl plan --cluster-cidr=10.244.0.0/16 --provider=aws" in notes
    assert "--configure-cloud-routes=false" in notes


def test_ci_values_files_are_plain_yaml_mappings(chart_dir: Path) -> None:
    """Every scenario file parses as a YAML mapping and the expected scenarios all exist."""
    names = {p.name for p in chart_dir.glob("ci/*-values.yaml")}
    expected = {"default", "ha", "periodic", "aws", "hcloud", "minimal"}
    assert {f"{n}-values.yaml" for n in expected} <= names
    for name in names:
        assert isinstance(yaml.safe_load((chart_dir / "ci" / name).read_text()), dict), name

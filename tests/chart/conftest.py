"""Fixtures for the chart tests: the chart loaded once and rendered by the real Helm engine.

``helm-python-sdk`` bundles Helm's Go library, so rendering runs the real template engine and
the real values.schema.json validation, offline. Each ``ci/<scenario>-values.yaml`` is one
scenario; the ``scenario`` fixture runs a test once per file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = REPO_ROOT / "charts" / "routectl"
SCENARIOS = sorted(p.name.removesuffix("-values.yaml") for p in CHART_DIR.glob("ci/*-values.yaml"))
RELEASE = "routectl"
NAMESPACE = "kube-system"

Manifest = dict[str, Any]
Render = Callable[[dict[str, Any]], list[Manifest]]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository's top directory."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def chart_dir() -> Path:
    """The chart's directory."""
    return CHART_DIR


@pytest.fixture(scope="session")
def chart() -> Iterator[helm_python.Chart]:
    """The chart, loaded once by Helm."""
    helm_python.disable_logging()
    with helm_python.Chart.load(CHART_DIR) as loaded:
        yield loaded


@pytest.fixture(scope="session")
def render_files(chart: helm_python.Chart) -> Callable[[dict[str, Any]], dict[str, str]]:
    """Render the chart as ``helm install`` would: template path -> rendered text."""

    def _render(values: dict[str, Any]) -> dict[str, str]:
        return chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)

    return _render


@pytest.fixture(scope="session")
def render(render_files: Callable[[dict[str, Any]], dict[str, str]]) -> Render:
    """Render the chart and parse every Kubernetes object out of it (NOTES.txt left out)."""

    def _render(values: dict[str, Any]) -> list[Manifest]:
        return [
            doc
            for path, text in sorted(render_files(values).items())
            if not path.endswith("NOTES.txt")
            for doc in yaml.safe_load_all(text)
            if doc
        ]

    return _render


@pytest.fixture(params=SCENARIOS)
def scenario(request: pytest.FixtureRequest) -> str:
    """The name of one ``ci/*-values.yaml`` scenario."""
    name: str = request.param
    return name


@pytest.fixture
def scenario_values(scenario: str) -> dict[str, Any]:
    """The values of the scenario."""
    loaded: dict[str, Any] = yaml.safe_load(
        (CHART_DIR / "ci" / f"{scenario}-values.yaml").read_text()
    )
    return loaded


@pytest.fixture
def manifests(render: Render, scenario_values: dict[str, Any]) -> list[Manifest]:
    """Every object the scenario renders."""
    return render(scenario_values)


@pytest.fixture
def deployment(manifests: list[Manifest]) -> Manifest:
    """The scenario's one Deployment."""
    (found,) = (m for m in manifests if m["kind"] == "Deployment")
    return found


@pytest.fixture
def container(deployment: Manifest) -> dict[str, Any]:
    """The Deployment's one container."""
    (found,) = deployment["spec"]["template"]["spec"]["containers"]
    result: dict[str, Any] = found
    return result

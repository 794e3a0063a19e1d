"""Packaging an operator can trust: metadata that says where the project lives, plugins that
name the routectl they fit, a plugin whose requirements resolve at once, and an image built
from locked, hashed packages on a base pinned by digest."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from routectl import __version__

REPO = Path(__file__).resolve().parents[2]
SHIPPED_PLUGINS = {  # every plugin in providers/ but the example: what PROVIDERS=all installs
    tomllib.loads(p.read_text())["project"]["name"]: p
    for p in sorted((REPO / "providers").glob("*/pyproject.toml"))
    if p.parent.name != "template"
}
DISTRIBUTIONS = {
    "routectl": REPO / "pyproject.toml",
    **SHIPPED_PLUGINS,
    "routectl-sim": REPO / "sim" / "pyproject.toml",
}
IN_IMAGE = {"routectl": REPO / "pyproject.toml", **SHIPPED_PLUGINS}
LOCK = REPO / "requirements" / "image.lock"
NEXT_MINOR = Version(f"{Version(__version__).major}.{Version(__version__).minor + 1}.0")


def project(name: str) -> dict[str, Any]:
    """The ``[project]`` table of a distribution."""
    table: dict[str, Any] = tomllib.loads(DISTRIBUTIONS[name].read_text())["project"]
    return table


def requirements(name: str, extra: str | None = None) -> list[Requirement]:
    """A distribution's requirements (of an extra, when given)."""
    table = project(name)
    texts = table["optional-dependencies"][extra] if extra else table["dependencies"]
    return [Requirement(text) for text in texts]


def pins() -> dict[str, tuple[Version, list[str]]]:
    """The lock's pins: name -> (version, its sha256 hashes)."""
    found: dict[str, tuple[Version, list[str]]] = {}
    for block in re.split(r"\n(?=[a-z0-9])", LOCK.read_text()):
        if match := re.match(r"([a-z0-9][a-z0-9._-]*)==(\S+)", block):
            hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", block)
            found[match.group(1).lower().replace("_", "-").replace(".", "-")] = (
                Version(match.group(2)),
                hashes,
            )
    return found


@pytest.mark.parametrize("name", DISTRIBUTIONS)
def test_metadata_says_where_the_project_lives_and_what_it_is(name: str) -> None:
    """Project URLs (home, docs, source, issues), classifiers and a licence expression."""
    table = project(name)
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(table["urls"])
    assert all(url.startswith("https://") for url in table["urls"].values())
    classifiers = table["classifiers"]
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert "Typing :: Typed" in classifiers
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    assert not [c for c in classifiers if c.startswith("License ::")]  # the SPDX field says it
    assert table["license"] == "Apache-2.0"


@pytest.mark.parametrize("name", [*SHIPPED_PLUGINS, "routectl-sim"])
def test_plugins_require_a_compatible_range_of_routectl(name: str) -> None:
    """This routectl fits; the next minor (whose contract may change) does not."""
    (core,) = [r for r in requirements(name) if r.name == "routectl"]
    assert core.specifier.contains(__version__)
    assert not core.specifier.contains(NEXT_MINOR)


def test_the_aws_plugin_bounds_every_botocore_pinner_alike() -> None:
    """aiobotocore pins botocore; boto3 (moto's) pins botocore too: both are bounded to the
    same botocore range, so pip resolves at once instead of walking back through releases."""
    runtime = {r.name: r for r in requirements("routectl-aws")}
    tests = {r.name: r for r in requirements("routectl-aws", "test")}
    botocore, boto3 = runtime["botocore"].specifier, tests["boto3"].specifier
    assert runtime["aiobotocore"].specifier
    assert {s.operator for s in botocore} == {">=", "<"}
    assert {(s.operator, s.version) for s in boto3} == {(s.operator, s.version) for s in botocore}


def test_the_lock_pins_with_hashes_everything_the_image_installs() -> None:
    """Every requirement of routectl and the plugins (transitively, as installed here) is in
    the lock at a version that satisfies it, each pin with hashes; setuptools too (the local
    trees are built without isolation); nothing local or unpinned."""

    locked = pins()
    assert locked
    assert all(hashes for _, hashes in locked.values())
    text = LOCK.read_text()
    assert "file://" not in text
    assert not [line for line in text.splitlines() if re.match(r"^[a-z0-9].*(>=|<|~=)", line)]
    assert {"routectl-aws", "routectl-hcloud", "routectl-openstack"} <= set(IN_IMAGE)
    pending, seen = [Requirement(n) for n in IN_IMAGE], set()
    while pending:
        requirement = pending.pop()
        name = requirement.name.lower().replace("_", "-").replace(".", "-")
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        if name in IN_IMAGE:  # a local tree: its requirements as its pyproject.toml says
            table = tomllib.loads(IN_IMAGE[name].read_text())["project"]
            pending += [Requirement(r) for r in table["dependencies"]]
            continue
        assert name in locked, f"{name} is not in requirements/image.lock"
        assert requirement.specifier.contains(locked[name][0], prereleases=True), name
        try:  # further down, as installed here (the replay in test_image_builds_... is whole)
            pending += [Requirement(r) for r in importlib.metadata.requires(name) or []]
        except importlib.metadata.PackageNotFoundError:
            continue
    assert "setuptools" in locked
    assert locked["setuptools"][0] >= Version("77")


def test_the_image_installs_from_the_lock_on_a_base_pinned_by_digest() -> None:
    """Every FROM names the digest; pip installs the lock with --require-hashes, then the local
    trees with --no-deps and --no-build-isolation, and checks the result."""
    dockerfile = (REPO / "Dockerfile").read_text()
    (digest,) = re.findall(r"^ARG PYTHON_DIGEST=(\S+)$", dockerfile, flags=re.MULTILINE)
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest)
    froms = re.findall(r"^FROM (\S+)", dockerfile, flags=re.MULTILINE)
    assert froms
    assert all(f.endswith("@${PYTHON_DIGEST}") for f in froms)
    assert "pip install --no-cache-dir --require-hashes -r requirements/image.lock" in dockerfile
    assert "--no-deps --no-build-isolation" in dockerfile
    assert "pip check" in dockerfile
    assert "!requirements" in (REPO / ".dockerignore").read_text()


@pytest.mark.slow
def test_the_built_wheel_carries_urls_and_classifiers(tmp_path: Path) -> None:
    """The metadata pip and PyPI show: Project-URL and Classifier lines."""
    subprocess.run(  # noqa: S603 -- fixed arguments: this interpreter's pip, this checkout
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("routectl-*.whl")
    with zipfile.ZipFile(wheel) as built:
        (name,) = [n for n in built.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = built.read(name).decode()
    assert "Project-URL: Source, https://" in metadata
    assert "Classifier: Framework :: AsyncIO" in metadata

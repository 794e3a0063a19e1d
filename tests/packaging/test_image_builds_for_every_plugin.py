"""The image builds for every plugin: the Dockerfile's build stage, replayed in a virtualenv
for each ``PROVIDERS`` value (each plugin in providers/ alone, and ``all``), installs the lock
with ``--require-hashes``, the local trees with ``--no-deps --no-build-isolation``, passes
``pip check``, and ``routectl providers`` lists exactly the plugins chosen.

The plugin list comes from providers/ (every ``providers/<name>/pyproject.toml``), never from
a list here: a new plugin whose dependencies the lock lacks fails this test. The example
plugin (providers/template) is never in an image.

Slow: marked ``slow``. The lock's files are downloaded once into one wheelhouse (kept in
pytest's cache between runs), and the replays share a build cache as Docker's builds do: the
lock is installed once, and each ``PROVIDERS`` value replays the steps after it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.packaging.dockerfile_replay import Layers, ReplayError, build_context, replay

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "requirements" / "image.lock"
EXAMPLE = "template"


def plugin_dirs() -> list[str]:
    """Every providers/<name> with a pyproject.toml, found on disk."""
    return sorted(p.parent.name for p in (REPO / "providers").glob("*/pyproject.toml"))


def entry_points(directory: Path) -> set[str]:
    """The ``routectl.providers`` entry-point names a pyproject.toml declares."""
    project = tomllib.loads((directory / "pyproject.toml").read_text())["project"]
    names: set[str] = set(project.get("entry-points", {}).get("routectl.providers", {}))
    return names


SHIPPED = [name for name in plugin_dirs() if name != EXAMPLE]
CORE = entry_points(REPO)  # the core's own: the in-memory `fake`


def test_the_plugins_are_found_on_disk() -> None:
    """providers/ holds the shipped plugins and the example; each declares an entry point."""
    assert EXAMPLE in plugin_dirs()
    assert {"aws", "hcloud", "openstack"} <= set(SHIPPED)
    for name in plugin_dirs():
        assert entry_points(REPO / "providers" / name), name


def test_image_in_lists_every_shipped_plugin_and_not_the_example() -> None:
    """requirements/image.in's plugin block is what scripts/lock-image writes from providers/."""
    check = subprocess.run(  # noqa: S603 -- fixed arguments: this checkout's script
        [sys.executable, str(REPO / "scripts" / "lock_image.py"), "check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    listed = (REPO / "requirements" / "image.in").read_text()
    assert "./providers/template" not in listed
    for name in SHIPPED:
        assert f"./providers/{name}\n" in listed


def test_the_build_context_is_what_dockerignore_lets_in(tmp_path: Path) -> None:
    """The replay's context has the sources and the lock, and no tests, caches or venvs."""
    context = build_context(REPO, tmp_path / "context")
    files = {p.relative_to(context).as_posix() for p in context.rglob("*") if p.is_file()}
    assert {"pyproject.toml", "requirements/image.lock", "routectl/cli/main.py"} <= files
    assert "providers/aws/pyproject.toml" in files
    assert not [f for f in files if "/tests/" in f or f.startswith(("tests/", "sim/", ".venv/"))]
    assert not [f for f in files if "__pycache__" in f or ".egg-info" in f]


@pytest.fixture(scope="session")
def wheelhouse(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every file of the lock for this platform, downloaded once (checked against its hashes)."""
    cache = getattr(request.config, "cache", None)
    digest = hashlib.sha256(LOCK.read_bytes()).hexdigest()[:16]
    if cache is not None:
        where = Path(cache.mkdir(f"image-wheelhouse-{digest}"))
    else:
        where = tmp_path_factory.mktemp("wheelhouse")
    subprocess.run(  # noqa: S603 -- fixed arguments: this interpreter's pip, the lock
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--require-hashes",
            "--only-binary=:all:",
            "--no-deps",
            "-r",
            str(LOCK),
            "-d",
            str(where),
        ],
        check=True,
        capture_output=True,
        timeout=900,
    )
    return where


def providers_listed(routectl: Path) -> set[str]:
    """The entry-point names ``routectl providers`` prints, one per line."""
    # Only the image's own packages: no PYTHONPATH of the test run's leaks in.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(  # noqa: S603 -- the replayed image's own routectl
        [str(routectl), "providers"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    ).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory: pytest.TempPathFactory) -> Layers:
    """Docker's build cache, shared by the replays of this session."""
    return Layers(root=tmp_path_factory.mktemp("image-build"))


@pytest.fixture(params=[*SHIPPED, "all"])
def providers_value(request: pytest.FixtureRequest) -> str:
    """One value of the Dockerfile's PROVIDERS build argument."""
    value: str = request.param
    return value


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_image_builds_for_each_providers_value(
    providers_value: str, wheelhouse: Path, build_cache: Layers, tmp_path: Path
) -> None:
    """The build stage replayed with PROVIDERS=<value> ends in pip check and an image whose
    ``routectl providers`` lists the core's entry points plus exactly the chosen plugins."""
    try:
        built = replay(
            REPO,
            tmp_path,
            build_args={"PROVIDERS": providers_value},
            wheelhouse=wheelhouse,
            layers=build_cache,
        )
    except ReplayError as failed:  # pragma: no cover - the message is the point
        pytest.fail(str(failed))
    assert "No broken requirements found." in "".join(built.output)
    chosen = SHIPPED if providers_value == "all" else [providers_value]
    expected = CORE.union(*(entry_points(REPO / "providers" / name) for name in chosen))
    assert providers_listed(built.bin("routectl")) == expected
    assert "example" not in providers_listed(built.bin("routectl"))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(
            EXAMPLE, "providers/template is the example to copy for a new plugin", id="example"
        ),
        pytest.param("nosuch", "unknown provider 'nosuch'", id="unknown"),
    ],
)
def test_the_example_and_unknown_plugins_are_refused(
    value: str, message: str, tmp_path: Path
) -> None:
    """PROVIDERS naming the example or a plugin that is not there stops the build, saying why
    (the step that reads PROVIDERS refuses before pip runs, so no install is needed here)."""
    with pytest.raises(ReplayError) as refused:
        replay(
            REPO,
            tmp_path,
            build_args={"PROVIDERS": value},
            wheelhouse=tmp_path,
            only_runs_using="PROVIDERS",
        )
    assert refused.value.returncode == 1
    assert message in refused.value.output

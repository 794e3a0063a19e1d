"""The example provider of ``docs/writing-a-provider.md`` works: it passes ProviderContract.

The guide's ```` ```python example ```` block is extracted, executed as a module, and run
through the same contract suite every real plugin passes; its packaging snippet is checked too.
Every test is a coroutine: for a plain ``def`` test, looptime 0.9 opens an event loop it never
closes, and its ResourceWarning fails a later test.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tomllib
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from routectl.errors import ConfigError, ProviderTerminalError, RouteAlreadyExistsError
from routectl.model import Route
from routectl.provider import RouteProvider
from routectl.testing.contract import ProviderContract

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "writing-a-provider.md"
_FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<code>.*?)^```\s*$", re.DOTALL | re.MULTILINE)


def _blocks(info: str) -> list[str]:
    """The code of every fenced block of the guide whose info string is ``info``."""
    text = GUIDE.read_text(encoding="utf-8")
    return [m["code"] for m in _FENCE.finditer(text) if m["info"].strip() == info]


def _load_example() -> types.ModuleType:
    """Execute the guide's example code as the module ``writing_a_provider_example``."""
    code = "\n".join(_blocks("python example"))
    module = types.ModuleType("writing_a_provider_example")
    module.__file__ = str(GUIDE)
    sys.modules[module.__name__] = module  # dataclasses and typing look modules up by name
    exec(compile(code, str(GUIDE), "exec"), module.__dict__)  # noqa: S102 -- our own docs
    return module


EXAMPLE = _load_example()
JsonFileProvider = cast("Any", EXAMPLE).JsonFileProvider


def _cloud(
    path: Path, instances: dict[str, str], routes: list[dict[str, str]] | None = None
) -> None:
    path.write_text(json.dumps({"instances": instances, "routes": routes or []}))


class TestGuideExampleContract(ProviderContract):
    """The guide's JSON-file provider passes the contract, faults included."""

    _path: Path

    @pytest.fixture
    async def provider(self, tmp_path: Path) -> AsyncIterator[RouteProvider]:
        """A provider over a fresh cloud file whose instances run this suite's nodes."""
        self._path = tmp_path / "cloud.json"
        _cloud(self._path, {"i-1": self.nodes[0], "i-2": self.nodes[1]})
        provider: RouteProvider = JsonFileProvider(
            cluster_name="contract", options={"path": str(self._path)}
        )
        yield provider
        await provider.aclose()

    async def inject_fault(self, provider: RouteProvider, kind: str) -> None:
        """As the guide shows: a vanished file is transient, a corrupt one terminal."""
        del provider
        if kind == "transient":
            self._path.unlink()
        elif kind == "terminal":
            self._path.write_text("{not json")
        else:
            raise NotImplementedError


async def test_example_leaves_other_clusters_alone(tmp_path: Path) -> None:
    """Another cluster's routes are not listed, not replaced, and not deleted."""
    path = tmp_path / "cloud.json"
    theirs = {"name": "x", "cluster": "other", "destination": "10.244.1.0/24", "instance": "i-1"}
    _cloud(path, {"i-1": "node-a"}, [theirs])
    provider = JsonFileProvider(cluster_name="prod", options={"path": str(path)})
    assert list(await provider.list_routes()) == []
    with pytest.raises(ProviderTerminalError, match="cluster other"):
        await provider.create_route(
            Route(target_node="node-a", destination_cidr="10.244.1.0/24"), name_hint="u"
        )
    assert json.loads(path.read_text())["routes"] == [theirs]


async def test_example_reports_blackholes_and_conflicts(tmp_path: Path) -> None:
    """A route to a vanished instance is a blackhole without target; another target conflicts."""
    path = tmp_path / "cloud.json"
    gone = {"name": "y", "cluster": "prod", "destination": "10.244.2.0/24", "instance": "i-9"}
    _cloud(path, {"i-1": "node-a"}, [gone])
    provider = JsonFileProvider(cluster_name="prod", options={"path": str(path)})
    (listed,) = await provider.list_routes()
    assert (listed.target_node, listed.blackhole) == ("", True)
    with pytest.raises(RouteAlreadyExistsError):
        await provider.create_route(
            Route(target_node="node-a", destination_cidr="10.244.2.0/24"), name_hint="u"
        )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"path": "x", "zone": "a"}, "unknown option(s) zone; known:", id="unknown"),
        pytest.param({}, "missing required option path", id="missing"),
        pytest.param({"path": "x", "max-routes": "0"}, "max-routes='0'", id="range"),
    ],
)
async def test_example_validates_options(options: dict[str, str], message: str) -> None:
    """Bad options are one-line ConfigErrors naming the option."""
    with pytest.raises(ConfigError) as caught:
        JsonFileProvider(cluster_name="prod", options=options)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


async def test_example_declares_conformance() -> None:
    """The example ends with the static conformance line the guide explains."""
    assert "_: ProviderFactory = JsonFileProvider" in "\n".join(_blocks("python example"))


async def test_packaging_snippet_registers_the_entry_point() -> None:
    """The guide's pyproject snippet is valid TOML registering the provider in routectl's group."""
    (snippet,) = _blocks("toml")
    project = tomllib.loads(snippet)["project"]
    assert project["entry-points"]["routectl.providers"] == {
        "jsonfile": "routectl_jsonfile:JsonFileProvider"
    }
    assert "routectl" in project["dependencies"]


async def test_example_type_checks_strictly(tmp_path: Path) -> None:
    """mypy (the repository's strict settings) accepts the example, conformance line included."""
    from mypy import api  # noqa: PLC0415 -- heavy; only this test needs it

    source = tmp_path / "writing_a_provider_example.py"
    source.write_text("\n".join(_blocks("python example")), encoding="utf-8")
    config = GUIDE.parents[1] / "pyproject.toml"
    stdout, stderr, status = await asyncio.to_thread(
        api.run,
        [
            "--config-file",
            str(config),
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            "--no-incremental",
            str(source),
        ],
    )
    assert status == 0, stdout + stderr

"""docs/design.md describes the house as it is: every module, and the layers as enforced."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DESIGN = (REPO / "docs" / "design.md").read_text()


def _section(title: str) -> str:
    start = DESIGN.index(f"## {title}")
    end = DESIGN.find("\n## ", start + 1)
    return DESIGN[start : end if end > 0 else None]


def _layers() -> list[list[str]]:
    """The import-linter layers, each a list of module names (parentheses dropped)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["type"] == "layers" and "containers" not in c]
    return [[name.strip().strip("()") for name in layer.split("|")] for layer in contract["layers"]]


def test_every_module_of_the_product_is_described() -> None:
    """Each module and package at the top of routectl/ has a row in the modules table."""
    table = _section("5. Modules")
    described = set(re.findall(r"^\| `([a-z_]+)` \|", table, flags=re.MULTILINE))
    package = REPO / "routectl"
    present = {p.stem for p in package.glob("*.py") if not p.stem.startswith("__")}
    present |= {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    assert present - described == set(), "add these modules to docs/design.md §5"
    assert described - present == set(), "these modules are gone: remove them from §5"


# The packages whose modules §5 describes one by one (the test kit is the guide's business).
_PACKAGES = (
    "config",
    "plan",
    "cloud",
    "kube",
    "observe",
    "sync",
    "ipam.core",
    "ipam.edge",
    "process",
    "cli",
)


def test_every_module_inside_the_packages_is_described() -> None:
    """Each module of each package has a row naming its package, and no row names a ghost."""
    table = _section("5. Modules")
    rows = re.findall(r"^\| `([a-z_.]+)` \| ((?:`[a-z_]+`(?:, )?)+) \|", table, flags=re.MULTILINE)
    described = {(pkg, name) for pkg, cell in rows for name in re.findall(r"`([a-z_]+)`", cell)}
    present = set()
    for pkg in _PACKAGES:
        folder = REPO / "routectl" / pkg.replace(".", "/")
        assert (folder / "__init__.py").exists(), f"routectl/{pkg} is not a package"
        present |= {(pkg, p.stem) for p in folder.glob("*.py") if not p.stem.startswith("__")}
    assert present - described == set(), "add these modules to docs/design.md §5"
    assert described - present == set(), "these modules are gone: remove them from §5"


def test_each_folder_is_a_layer_or_a_part_of_one() -> None:
    """No product module sits outside the packages but the plugin SDK's few."""
    sdk = {"model", "errors", "cidr", "provider", "plugin_options", "ratelimit", "answers"}
    loose = {p.stem for p in (REPO / "routectl").glob("*.py") if not p.stem.startswith("__")}
    assert loose == sdk, "a module at the top of routectl/ that is not the plugin SDK's"


def test_layer_picture_matches_the_enforced_contract() -> None:
    """§4 names every layer of pyproject.toml's contract, in the same order."""
    picture = _section("4. Layers")
    block = picture[picture.index("```") : picture.rindex("```")]
    lines = block.splitlines()

    def line_of(module: str) -> int:
        for number, line in enumerate(lines):
            if module in set(re.findall(r"[\w.]+", line)):
                return number
        raise AssertionError(f"{module} is missing from the layer picture in §4")

    positions = [max(line_of(module) for module in layer) for layer in _layers()]
    assert positions == sorted(positions), "§4 lists the layers in another order"

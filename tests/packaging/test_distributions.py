"""The product and its machinery ship apart: the routectl wheel holds neither the fake API
server nor the simulator, and needs neither looptime nor rich; routectl-sim adds the
``simulate`` command through an entry point."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from routectl.cli.main import COMMANDS_GROUP, main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def product_wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The routectl wheel, built from this checkout by pip."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(  # noqa: S603 -- fixed arguments: this interpreter's pip, this checkout
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = out.glob("routectl-*.whl")
    return zipfile.ZipFile(wheel)


@pytest.mark.slow
def test_product_wheel_holds_no_machinery(product_wheel: zipfile.ZipFile) -> None:
    """Only routectl's own package is in the wheel, without the fake API server or simulator."""
    names = product_wheel.namelist()
    packages = {name.split("/")[0] for name in names if not name.startswith("routectl-")}
    assert packages == {"routectl"}
    assert not [n for n in names if "apiserver" in n or "simulat" in n]
    assert "routectl/testing/contract.py" in names  # plugin authors' kit stays
    licences = [n for n in names if n.endswith("LICENSE")]
    assert licences, "the wheel carries the licence text"
    assert b"Apache License" in product_wheel.read(licences[0])


def test_product_wheel_needs_no_test_libraries(product_wheel: zipfile.ZipFile) -> None:
    """The product's requirements name neither looptime (a test clock) nor rich."""
    (metadata,) = [n for n in product_wheel.namelist() if n.endswith(".dist-info/METADATA")]
    requires = [
        line.split(":", 1)[1].strip().lower()
        for line in product_wheel.read(metadata).decode().splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    assert requires  # the parse found the requirements
    assert not [r for r in requires if r.startswith(("looptime", "rich", "matplotlib"))]


def test_simulate_comes_from_the_sim_distribution() -> None:
    """``routectl simulate`` is registered by routectl-sim, under routectl's command group."""
    (entry,) = importlib.metadata.entry_points(group=COMMANDS_GROUP, name="simulate")
    assert entry.dist is not None
    assert entry.dist.name == "routectl-sim"


def test_playground_comes_from_the_sim_distribution() -> None:
    """``routectl playground`` is registered by routectl-sim too."""
    (entry,) = importlib.metadata.entry_points(group=COMMANDS_GROUP, name="playground")
    assert entry.dist is not None
    assert entry.dist.name == "routectl-sim"


def test_playground_without_the_sim_distribution_says_where_it_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without routectl-sim installed, ``routectl playground`` exits 2 naming what to install."""
    with pytest.raises(SystemExit) as exited:
        main(["playground"], plugins={})
    assert exited.value.code == 2
    assert "routectl-sim" in capsys.readouterr().err


def test_simulate_without_the_sim_distribution_says_where_it_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without routectl-sim installed, ``routectl simulate`` exits 2 naming what to install."""
    with pytest.raises(SystemExit) as exited:
        main(["simulate", "--nodes", "5"], plugins={})
    assert exited.value.code == 2
    assert "routectl-sim" in capsys.readouterr().err


def test_routectl_run_imports_no_other_distributions_command() -> None:
    """``routectl run`` starts without importing the commands other distributions add
    (``routectl simulate`` would bring its fake API server along); ``routectl --help``
    still lists them."""
    code = (
        "import sys\n"
        "from routectl.cli.main import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(any(m.startswith('routectl_sim') for m in sys.modules))\n"
    )
    for argv, loaded in ((["run", "--help"], "False"), (["--help"], "True")):
        shown = subprocess.run(  # noqa: S603 -- this interpreter, fixed arguments
            [sys.executable, "-c", code, *argv], check=True, capture_output=True, text=True
        ).stdout.split()
        assert shown[-1] == loaded, argv


def test_routectl_run_imports_no_node_ipam_nor_the_plan_preview() -> None:
    """Node IPAM (off by default) and ``routectl plan``'s preview are imported only by what
    uses them: what ``routectl run`` imports to start has neither."""
    code = (
        "import sys, routectl.cli.app, routectl.process.wiring\n"
        "print([m for m in sys.modules if m.startswith(('routectl.ipam', 'routectl.cli.preview'))])\n"
    )
    shown = subprocess.run(  # noqa: S603 -- this interpreter, fixed arguments
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert shown == "[]"

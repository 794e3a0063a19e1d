"""The guide and the template plugin are one source: every template file is in the guide, exactly.

``providers/template`` itself runs the contract in this suite (its tests are in pytest's
``testpaths``), and CI copies the guide's blocks into an empty directory and runs them as the
guide says (``scripts/check-template``), so the guide's code can never go stale.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_guide_shows_every_template_file_exactly() -> None:
    """scripts/guide_template.py check finds no difference between the guide and the files."""
    run = subprocess.run(  # noqa: S603 -- our own script
        [sys.executable, str(ROOT / "scripts" / "guide_template.py"), "check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr


def test_extracting_the_guide_gives_the_template(tmp_path: Path) -> None:
    """What a reader copies out of the guide is the template, file for file."""
    subprocess.run(  # noqa: S603 -- our own script
        [sys.executable, str(ROOT / "scripts" / "guide_template.py"), "extract", str(tmp_path)],
        check=True,
    )
    extracted = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert "pyproject.toml" in extracted
    for name in extracted:
        original = ROOT / "providers" / "template" / name
        assert (tmp_path / name).read_text() == original.read_text(), name

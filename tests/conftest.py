"""Cross-cutting fixtures only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from routectl.testing.looptime_hook import pytest_pyfunc_call

__all__ = ["FIXTURES", "load_fixture", "pytest_pyfunc_call"]

FIXTURES = Path(__file__).parent / "fixtures"


def load_fixture(*parts: str) -> Any:
    """Parse a JSON fixture under ``tests/fixtures``."""
    return json.loads(FIXTURES.joinpath(*parts).read_text())

"""Cross-cutting fixtures only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def load_fixture(*parts: str) -> Any:
    """Parse a JSON fixture under ``tests/fixtures``."""
    return json.loads(FIXTURES.joinpath(*parts).read_text())


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    """Keep looptime's hook away from synchronous tests.

    looptime asks the ``event_loop_policy`` fixture for "the" loop even for a sync test,
    which creates a loop nobody closes; under ``filterwarnings = error`` its ResourceWarning
    later fails an unrelated test. A sync test never uses that fixture, so hide it.
    """
    if pyfuncitem.get_closest_marker("asyncio") is None:
        pyfuncitem.funcargs.pop("event_loop_policy", None)
    return (yield)

"""Keep looptime's hook away from synchronous tests (as routectl's own tests/conftest.py does).

looptime asks the ``event_loop_policy`` fixture for "the" loop even for a sync test, which
creates a loop nobody closes; under ``filterwarnings = error`` its ResourceWarning later
fails an unrelated test. A sync test never uses that fixture, so hide it.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    """Hide ``event_loop_policy`` from tests that are not coroutines."""
    if pyfuncitem.get_closest_marker("asyncio") is None:
        pyfuncitem.funcargs.pop("event_loop_policy", None)
    return (yield)

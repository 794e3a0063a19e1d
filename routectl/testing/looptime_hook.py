"""A pytest hook for test suites that use looptime: keep it away from synchronous tests.

looptime asks the ``event_loop_policy`` fixture for "the" loop even for a sync test, which
creates a loop nobody closes; under ``filterwarnings = error`` its ResourceWarning later fails
an unrelated test. A sync test never uses that fixture, so the hook hides it. Import it into
a ``conftest.py``: ``from routectl.testing.looptime_hook import pytest_pyfunc_call``.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["pytest_pyfunc_call"]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    """Drop ``event_loop_policy`` from a synchronous test's arguments."""
    if pyfuncitem.get_closest_marker("asyncio") is None:
        pyfuncitem.funcargs.pop("event_loop_policy", None)
    return (yield)

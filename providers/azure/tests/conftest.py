"""The looptime hook (routectl.testing.looptime_hook), and the rules of the contract this
plugin does not keep yet: marked as strict expected failures, not hidden (the day one
passes, its mark must go).

"""

from pathlib import Path

import pytest

from routectl.testing.looptime_hook import pytest_pyfunc_call

__all__ = ["pytest_collection_modifyitems", "pytest_pyfunc_call"]

KNOWN: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the rules above on this plugin's contract classes (the hook sees every item)."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents and "Contract" in item.nodeid and item.name in KNOWN:
            item.add_marker(pytest.mark.xfail(strict=True, reason=KNOWN[item.name]))

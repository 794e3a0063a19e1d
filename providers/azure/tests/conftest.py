"""The looptime hook (routectl.testing.looptime_hook), and the rules of the contract this
plugin does not keep yet: marked as strict expected failures, not hidden (the day one
passes, its mark must go).

* A malformed answer must be one error naming the field: the plugin has no hook to feed its
  fake one yet (it reads ARM's JSON through the SDK's models).
"""

from pathlib import Path

import pytest

from routectl.testing.looptime_hook import pytest_pyfunc_call

__all__ = ["pytest_collection_modifyitems", "pytest_pyfunc_call"]

KNOWN = {
    "test_a_malformed_answer_is_one_error_naming_the_field": (
        "no inject_malformed_answer hook for the fake ARM server yet"
    ),
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the rules above on this plugin's contract classes (the hook sees every item)."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents and "Contract" in item.nodeid and item.name in KNOWN:
            item.add_marker(pytest.mark.xfail(strict=True, reason=KNOWN[item.name]))

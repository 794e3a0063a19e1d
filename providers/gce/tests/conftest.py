"""The looptime hook (routectl.testing.looptime_hook), and the rules of the contract this
plugin does not keep yet: marked as strict expected failures, not hidden (the day one
passes, its mark must go).

* "Already exists" must name the route that holds the destination (``holder``).
* An error on any request of a call, and concurrent calls on one instance: a create retried
  while its insert operation still runs meets its own route name ("taken ... waiting for its
  delete") instead of adopting it; to be pinned down.
* A create cancelled before its first request: the shared look-up it opened goes on, and the
  next create on the instance waits for it (bounded by the request's own timeout).
"""

from pathlib import Path

import pytest

from routectl.testing.looptime_hook import pytest_pyfunc_call

__all__ = ["pytest_collection_modifyitems", "pytest_pyfunc_call"]

_RETRY = "a retried create meets its own running insert's route name; to be pinned down"
KNOWN = {
    "test_create_over_another_nodes_route_raises_already_exists": (
        "the plugin's RouteAlreadyExistsError names no holder yet"
    ),
    "test_concurrent_calls_on_one_instance_do_not_disturb_each_other": _RETRY,
    "test_a_call_cancelled_half_way_leaves_cloud_and_instance_usable": (
        "a look-up shared by concurrent creates goes on after the create that opened it is "
        "cancelled (by design: the others wait for it); a next create joins it and waits as "
        "long as that request does"
    ),
    **{
        f"test_an_error_on_any_request_of_a_call_keeps_its_meaning[{kind}-{op}]": _RETRY
        for kind in ("throttled", "transient")
        for op in ("list", "create", "delete")
    },
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the rules above on this plugin's contract classes (the hook sees every item)."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents and "Contract" in item.nodeid and item.name in KNOWN:
            item.add_marker(pytest.mark.xfail(strict=True, reason=KNOWN[item.name]))

"""The looptime hook (routectl.testing.looptime_hook), and the rules of the contract this
plugin does not keep yet: marked as strict expected failures, not hidden (the day one
passes, its mark must go).

* "Already exists" must name the route that holds the destination (``holder``): the plugin
  raises RouteAlreadyExistsError without it, so routectl spends a listing to check.
* A Node whose machine is gone: the plugin writes the route without checking the next hop.
"""

from pathlib import Path

import pytest

from routectl.testing.looptime_hook import pytest_pyfunc_call

__all__ = ["pytest_collection_modifyitems", "pytest_pyfunc_call"]

KNOWN = {
    "test_create_over_another_nodes_route_raises_already_exists": (
        "the plugin's RouteAlreadyExistsError names no holder yet"
    ),
    "test_a_node_without_a_machine_is_a_transient_error": (
        "a route to a Node without a NIC is written, not refused as transient"
    ),
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the rules above on this plugin's contract classes (the hook sees every item)."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents and "Contract" in item.nodeid and item.name in KNOWN:
            item.add_marker(pytest.mark.xfail(strict=True, reason=KNOWN[item.name]))

"""Rules of the contract this plugin does not keep yet (issue 22): marked, not hidden.

* An error injected on the last request of a create or a delete does not fail the call:
  the request is one openstacksdk sends and recovers from on its own (to be pinned down).
* A call cancelled half-way keeps running in its worker thread (``asyncio.to_thread``
  cannot be cancelled), so its write lands after the caller gave up.

Each is an expected failure, strict: the day it passes, the mark must go.
"""

from __future__ import annotations

import pytest

KNOWN = {
    "test_a_call_cancelled_half_way_leaves_cloud_and_instance_usable": (
        "a cancelled SDK call keeps running in its thread and writes later"
    ),
    **{
        f"test_an_error_on_any_request_of_a_call_keeps_its_meaning[{kind}-{op}]": (
            "an error on the SDK's last request of a create or delete is recovered by the SDK"
        )
        for kind in ("throttled", "transient")
        for op in ("create", "delete")
    },
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the rules above as expected failures of the openstack contract classes."""
    for item in items:
        reason = KNOWN.get(item.name)
        if reason is not None and "Contract" in item.nodeid:
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))

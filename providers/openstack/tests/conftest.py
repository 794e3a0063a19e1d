"""Rules of the contract this plugin does not keep yet (issue 22): marked, not hidden.

* An error injected on the last request of a create or a delete does not fail the call:
  the request is one openstacksdk sends and recovers from on its own (to be pinned down).
* A call cancelled half-way keeps running in its worker thread (``asyncio.to_thread``
  cannot be cancelled), so its write lands after the caller gave up.

The first is an expected failure, strict: the day it passes, the mark must go. The second
is skipped, with that reason: it fails only after minutes of waiting for the thread.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SKIPPED = {
    "test_a_call_cancelled_half_way_leaves_cloud_and_instance_usable": (
        "known defect: a cancelled SDK call keeps running in its thread and writes later; "
        "the rule fails only after minutes of waiting, so it is not run here"
    ),
}
KNOWN = {
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
    here = Path(__file__).parent
    for item in items:
        # The hook sees the whole session's items: only this plugin's contract is marked.
        if "Contract" not in item.nodeid or here not in item.path.parents:
            continue
        if item.name in SKIPPED:
            item.add_marker(pytest.mark.skip(reason=SKIPPED[item.name]))
        elif item.name in KNOWN:
            item.add_marker(pytest.mark.xfail(strict=True, reason=KNOWN[item.name]))

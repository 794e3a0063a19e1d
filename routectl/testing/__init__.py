"""Test doubles that ship with routectl: a simulated cloud and the provider contract.

* :class:`FakeCloud` / :class:`FakeProvider`: the ``fake`` provider plugin and its cloud.
* ``routectl.testing.contract.ProviderContract``: the pytest suite every provider passes
  (imported from its own module, because it needs pytest).
"""

from __future__ import annotations

from routectl.testing.cloud import CloudCall, CloudSettings, FakeCloud, FakeProvider, Fault

__all__ = ["CloudCall", "CloudSettings", "FakeCloud", "FakeProvider", "Fault"]

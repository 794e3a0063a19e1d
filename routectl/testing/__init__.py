"""Test doubles that ship with routectl for plugin authors: a simulated cloud and a contract.

* :class:`FakeCloud` / :class:`FakeProvider`: the ``fake`` provider plugin and its cloud.
* ``routectl.testing.contract.ProviderContract``: the pytest suite every provider passes
  (imported from its own module, because it needs pytest).

The fake kube-apiserver and the simulator are not here: they are the ``routectl-sim``
distribution (``sim/`` in the repository), which the product does not depend on.
"""

from __future__ import annotations

from routectl.testing.cloud import CloudCall, CloudSettings, FakeCloud, Fault
from routectl.testing.fake_provider import FakeProvider
from routectl.testing.table import RouteChange

__all__ = [
    "CloudCall",
    "CloudSettings",
    "FakeCloud",
    "FakeProvider",
    "Fault",
    "RouteChange",
]

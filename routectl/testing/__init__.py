"""Test doubles that ship with routectl: a simulated cloud, a fake API server, a contract.

* :class:`FakeCloud` / :class:`FakeProvider`: the ``fake`` provider plugin and its cloud.
* :class:`FakeApiServer`: a stateful kube-apiserver over real HTTP (``routectl.testing.apiserver``).
* ``routectl.testing.contract.ProviderContract``: the pytest suite every provider passes
  (imported from its own module, because it needs pytest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from routectl.testing.cloud import (
    CloudCall,
    CloudSettings,
    FakeCloud,
    FakeProvider,
    Fault,
    RouteChange,
)

if TYPE_CHECKING:
    from routectl.testing.apiserver import FakeApiServer

__all__ = [
    "CloudCall",
    "CloudSettings",
    "FakeApiServer",
    "FakeCloud",
    "FakeProvider",
    "Fault",
    "RouteChange",
]


def __getattr__(name: str) -> Any:
    if name == "FakeApiServer":
        from routectl.testing.apiserver import FakeApiServer  # noqa: PLC0415 -- optional, heavy

        return FakeApiServer
    raise AttributeError(name)

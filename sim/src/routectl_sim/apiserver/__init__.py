"""A stateful kube-apiserver stand-in over real HTTP, for tests, plugins and the simulator.

``FakeApiServer`` keeps Nodes, Leases and Events with one global resourceVersion and
answers LIST, WATCH, GET, POST, PUT, PATCH and DELETE with the status codes, ``Status``
bodies and stream framing recorded from kube-apiserver v1.36. The modules below each own
one concept; this package only re-exports the public names.
"""

from __future__ import annotations

from routectl_sim.apiserver.server import FakeApiServer, RecordedRequest
from routectl_sim.apiserver.status import ApiError

__all__ = ["ApiError", "FakeApiServer", "RecordedRequest"]

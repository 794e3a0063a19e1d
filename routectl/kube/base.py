"""What every group of API calls shares: the paced HTTP client and the timeout.

Promises: every request carries a timeout; answers are read raw (parsed with orjson by
:mod:`routectl.kube.transport`, or decoded into compact records by :mod:`routectl.kube.nodes`).
"""

from __future__ import annotations

import aiohttp

from routectl.kube.stream import MAX_EVENT_BYTES
from routectl.kube.transport import PacedApiClient

__all__ = ["ApiBase"]

CORE = "/api/v1"
COORDINATION = "/apis/coordination.k8s.io/v1"
NETWORKING = "/apis/networking.k8s.io/v1"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"


class ApiBase:
    """The paced HTTP client the calls go through."""

    def __init__(
        self,
        api: PacedApiClient,
        *,
        request_timeout: float = 30.0,
        max_event_bytes: int = MAX_EVENT_BYTES,
    ) -> None:
        self.api = api
        self.request_timeout = request_timeout
        self.max_event_bytes = max_event_bytes

    def _timeout(self, total: float | None = None) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=total or self.request_timeout)

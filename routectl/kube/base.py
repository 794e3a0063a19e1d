"""What every group of API calls shares: the API client, the typed APIs and the timeout.

Promises: every request carries a timeout (the library sets none by default); responses are
read raw (``_preload_content=False``, parsed with orjson by :mod:`routectl.kube.transport`).
"""

from __future__ import annotations

from typing import Any

import aiohttp
from kubernetes_asyncio import client

from routectl.kube.stream import MAX_EVENT_BYTES

__all__ = ["ApiBase"]


class ApiBase:
    """The API client and the typed APIs the calls go through."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        request_timeout: float = 30.0,
        max_event_bytes: int = MAX_EVENT_BYTES,
    ) -> None:
        self.api = api
        self.request_timeout = request_timeout
        self.max_event_bytes = max_event_bytes
        # Typed as Any: with _preload_content=False these return raw aiohttp responses,
        # not the models their signatures promise.
        self._core: Any = client.CoreV1Api(api)
        self._coordination: Any = client.CoordinationV1Api(api)
        self._authentication: Any = client.AuthenticationV1Api(api)
        self._authorization: Any = client.AuthorizationV1Api(api)
        self._networking: Any = client.NetworkingV1Api(api)

    def _timeout(self, total: float | None = None) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=total or self.request_timeout)

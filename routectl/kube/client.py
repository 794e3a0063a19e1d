"""The Kubernetes API client: the few calls routectl makes, as plain HTTP over aiohttp.

Configuration and authentication are read by :mod:`routectl.kube.connection` (kubeconfig
or in-cluster, token rotation included) without kubernetes-asyncio's generated client,
whose import alone costs seconds of CPU and some 40 MB. Responses are parsed with orjson
(Nodes into compact records): the typed models cost 0.4-0.8 ms per Node. Every
request carries a timeout (the library sets none by default), and every failure leaves
this module as a :class:`~routectl.errors.KubeError` (see :mod:`routectl.kube.transport`,
which also paces and observes each request; watch streams are framed by
:mod:`routectl.kube.stream`). The calls are grouped by resource: :mod:`.nodes`,
:mod:`.leases`, :mod:`.records` (Events and access reviews).
"""

from __future__ import annotations

from pathlib import Path

from routectl.errors import ConfigError
from routectl.kube import connection
from routectl.kube.leases import LeaseCalls
from routectl.kube.nodes import NodeCalls, NodeListing, NodeViews
from routectl.kube.records import EventCalls, ReviewCalls
from routectl.kube.transport import PacedApiClient, Pacing, RequestObserver

__all__ = ["KubeClient", "NodeListing", "NodeViews", "Pacing", "RequestObserver"]


class KubeClient(NodeCalls, LeaseCalls, EventCalls, ReviewCalls):
    """The few API calls routectl makes, each with a timeout and typed errors."""

    @classmethod
    async def connect(
        cls,
        *,
        kubeconfig: str | None,
        request_timeout: float = 30.0,
        pacing: Pacing | None = None,
        observer: RequestObserver | None = None,
        flag: str = "--kubeconfig",
    ) -> KubeClient:
        """Configure from ``kubeconfig``, or from the pod's service account when it is None.

        ``pacing`` limits the requests (None: unlimited); ``observer`` hears of each; a bad
        file is a ConfigError naming ``flag``, the flag that gave it.
        """
        if kubeconfig and (missing := _not_a_file(kubeconfig)):
            raise ConfigError(f"{flag} {kubeconfig}: the file {missing}")
        api = PacedApiClient(
            await connection.load(kubeconfig, flag=flag), pacing=pacing, observer=observer
        )
        return cls(api, request_timeout=request_timeout)

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self.api.close()


def _not_a_file(path: str) -> str:
    """Why ``path`` cannot be read as a kubeconfig file, or "" when it is a file."""
    where = Path(path)
    if where.is_file():
        return ""
    return "is not a file" if where.exists() else "does not exist"

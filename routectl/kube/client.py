"""The Kubernetes API client: the few calls routectl makes, over kubernetes-asyncio.

Configuration and authentication are kubernetes-asyncio's (kubeconfig or in-cluster,
token rotation included). Responses are read raw (``_preload_content=False``) and parsed
with orjson: the typed models cost 0.4-0.8 ms per Node, far too much at scale. Every
request carries a timeout (the library sets none by default), and every failure leaves
this module as a :class:`~routectl.errors.KubeError` (see :mod:`routectl.kube.transport`,
which also paces and observes each request; watch streams are framed by
:mod:`routectl.kube.stream`). The calls are grouped by resource: :mod:`.nodes`,
:mod:`.leases`, :mod:`.records` (Events and access reviews).
"""

from __future__ import annotations

from pathlib import Path

from kubernetes_asyncio import client, config

from routectl.errors import ConfigError
from routectl.kube.leases import LeaseCalls
from routectl.kube.nodes import NodeCalls, NodeListing
from routectl.kube.records import EventCalls, ReviewCalls
from routectl.kube.transport import PacedApiClient, Pacing, RequestObserver, register_secrets

__all__ = ["KubeClient", "NodeListing", "Pacing", "RequestObserver"]


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
    ) -> KubeClient:
        """Configure from ``kubeconfig``, or from the pod's service account when it is None.

        ``pacing`` limits the requests (None: unlimited); ``observer`` hears of each.
        """
        cfg = client.Configuration()
        if kubeconfig and (missing := _not_a_file(kubeconfig)):
            # kubernetes-asyncio would say "Expected key current-context" of a missing file.
            raise ConfigError(f"--kubeconfig {kubeconfig}: the file {missing}")
        try:
            if kubeconfig:
                await config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
            else:
                config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        except Exception as exc:  # noqa: BLE001 -- any malformed file: one line, exit 2
            where = f"--kubeconfig {kubeconfig}" if kubeconfig else "in-cluster configuration"
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise ConfigError(f"{where}: cannot load Kubernetes configuration: {detail}") from None
        register_secrets(cfg)
        api = PacedApiClient(cfg, pacing=pacing, observer=observer)
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

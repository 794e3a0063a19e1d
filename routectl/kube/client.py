"""The Kubernetes API client: the few calls routectl makes, over kubernetes-asyncio.

Configuration and authentication are kubernetes-asyncio's (kubeconfig or in-cluster,
token rotation included). Responses are read raw (``_preload_content=False``) and parsed
with orjson: the typed models cost 0.4-0.8 ms per Node, far too much at scale. Every
request carries a timeout (the library sets none by default), and every failure leaves
this module as a :class:`~routectl.errors.KubeError` (see :mod:`routectl.kube.transport`,
which also paces and observes each request; watch streams are framed by
:mod:`routectl.kube.stream`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from kubernetes_asyncio import client, config

from routectl.errors import ConfigError, KubeError
from routectl.kube.stream import MAX_EVENT_BYTES, events
from routectl.kube.transport import (
    JsonObj,
    PacedApiClient,
    Pacing,
    RequestObserver,
    error,
    read_json,
    register_secrets,
    translated,
)

__all__ = ["KubeClient", "NodeListing", "Pacing", "RequestObserver"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NodeListing:
    """All Nodes at one resourceVersion (every page of a paginated list)."""

    items: list[JsonObj]
    resource_version: str


class KubeClient:
    """The few API calls routectl makes, each with a timeout and typed errors."""

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

    def _timeout(self, total: float | None = None) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=total or self.request_timeout)

    async def list_nodes(self, *, page_size: int = 500) -> NodeListing:
        """List every Node, page by page, as one consistent snapshot."""
        items: list[JsonObj] = []
        token: str | None = None
        resource_version = ""
        while True:
            with translated("list nodes"):
                kwargs: dict[str, Any] = {"limit": page_size}
                if token:
                    kwargs["_continue"] = token
                response = await self._core.list_node(
                    _preload_content=False, _request_timeout=self._timeout(), **kwargs
                )
                page = await read_json(response, what="list nodes")
            page_items = page.get("items") or []
            if not isinstance(page_items, list):
                raise KubeError("list nodes: the answer's items are not a list")
            items.extend(page_items)
            metadata = page.get("metadata") or {}
            if not isinstance(metadata, dict):
                raise KubeError("list nodes: the answer's metadata is not an object")
            resource_version = str(metadata.get("resourceVersion", resource_version))
            token = metadata.get("continue")
            if not token:
                return NodeListing(items=items, resource_version=resource_version)

    async def watch_nodes(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[JsonObj]:
        """Yield watch events after ``resource_version`` until the server ends the stream.

        An ERROR event raises (410 as ResourceVersionGoneError); a cut connection raises
        KubeError. A clean end (the server's timeout) just returns.
        """
        with translated("watch nodes"):
            response = await self._core.list_node(
                watch=True,
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=timeout_seconds,
                _preload_content=False,
                _request_timeout=aiohttp.ClientTimeout(
                    sock_connect=self.request_timeout, sock_read=timeout_seconds + 30
                ),
            )
            async with response:
                if response.status != 200:  # noqa: PLR2004 -- a watch answers 200 or fails
                    raise error(response.status, await response.read(), what="watch nodes")
                async for event in events(response.content, limit=self.max_event_bytes):
                    yield event

    async def patch_node_status(self, name: str, patch: JsonObj) -> None:
        """Strategic-merge PATCH of ``nodes/<name>/status``."""
        what = f"patch status of node {name}"
        with translated(what):
            response = await self._core.patch_node_status(
                name, patch, _preload_content=False, _request_timeout=self._timeout()
            )
            await read_json(response, what=what)

    async def create_event(self, event: JsonObj) -> JsonObj:
        """Create a core/v1 Event in its namespace (409 AlreadyExists if the name is taken)."""
        namespace = event["metadata"]["namespace"]
        with translated("create event"):
            response = await self._core.create_namespaced_event(
                namespace, event, _preload_content=False, _request_timeout=self._timeout()
            )
            return await read_json(response, what="create event")

    async def get_event(self, namespace: str, name: str) -> JsonObj:
        """Read a core/v1 Event."""
        with translated("get event"):
            response = await self._core.read_namespaced_event(
                name, namespace, _preload_content=False, _request_timeout=self._timeout()
            )
            return await read_json(response, what="get event")

    async def patch_event(self, namespace: str, name: str, patch: JsonObj) -> JsonObj:
        """Strategic-merge PATCH of a core/v1 Event (client-go's correlator's update)."""
        with translated("patch event"):
            response = await self._core.patch_namespaced_event(
                name, namespace, patch, _preload_content=False, _request_timeout=self._timeout()
            )
            return await read_json(response, what="patch event")

    async def review_token(self, token: str) -> JsonObj:
        """POST a TokenReview of ``token``; the review's status."""
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        with translated("review token"):
            response = await self._authentication.create_token_review(
                body, _preload_content=False, _request_timeout=self._timeout()
            )
            review = await read_json(response, what="review token")
        status = review.get("status")
        return status if isinstance(status, dict) else {}

    async def review_access(self, spec: JsonObj) -> JsonObj:
        """POST a SubjectAccessReview of ``spec``; the review's status."""
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        with translated("review access"):
            response = await self._authorization.create_subject_access_review(
                body, _preload_content=False, _request_timeout=self._timeout()
            )
            review = await read_json(response, what="review access")
        status = review.get("status")
        return status if isinstance(status, dict) else {}

    async def get_lease(self, namespace: str, name: str) -> JsonObj | None:
        """Read a Lease; None if it does not exist."""
        with translated("get lease"):
            response = await self._coordination.read_namespaced_lease(
                name, namespace, _preload_content=False, _request_timeout=self._timeout()
            )
            try:
                return await read_json(response, what="get lease")
            except KubeError as exc:
                if exc.status == 404:  # noqa: PLR2004 -- NotFound
                    return None
                raise

    async def create_lease(self, namespace: str, lease: JsonObj) -> JsonObj:
        """Create a Lease (409 AlreadyExists if someone was faster)."""
        with translated("create lease"):
            response = await self._coordination.create_namespaced_lease(
                namespace, lease, _preload_content=False, _request_timeout=self._timeout()
            )
            return await read_json(response, what="create lease")

    async def replace_lease(self, namespace: str, lease: JsonObj) -> JsonObj:
        """Replace a Lease; its resourceVersion makes this optimistic (409 Conflict)."""
        name = lease["metadata"]["name"]
        with translated("update lease"):
            response = await self._coordination.replace_namespaced_lease(
                name, namespace, lease, _preload_content=False, _request_timeout=self._timeout()
            )
            return await read_json(response, what="update lease")

    # -- node IPAM (routectl.allocation): the Node spec patch, claim Leases, ServiceCIDRs --

    async def patch_node(self, name: str, patch: JsonObj) -> JsonObj:
        """Strategic-merge PATCH of ``nodes/<name>`` (its spec); returns the Node."""
        what = f"patch node {name}"
        with translated(what):
            response = await self._core.patch_node(
                name, patch, _preload_content=False, _request_timeout=self._timeout()
            )
            return await read_json(response, what=what)

    async def list_leases(
        self, namespace: str, *, label_selector: str, page_size: int = 500
    ) -> list[JsonObj]:
        """Every Lease in ``namespace`` with the labels asked for, page by page."""
        items: list[JsonObj] = []
        token: str | None = None
        while True:
            with translated("list leases"):
                kwargs: dict[str, Any] = {"limit": page_size, "label_selector": label_selector}
                if token:
                    kwargs["_continue"] = token
                response = await self._coordination.list_namespaced_lease(
                    namespace, _preload_content=False, _request_timeout=self._timeout(), **kwargs
                )
                page = await read_json(response, what="list leases")
            found = page.get("items") or []
            if isinstance(found, list):
                items.extend(i for i in found if isinstance(i, dict))
            metadata = page.get("metadata")
            token = metadata.get("continue") if isinstance(metadata, dict) else None
            if not token:
                return items

    async def delete_lease(self, namespace: str, name: str) -> None:
        """Delete a Lease (404 if it is gone already)."""
        with translated("delete lease"):
            response = await self._coordination.delete_namespaced_lease(
                name, namespace, _preload_content=False, _request_timeout=self._timeout()
            )
            await read_json(response, what="delete lease")

    async def list_service_cidrs(self) -> list[JsonObj]:
        """Every networking.k8s.io/v1 ServiceCIDR (404 on clusters older than 1.33)."""
        with translated("list servicecidrs"):
            response = await self._networking.list_service_cidr(
                _preload_content=False, _request_timeout=self._timeout()
            )
            page = await read_json(response, what="list servicecidrs")
        found = page.get("items") or []
        return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []

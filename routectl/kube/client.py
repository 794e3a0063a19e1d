"""The Kubernetes API client: kubernetes-asyncio over HTTP, JSON read raw.

Configuration and authentication are kubernetes-asyncio's (kubeconfig or in-cluster,
token rotation included). Responses are read raw (``_preload_content=False``) and parsed
with orjson: the typed models cost 0.4-0.8 ms per Node, far too much at scale. Every
request carries a timeout (the library sets none by default), and every failure leaves
this module as a :class:`~routectl.errors.KubeError` (410 as
:class:`~routectl.errors.ResourceVersionGoneError`): aiohttp's exceptions never escape.

Watch events are split into lines here, not by aiohttp's line reader, whose limit (twice
the read buffer: 4 MiB with kubernetes-asyncio's) is smaller than a Node can get with many
images and annotations; an event larger than ``max_event_bytes`` (64 MiB) is a KubeError.
Messages never carry the request's headers, so the bearer token cannot leak through them.

Requests are paced as client-go paces them (``--kube-api-qps``/``--kube-api-burst``): a
token bucket that starts full; Lease requests have a bucket of their own, as the CCM's
leader-election client does, so a burst of status patches never delays a renewal. Each
request is reported to a :class:`RequestObserver` (method, code, seconds; and the time it
waited for a token), for client-go's ``rest_client_*`` metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

import aiohttp
import aiolimiter
import orjson
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from routectl.errors import ConfigError, KubeError, ResourceVersionGoneError
from routectl.redact import DEFAULT

HTTP_GONE = 410
MAX_EVENT_BYTES = 64 * 1024 * 1024
"""The largest watch event accepted; far above etcd's object limit (1.5 MiB by default)."""
JsonObj = dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NodeListing:
    """All Nodes at one resourceVersion (every page of a paginated list)."""

    items: list[JsonObj]
    resource_version: str


class RequestObserver(Protocol):
    """Receives a record of each API request (for metrics); must not block."""

    def api_request(self, *, method: str, host: str, code: str, seconds: float) -> None: ...

    def api_rate_limited(self, *, method: str, host: str, seconds: float) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Pacing:
    """client-go's client-side limit: ``qps`` sustained, ``burst`` at once."""

    qps: float
    burst: int


class _Bucket(aiolimiter.AsyncLimiter):
    """aiolimiter's bucket with its level rounded (see :mod:`routectl.budget`)."""

    def _leak(self) -> None:
        super()._leak()
        self._level = round(self._level, 9)


class PacedApiClient(client.ApiClient):
    """kubernetes-asyncio's ApiClient, each request paced and observed."""

    def __init__(
        self,
        configuration: client.Configuration,
        *,
        pacing: Pacing | None = None,
        observer: RequestObserver | None = None,
    ) -> None:
        super().__init__(configuration=configuration)
        self._pacing = pacing
        self._buckets: dict[str, _Bucket] = {}
        self._observer = observer
        self._host = str(urllib.parse.urlsplit(str(configuration.host)).netloc)

    def _bucket(self, url: str) -> _Bucket | None:
        if self._pacing is None:
            return None
        kind = "leases" if "/apis/coordination.k8s.io/" in url else "requests"
        if kind not in self._buckets:
            burst = self._pacing.burst
            self._buckets[kind] = _Bucket(burst, burst / self._pacing.qps)
        return self._buckets[kind]

    async def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        """Wait for a token, send, and report the answer's code and time."""
        loop = asyncio.get_running_loop()
        bucket = self._bucket(url)
        if bucket is not None:
            waited_from = loop.time()
            await bucket.acquire()
            if self._observer is not None:
                waited = loop.time() - waited_from
                self._observer.api_rate_limited(method=method, host=self._host, seconds=waited)
        started, code = loop.time(), "<error>"
        try:
            response = await super().request(method, url, *args, **kwargs)
            code = str(response.status)
        except ApiException as exc:
            code = str(exc.status)
            raise
        finally:
            if self._observer is not None:
                seconds = loop.time() - started
                self._observer.api_request(
                    method=method, host=self._host, code=code, seconds=seconds
                )
        return response


def _error(status: int, body: bytes, *, what: str) -> KubeError:
    try:
        parsed = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError:
        parsed = {}
    parsed = parsed if isinstance(parsed, dict) else {}
    reason = str(parsed.get("reason", ""))
    message = f"{what}: {status} {reason}: {parsed.get('message', '')}".rstrip(": ")
    kind = ResourceVersionGoneError if status == HTTP_GONE else KubeError
    return kind(message, status=status, reason=reason)


@contextlib.contextmanager
def _translated(what: str) -> Iterator[None]:
    """Turn the HTTP library's and kubernetes-asyncio's errors into KubeError."""
    try:
        yield
    except ApiException as exc:
        raw: object = exc.body
        body = raw if isinstance(raw, bytes) else str(raw or "").encode()
        raise _error(exc.status or 0, body, what=what) from None
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise KubeError(f"{what}: API server unreachable: {type(exc).__name__}") from None
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeError) as exc:
        # A proxy's HTML page, a body of the wrong shape: never a crash, a transient error.
        raise KubeError(f"{what}: unexpected answer: {type(exc).__name__}: {exc}") from None


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
        _register_secrets(cfg)
        api = PacedApiClient(cfg, pacing=pacing, observer=observer)
        return cls(api, request_timeout=request_timeout)

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self.api.close()

    def _timeout(self, total: float | None = None) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=total or self.request_timeout)

    async def _read(self, response: aiohttp.ClientResponse, *, what: str) -> JsonObj:
        async with response:
            body = await response.read()
            if not 200 <= response.status <= 299:  # noqa: PLR2004 -- HTTP success range
                raise _error(response.status, body, what=what)
        try:
            parsed = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            kind = response.headers.get("Content-Type", "no content type")
            raise KubeError(f"{what}: the answer is not JSON ({kind}); a proxy?") from None
        if not isinstance(parsed, dict):
            raise KubeError(f"{what}: the answer is not a JSON object")
        return parsed

    async def list_nodes(self, *, page_size: int = 500) -> NodeListing:
        """List every Node, page by page, as one consistent snapshot."""
        items: list[JsonObj] = []
        token: str | None = None
        resource_version = ""
        while True:
            with _translated("list nodes"):
                kwargs: dict[str, Any] = {"limit": page_size}
                if token:
                    kwargs["_continue"] = token
                response = await self._core.list_node(
                    _preload_content=False, _request_timeout=self._timeout(), **kwargs
                )
                page = await self._read(response, what="list nodes")
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
        with _translated("watch nodes"):
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
                    raise _error(response.status, await response.read(), what="watch nodes")
                async for line in _lines(response.content, limit=self.max_event_bytes):
                    if line.strip():
                        yield _watch_event(line)

    async def patch_node_status(self, name: str, patch: JsonObj) -> None:
        """Strategic-merge PATCH of ``nodes/<name>/status``."""
        what = f"patch status of node {name}"
        with _translated(what):
            response = await self._core.patch_node_status(
                name, patch, _preload_content=False, _request_timeout=self._timeout()
            )
            await self._read(response, what=what)

    async def create_event(self, event: JsonObj) -> JsonObj:
        """Create a core/v1 Event in its namespace (409 AlreadyExists if the name is taken)."""
        namespace = event["metadata"]["namespace"]
        with _translated("create event"):
            response = await self._core.create_namespaced_event(
                namespace, event, _preload_content=False, _request_timeout=self._timeout()
            )
            return await self._read(response, what="create event")

    async def get_event(self, namespace: str, name: str) -> JsonObj:
        """Read a core/v1 Event."""
        with _translated("get event"):
            response = await self._core.read_namespaced_event(
                name, namespace, _preload_content=False, _request_timeout=self._timeout()
            )
            return await self._read(response, what="get event")

    async def patch_event(self, namespace: str, name: str, patch: JsonObj) -> JsonObj:
        """Strategic-merge PATCH of a core/v1 Event (client-go's correlator's update)."""
        with _translated("patch event"):
            response = await self._core.patch_namespaced_event(
                name, namespace, patch, _preload_content=False, _request_timeout=self._timeout()
            )
            return await self._read(response, what="patch event")

    async def review_token(self, token: str) -> JsonObj:
        """POST a TokenReview of ``token``; the review's status."""
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        with _translated("review token"):
            response = await self._authentication.create_token_review(
                body, _preload_content=False, _request_timeout=self._timeout()
            )
            review = await self._read(response, what="review token")
        status = review.get("status")
        return status if isinstance(status, dict) else {}

    async def review_access(self, spec: JsonObj) -> JsonObj:
        """POST a SubjectAccessReview of ``spec``; the review's status."""
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        with _translated("review access"):
            response = await self._authorization.create_subject_access_review(
                body, _preload_content=False, _request_timeout=self._timeout()
            )
            review = await self._read(response, what="review access")
        status = review.get("status")
        return status if isinstance(status, dict) else {}

    async def get_lease(self, namespace: str, name: str) -> JsonObj | None:
        """Read a Lease; None if it does not exist."""
        with _translated("get lease"):
            response = await self._coordination.read_namespaced_lease(
                name, namespace, _preload_content=False, _request_timeout=self._timeout()
            )
            try:
                return await self._read(response, what="get lease")
            except KubeError as exc:
                if exc.status == 404:  # noqa: PLR2004 -- NotFound
                    return None
                raise

    async def create_lease(self, namespace: str, lease: JsonObj) -> JsonObj:
        """Create a Lease (409 AlreadyExists if someone was faster)."""
        with _translated("create lease"):
            response = await self._coordination.create_namespaced_lease(
                namespace, lease, _preload_content=False, _request_timeout=self._timeout()
            )
            return await self._read(response, what="create lease")

    async def replace_lease(self, namespace: str, lease: JsonObj) -> JsonObj:
        """Replace a Lease; its resourceVersion makes this optimistic (409 Conflict)."""
        name = lease["metadata"]["name"]
        with _translated("update lease"):
            response = await self._coordination.replace_namespaced_lease(
                name, namespace, lease, _preload_content=False, _request_timeout=self._timeout()
            )
            return await self._read(response, what="update lease")

    # -- node IPAM (routectl.allocation): the Node spec patch, claim Leases, ServiceCIDRs --

    async def patch_node(self, name: str, patch: JsonObj) -> JsonObj:
        """Strategic-merge PATCH of ``nodes/<name>`` (its spec); returns the Node."""
        what = f"patch node {name}"
        with _translated(what):
            response = await self._core.patch_node(
                name, patch, _preload_content=False, _request_timeout=self._timeout()
            )
            return await self._read(response, what=what)

    async def list_leases(
        self, namespace: str, *, label_selector: str, page_size: int = 500
    ) -> list[JsonObj]:
        """Every Lease in ``namespace`` with the labels asked for, page by page."""
        items: list[JsonObj] = []
        token: str | None = None
        while True:
            with _translated("list leases"):
                kwargs: dict[str, Any] = {"limit": page_size, "label_selector": label_selector}
                if token:
                    kwargs["_continue"] = token
                response = await self._coordination.list_namespaced_lease(
                    namespace, _preload_content=False, _request_timeout=self._timeout(), **kwargs
                )
                page = await self._read(response, what="list leases")
            found = page.get("items") or []
            if isinstance(found, list):
                items.extend(i for i in found if isinstance(i, dict))
            metadata = page.get("metadata")
            token = metadata.get("continue") if isinstance(metadata, dict) else None
            if not token:
                return items

    async def delete_lease(self, namespace: str, name: str) -> None:
        """Delete a Lease (404 if it is gone already)."""
        with _translated("delete lease"):
            response = await self._coordination.delete_namespaced_lease(
                name, namespace, _preload_content=False, _request_timeout=self._timeout()
            )
            await self._read(response, what="delete lease")

    async def list_service_cidrs(self) -> list[JsonObj]:
        """Every networking.k8s.io/v1 ServiceCIDR (404 on clusters older than 1.33)."""
        with _translated("list servicecidrs"):
            response = await self._networking.list_service_cidr(
                _preload_content=False, _request_timeout=self._timeout()
            )
            page = await self._read(response, what="list servicecidrs")
        found = page.get("items") or []
        return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []


def _register_secrets(cfg: client.Configuration) -> None:
    """Tell the log and Event redaction the API token and client key (by value, any form)."""
    for value in (cfg.api_key or {}).values():
        DEFAULT.add(str(value).removeprefix("Bearer ").strip())


async def _lines(content: aiohttp.StreamReader, *, limit: int) -> AsyncIterator[bytes]:
    """The newline-separated lines of ``content``, each at most ``limit`` bytes long.

    The last line may lack its newline. Each chunk is searched once, so a line of many
    megabytes costs linear time.
    """
    pending = bytearray()
    async for chunk in content.iter_any():
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if len(pending) + end - start > limit:
                raise _too_large(limit)
            pending += chunk[start:end]
            yield bytes(pending)
            pending.clear()
            start = end + 1
        pending += chunk[start:]
        if len(pending) > limit:
            raise _too_large(limit)
    if pending:
        yield bytes(pending)


def _too_large(limit: int) -> KubeError:
    return KubeError(f"watch nodes: an event is larger than {limit} bytes; not read")


def _watch_event(line: bytes) -> JsonObj:
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise KubeError("watch nodes: malformed event line") from None
    if not isinstance(event, dict):
        raise KubeError("watch nodes: malformed event")
    obj = event.get("object")
    if not isinstance(obj, dict):
        raise KubeError("watch nodes: an event without an object")
    if event.get("type") == "ERROR":
        code = obj.get("code")
        raise _error(code if isinstance(code, int) else 0, orjson.dumps(obj), what="watch nodes")
    return event

"""The Compute Engine boundary: google-cloud-compute's REST clients, one request at a time.

Promises:

* every Compute API request is one job: the request budget routectl handed the provider is
  spent on the event loop first, then the SDK sends exactly one HTTP request in a worker
  thread of the provider's own pool (the SDK is synchronous; its retries are off, its pagers
  and operation pollers are not used, so nothing sends a second request unpaced);
* a request not yet sent when its coroutine is cancelled (routectl's call timeout, a lost
  lease) is never sent: the SDK's interceptor checks the job's cancellation flag in the
  worker thread just before the request goes out. What remains is one request per job that
  was already on the wire: it may still reach the API after the cancellation (the residual
  window, one request wide);
* every SDK, HTTP or credentials exception leaves as an error of routectl's tree, chained:
  ``rateLimitExceeded``/``userRateLimitExceeded``, 429 and a 503 with ``Retry-After`` are
  throttling; ``quotaExceeded`` and 400/401/403 are terminal; other 5xx and lost connections
  are transient; an operation's error (``QUOTA_EXCEEDED``, ``RATE_LIMIT_EXCEEDED``, ...) the
  same by its code.

Credentials are found as the GCE CCM finds them: ``token-url`` (other than ``nil``) is the
CCM's AltTokenSource (POST ``token-body``, answer ``{"accessToken", "expireTime"}``);
otherwise google.auth's application default credentials (``GOOGLE_APPLICATION_CREDENTIALS``,
gcloud's, workload identity, the metadata server). Token requests go to the token endpoint,
not to the Compute API, and are not paced.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import datetime
import json
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import google.auth
import google.auth.compute_engine
import google.auth.credentials
import google.auth.exceptions
import google.auth.transport.requests
import requests
from google.api_core import exceptions as api_exceptions
from google.cloud import compute_v1
from google.cloud.compute_v1.services.global_operations.transports.rest import (
    GlobalOperationsRestInterceptor,
    GlobalOperationsRestTransport,
)
from google.cloud.compute_v1.services.instances.transports.rest import (
    InstancesRestInterceptor,
    InstancesRestTransport,
)
from google.cloud.compute_v1.services.routes.transports.rest import (
    RoutesRestInterceptor,
    RoutesRestTransport,
)
from google.protobuf import json_format  # type: ignore[import-untyped]

from routectl.errors import (
    MalformedAnswerError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
)
from routectl.provider import RequestBudget
from routectl.ratelimit import parse_retry_after
from routectl_gce.options import GceOptions

T = TypeVar("T")
SCOPES = ("https://www.googleapis.com/auth/compute",)
HTTP_BAD_REQUEST, HTTP_UNAUTHORIZED, HTTP_FORBIDDEN = 400, 401, 403
HTTP_NOT_FOUND, HTTP_CONFLICT, HTTP_TOO_MANY, HTTP_UNAVAILABLE = 404, 409, 429, 503
HTTP_SERVER_ERROR = 500
REQUEST_SECONDS = 30.0
"""Socket timeout of one request (a ``wait`` gets the option ``wait-seconds`` more)."""
THROTTLE_SECONDS = 10.0
"""The pause asked for when the API throttles without ``Retry-After`` (Compute's rate quotas
are per minute; a second would only spend the budget on more refusals)."""
RATE_REASONS = frozenset(
    {"rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED", "RESOURCE_EXHAUSTED"}
)
QUOTA_REASONS = frozenset({"quotaExceeded", "QUOTA_EXCEEDED"})


_CAUSE = 300
"""How much of a transport error's text a message carries (its host and reason)."""


class NotSentError(Exception):
    """The job was cancelled before its request went out: nothing was sent."""


@dataclasses.dataclass(slots=True)
class _Job:
    """One request's state, shared by the awaiting coroutine and the worker thread."""

    what: str
    cancelled: bool = False
    sent: bool = False
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def admit(self) -> None:
        """In the worker thread, just before the request goes out: refuse if cancelled."""
        with self.lock:
            if self.cancelled:
                raise NotSentError(f"{self.what}: cancelled before it was sent")
            if self.sent:  # the SDK tried a second request (a retry, a page): not paced
                raise NotSentError(f"{self.what}: a second request in one job was refused")
            self.sent = True

    def cancel(self) -> bool:
        """Mark the job cancelled; whether its request had already gone out."""
        with self.lock:
            self.cancelled = True
            return self.sent


_JOB: contextvars.ContextVar[_Job] = contextvars.ContextVar("routectl_gce_job")


def _admit() -> None:
    job = _JOB.get(None)
    if job is None:
        raise NotSentError("a Compute request outside a paced job was refused")
    job.admit()


class _RoutesGuard(RoutesRestInterceptor):
    def pre_list(self, request: Any, metadata: Sequence[Any]) -> tuple[Any, Sequence[Any]]:
        _admit()
        return request, metadata

    def pre_get(self, request: Any, metadata: Sequence[Any]) -> tuple[Any, Sequence[Any]]:
        _admit()
        return request, metadata

    def pre_insert(self, request: Any, metadata: Sequence[Any]) -> tuple[Any, Sequence[Any]]:
        _admit()
        return request, metadata

    def pre_delete(self, request: Any, metadata: Sequence[Any]) -> tuple[Any, Sequence[Any]]:
        _admit()
        return request, metadata


class _OperationsGuard(GlobalOperationsRestInterceptor):
    def pre_get(self, request: Any, metadata: Sequence[Any]) -> tuple[Any, Sequence[Any]]:
        _admit()
        return request, metadata

    def pre_wait(self, request: Any, metadata: Sequence[Any]) -> tuple[Any, Sequence[Any]]:
        _admit()
        return request, metadata


class _InstancesGuard(InstancesRestInterceptor):
    def pre_get(self, request: Any, metadata: Sequence[Any]) -> tuple[Any, Sequence[Any]]:
        _admit()
        return request, metadata

    def pre_list(self, request: Any, metadata: Sequence[Any]) -> tuple[Any, Sequence[Any]]:
        _admit()
        return request, metadata

    def pre_aggregated_list(
        self, request: Any, metadata: Sequence[Any]
    ) -> tuple[Any, Sequence[Any]]:
        _admit()
        return request, metadata


class AltTokenCredentials(google.auth.credentials.Credentials):
    """The GCE CCM's AltTokenSource: POST ``body`` to ``url`` as the instance's service
    account (the metadata server's token); ``{"accessToken", "expireTime"}`` comes back
    (cloud-provider-gcp ``providers/gce/token_source.go``)."""

    def __init__(self, url: str, body: str) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self._url = url
        self._body = body
        self._instance = google.auth.compute_engine.Credentials()  # type: ignore[no-untyped-call]

    def refresh(self, request: Any) -> None:
        """Fetch a token from the token URL."""
        headers = {"Content-Type": "application/json"}
        self._instance.before_request(  # type: ignore[no-untyped-call]
            request, "POST", self._url, headers
        )
        answer = request(url=self._url, method="POST", body=self._body.encode(), headers=headers)
        if answer.status != 200:  # noqa: PLR2004
            raise google.auth.exceptions.RefreshError(  # type: ignore[no-untyped-call]
                f"token-url answered {answer.status}"
            )
        try:
            token = json.loads(answer.data)
            self.token = str(token["accessToken"])
            expiry = datetime.datetime.fromisoformat(
                str(token["expireTime"]).replace("Z", "+00:00")
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise google.auth.exceptions.RefreshError(  # type: ignore[no-untyped-call]
                "token-url sent no token"
            ) from exc
        # google.auth compares expiry with a naive UTC datetime.
        self.expiry = expiry.astimezone(datetime.UTC).replace(tzinfo=None)


@dataclasses.dataclass(frozen=True, slots=True)
class Clients:
    """The SDK's clients over one set of credentials, and the project they work in."""

    routes: compute_v1.RoutesClient
    operations: compute_v1.GlobalOperationsClient
    instances: compute_v1.InstancesClient
    project: str


class GceCloud:
    """The SDK clients, opened on the first request; requests run in a pool of threads."""

    def __init__(
        self,
        options: GceOptions,
        *,
        budget: RequestBudget | None,
        credentials: google.auth.credentials.Credentials | None = None,
    ) -> None:
        self._options = options
        self._budget = budget
        self._credentials = credentials
        self._clients: Clients | None = None
        self._opening = threading.Lock()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=options.threads, thread_name_prefix="routectl-gce"
        )
        self._closed = False

    def _open(self) -> Clients:
        with self._opening:
            if self._clients is None:
                self._clients = self._connect()
            return self._clients

    def _connect(self) -> Clients:
        """Credentials as the CCM finds them, and one REST client per service."""
        project = self._options.project_id
        credentials = self._credentials
        if credentials is None and self._options.token_url:
            credentials = AltTokenCredentials(self._options.token_url, self._options.token_body)
        if credentials is None:
            credentials, found = google.auth.default(scopes=list(SCOPES))
            project = project or (found or "")
        if not project:
            raise ProviderTerminalError(
                "GCE: no project: set project-id in gce.conf (or --provider-option), or use "
                "credentials that name one"
            )
        endpoint = self._options.endpoint
        scheme = endpoint.split("://", 1)[0]
        common: dict[str, Any] = {
            "host": endpoint,
            "credentials": credentials,
            "url_scheme": scheme,
        }
        return Clients(
            routes=compute_v1.RoutesClient(
                transport=RoutesRestTransport(**common, interceptor=_RoutesGuard())
            ),
            operations=compute_v1.GlobalOperationsClient(
                transport=GlobalOperationsRestTransport(**common, interceptor=_OperationsGuard())
            ),
            instances=compute_v1.InstancesClient(
                transport=InstancesRestTransport(**common, interceptor=_InstancesGuard())
            ),
            project=project,
        )

    async def clients(self) -> Clients:
        """The clients (opened in a worker thread: finding credentials may do I/O)."""
        if self._clients is not None:
            return self._clients
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool, self._open)
        except google.auth.exceptions.DefaultCredentialsError as exc:
            raise ProviderTerminalError(f"GCE: no credentials found: {exc}") from exc

    async def request(
        self,
        what: str,
        send: Callable[[Clients], T],
        *,
        not_found: Callable[[str], ProviderError] | None = None,
        conflict: Callable[[str], ProviderError] | None = None,
        before_send: Callable[[], object] | None = None,
    ) -> T:
        """Spend the budget, then ``send`` one request in a worker thread; errors mapped.

        ``not_found`` and ``conflict`` build the error for a 404 or 409 answer (else it is
        terminal or transient as :func:`map_api_error` says). ``before_send`` runs on the
        loop once the budget let the request go, just before it is handed to a thread.
        """
        if self._closed:
            raise ProviderTerminalError("provider gce is closed")
        clients = await self.clients()
        if self._budget is not None:
            await self._budget.spend(what)
        if before_send is not None:
            before_send()
        job = _Job(what)

        def run() -> T:
            _JOB.set(job)
            return send(clients)

        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._pool, contextvars.Context().run, run)
        try:
            return await future
        except asyncio.CancelledError:
            job.cancel()
            raise
        except api_exceptions.GoogleAPICallError as exc:
            status = exc.code or 0
            if status == HTTP_NOT_FOUND and not_found is not None:
                raise not_found(_message(exc)) from exc
            if status == HTTP_CONFLICT and conflict is not None:
                raise conflict(_message(exc)) from exc
            raise map_api_error(what, exc) from exc
        except google.auth.exceptions.RefreshError as exc:
            raise ProviderTerminalError(f"GCE {what}: credentials refused: {exc}") from exc
        except (google.auth.exceptions.TransportError, requests.RequestException) as exc:
            cause = " ".join(str(exc).split())[:_CAUSE]  # which host, and why: one line
            raise ProviderError(
                f"GCE {what}: {type(exc).__name__}" + (f": {cause}" if cause else "")
            ) from exc
        except NotSentError as exc:
            raise ProviderError(str(exc)) from exc
        except json_format.ParseError as exc:  # the SDK reads every 200 by the API's schema
            raise malformed_answer(what, exc) from exc

    async def aclose(self) -> None:
        """Close the clients' sessions and the pool; calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        clients, self._clients = self._clients, None
        if clients is not None:
            for transport in (
                clients.routes.transport,
                clients.operations.transport,
                clients.instances.transport,
            ):
                transport.close()  # type: ignore[no-untyped-call]
        self._pool.shutdown(wait=False, cancel_futures=True)


def malformed_answer(what: str, exc: Exception) -> MalformedAnswerError:
    """The error for an answer the SDK could not read by the API's schema: a value of the
    wrong type (named by its path, ``items.destRange``), or a body that is not JSON."""
    text = str(exc)
    field = ".".join(re.findall(r"Failed to parse (\w+) field", text)) or "the body"
    reason = text.rsplit(" field: ", 1)[-1].rstrip(".")[:120]
    if field == "the body":
        reason = f"not JSON ({reason}; a proxy's page?)"
    return MalformedAnswerError(f"GCE {what}: malformed answer: {field}: {reason}", field=field)


def _message(exc: api_exceptions.GoogleAPICallError) -> str:
    return str(exc.message or exc)[:300]


def _reasons(exc: api_exceptions.GoogleAPICallError) -> set[str]:
    found = {str(e.get("reason", "")) for e in exc.errors or () if isinstance(e, dict)}
    if exc.reason:
        found.add(str(exc.reason))
    return found - {""}


def map_api_error(what: str, exc: api_exceptions.GoogleAPICallError) -> ProviderError:
    """The routectl error for an error answer of the Compute API."""
    status = exc.code or 0
    reasons = _reasons(exc)
    detail = f"GCE {what}: HTTP {status} {', '.join(sorted(reasons)) or ''}: {_message(exc)}"
    headers = exc.response.headers if exc.response is not None else {}
    hint = retry_after(headers)
    if reasons & RATE_REASONS or status == HTTP_TOO_MANY:
        return ProviderThrottledError(detail, retry_after=hint or THROTTLE_SECONDS)
    if reasons & QUOTA_REASONS:
        return ProviderTerminalError(f"{detail} (a Compute quota is used up: raise it)")
    if status == HTTP_UNAVAILABLE and hint:
        return ProviderThrottledError(detail, retry_after=hint)
    if status in {HTTP_UNAUTHORIZED, HTTP_FORBIDDEN}:
        return ProviderTerminalError(f"{detail} (check the service account's role: README)")
    if status >= HTTP_SERVER_ERROR or status == 0:
        return ProviderError(detail)
    return ProviderTerminalError(detail)


def operation_error(what: str, operation: compute_v1.Operation) -> ProviderError | None:
    """The routectl error for an operation that ended in error, or None if it succeeded."""
    errors = list(operation.error.errors)
    if not errors:
        return None
    codes = {e.code for e in errors}
    message = "; ".join(f"{e.code}: {e.message}" for e in errors)[:400]
    detail = f"GCE {what}: operation {operation.name} failed: {message}"
    if "QUOTA_EXCEEDED" in codes:
        return ProviderTerminalError(
            f"{detail} (the project's ROUTES quota is full: no more routes can be made until it "
            "is raised or routes are deleted)"
        )
    if codes & RATE_REASONS:
        return ProviderThrottledError(detail, retry_after=THROTTLE_SECONDS)
    status = operation.http_error_status_code or 0
    if codes & {"RESOURCE_NOT_FOUND", "NOT_FOUND"} or status >= HTTP_SERVER_ERROR or not status:
        return ProviderError(detail)
    return ProviderTerminalError(detail)


def retry_after(headers: Any) -> float | None:
    """Seconds from ``Retry-After`` (delta-seconds, or an HTTP date less the answer's
    ``Date``), or None when there is none or it cannot be read."""
    seconds = parse_retry_after(headers.get("Retry-After"), date=headers.get("Date"))
    return seconds if seconds is not None and seconds > 0 else None

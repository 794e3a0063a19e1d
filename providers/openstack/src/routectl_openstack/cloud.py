"""The OpenStack boundary: openstacksdk over one keystoneauth session, paced and mapped.

Promises:

* every HTTP request the SDK sends (token issue, version discovery, each page) first spends
  the request budget routectl handed the provider: a ``requests`` adapter mounted on the
  session blocks the SDK's worker thread until the budget, spent on the event loop, lets it go;
* each call is made once (the SDK's connect and status-code retries are off: routectl's gate
  retries), in a worker thread (openstacksdk is synchronous), with a socket timeout so no
  thread outlives the call by long;
* every SDK or keystoneauth exception leaves as an error of routectl's tree, chained:
  401/403 and a missing router are terminal, Neutron's ``RoutesExhausted`` is terminal and
  names the ``max_routes`` quota, 429 is throttling with ``Retry-After``, and so is a 503
  that carries a readable ``Retry-After`` (seconds, or an HTTP date against the answer's
  ``Date``: the API said when to come back); 409/412 (a table changed under us), other 5xx
  and lost connections are transient;
* an answer the SDK cannot read (a body that is not JSON, a string where a list of objects
  belongs) is a :class:`~routectl.errors.MalformedAnswerError`, transient.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import re
import threading
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, TypeVar

import openstack.connection
import openstack.exceptions
import requests
import requests.adapters
from keystoneauth1 import exceptions as ks_exceptions, session as ks_session
from keystoneauth1.identity import v3

from routectl.errors import (
    MalformedAnswerError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
)
from routectl.provider import RequestBudget
from routectl.ratelimit import parse_retry_after
from routectl_openstack.options import Credentials, OpenStackOptions

T = TypeVar("T")
TIMEOUT_SECONDS = 30.0
QUOTA = re.compile(r"exceeds the maximum (\d+)")


@dataclasses.dataclass(slots=True)
class _Pacer:
    """The budget and the loop it lives on, reachable from the SDK's worker threads."""

    budget: RequestBudget | None
    loop: asyncio.AbstractEventLoop | None = None

    def spend(self, what: str) -> None:
        """Block this (worker) thread until the budget lets one request go."""
        if self.budget is None or self.loop is None:
            return
        future = asyncio.run_coroutine_threadsafe(self.budget.spend(what), self.loop)
        try:
            future.result(timeout=TIMEOUT_SECONDS * 10)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise requests.ConnectionError(
                "the request budget did not let the request go"
            ) from None


class _PacedAdapter(requests.adapters.HTTPAdapter):
    """An HTTP adapter that spends the budget before sending each request."""

    def __init__(self, pacer: _Pacer) -> None:
        super().__init__(max_retries=0)
        self.pacer = pacer

    def send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        """Spend, then send."""
        path = (request.path_url or "").split("?")[0]
        self.pacer.spend(f"{request.method} {path}")
        return super().send(request, *args, **kwargs)


def _auth(credentials: Credentials) -> v3.Password | v3.ApplicationCredential:
    if credentials.application_credential_id:
        return v3.ApplicationCredential(
            auth_url=credentials.auth_url,
            application_credential_id=credentials.application_credential_id,
            application_credential_secret=credentials.application_credential_secret,
        )
    return v3.Password(
        auth_url=credentials.auth_url,
        user_id=credentials.user_id or None,
        username=credentials.username or None,
        password=credentials.password,
        project_name=credentials.project_name or None,
        project_id=credentials.project_id or None,
        user_domain_name=credentials.user_domain_name if credentials.username else None,
        project_domain_name=credentials.project_domain_name,
    )


class OpenStackCloud:
    """One SDK connection, opened on first use; calls run in worker threads."""

    def __init__(self, options: OpenStackOptions, *, budget: RequestBudget | None) -> None:
        self._options = options
        self._pacer = _Pacer(budget)
        self._connection: openstack.connection.Connection | None = None
        self._http: requests.Session | None = None
        self._connecting = threading.Lock()  # worker threads open one connection, not one each
        self._closed = False

    def _connect(self) -> openstack.connection.Connection:
        with self._connecting:
            if self._connection is None:
                self._connection = self._open()
            return self._connection

    def _open(self) -> openstack.connection.Connection:
        """A connection whose every HTTP request spends the budget, with SDK retries off."""
        http = self._http = requests.Session()
        adapter = _PacedAdapter(self._pacer)
        http.mount("http://", adapter)
        http.mount("https://", adapter)
        session = ks_session.Session(
            auth=_auth(self._options.credentials),
            session=http,
            timeout=TIMEOUT_SECONDS,
            verify=self._options.verify,
            cert=self._options.cert,
        )
        return openstack.connection.Connection(
            session=session,
            region_name=self._options.region or None,
            interface=self._options.interface,
            connect_retries=0,
            status_code_retries=0,
        )

    async def call(self, operation: str, fn: Callable[[openstack.connection.Connection], T]) -> T:
        """Run ``fn`` with the connection in a worker thread; errors leave mapped."""
        if self._closed:
            raise ProviderTerminalError("provider openstack is closed")
        self._pacer.loop = asyncio.get_running_loop()

        def run() -> T:
            try:
                return fn(self._connect())
            except openstack.exceptions.HttpException as exc:
                raise map_http_error(operation, exc) from exc
            except (openstack.exceptions.SDKException, ks_exceptions.ClientException) as exc:
                raise map_other_error(operation, exc) from exc
            except requests.JSONDecodeError as exc:
                raise MalformedAnswerError(
                    f"OpenStack {operation}: malformed answer: the body is not JSON "
                    f"({exc.msg}; a proxy's page?)",
                    field="the body",
                ) from exc
            except requests.RequestException as exc:
                raise ProviderError(f"OpenStack {operation}: {type(exc).__name__}") from exc
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                # openstacksdk reads an answer of the wrong shape (a string where its list
                # of objects belongs) with these; the plugin's own reads raise
                # MalformedAnswerError, naming the field.
                raise MalformedAnswerError(
                    f"OpenStack {operation}: malformed answer: openstacksdk could not read it "
                    f"({type(exc).__name__}: {str(exc)[:120]})",
                    field="the answer",
                ) from exc

        return await asyncio.to_thread(run)

    async def aclose(self) -> None:
        """Close the connection; calling it again does nothing."""
        self._closed = True
        connection, self._connection = self._connection, None
        if connection is not None:
            await asyncio.to_thread(connection.close)
        http, self._http = self._http, None
        if http is not None:  # the SDK does not close a session it was given
            await asyncio.to_thread(http.close)


def map_http_error(operation: str, exc: openstack.exceptions.HttpException) -> ProviderError:
    """The routectl error for an error answer of an OpenStack API."""
    status = exc.status_code or 0
    text = exc.details or ""
    if exc.response is not None:
        text = f"{text} {exc.response.text[:300]}"
    detail = f"OpenStack {operation}: HTTP {status}: {(exc.details or '').strip()[:300]}"
    quota = QUOTA.search(text)
    if "RoutesExhausted" in text or quota:
        limit = quota.group(1) if quota else "max_routes"
        return ProviderTerminalError(
            f"{detail} (the router holds at most {limit} routes: Neutron's max_routes quota, "
            "30 by default; ask the operator to raise it)"
        )
    hint = _retry_after(exc.response.headers if exc.response is not None else {})
    if status == HTTPStatus.TOO_MANY_REQUESTS or (
        status == HTTPStatus.SERVICE_UNAVAILABLE and hint is not None
    ):
        return ProviderThrottledError(detail, retry_after=hint if hint and hint > 0 else 1.0)
    if status in {HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN}:
        return ProviderTerminalError(f"{detail} (check the credentials and their role)")
    if status == HTTPStatus.NOT_FOUND:
        return ProviderTerminalError(f"{detail} (does router-id name an existing router?)")
    if status >= HTTPStatus.INTERNAL_SERVER_ERROR or status in {409, 412}:
        return ProviderError(detail)
    return ProviderTerminalError(detail)


def map_other_error(operation: str, exc: Exception) -> ProviderError:
    """A failure that is not an error answer: connection, discovery, authentication."""
    name = type(exc).__name__
    if isinstance(exc, ks_exceptions.HttpError) and exc.http_status == HTTPStatus.TOO_MANY_REQUESTS:
        # A 429 seen by keystoneauth (not by the SDK): still throttling, with its hint.
        response = getattr(exc, "response", None)
        hint = _retry_after(response.headers if response is not None else {})
        return ProviderThrottledError(
            f"OpenStack {operation}: HTTP 429 ({name})",
            retry_after=hint if hint and hint > 0 else 1.0,
        )
    if isinstance(exc, ks_exceptions.Unauthorized | ks_exceptions.MissingAuthPlugin):
        return ProviderTerminalError(f"OpenStack {operation}: Keystone refused ({name})")
    if isinstance(exc, ks_exceptions.SSLError):
        return ProviderError(
            f"OpenStack {operation}: {name} (is the cloud's certificate signed by a CA of "
            "ca-file, or of the system's when there is none?)"
        )
    if isinstance(exc, ks_exceptions.EndpointNotFound):
        return ProviderTerminalError(f"OpenStack {operation}: no such endpoint in the catalog")
    if isinstance(exc, openstack.exceptions.ServiceDisabledException):
        # openstacksdk found no endpoint of the service for this region and interface.
        return ProviderTerminalError(
            f"OpenStack {operation}: no such endpoint in the catalog for this region and "
            "interface (os-endpoint-type)"
        )
    return ProviderError(f"OpenStack {operation}: {name}")


def _retry_after(headers: Any) -> float | None:
    """Seconds from ``Retry-After`` (delta-seconds, or an HTTP date less the answer's
    ``Date``), or None when there is none or it cannot be read."""
    return parse_retry_after(headers.get("Retry-After"), date=headers.get("Date"))

"""The HTTP transport under the API calls: pacing, observation, errors and JSON reading.

Requests are paced as client-go paces them (``--kube-api-qps``/``--kube-api-burst``): one
token bucket per client, starting full. The leader election has a client (and so a bucket
and a connection pool) of its own, as the CCM's leader-election client does, so a queue of
lists, status patches or Events never delays a renewal (see :mod:`routectl.process.election`). Each
request is reported to a :class:`RequestObserver` (method, code, seconds; and the time it
waited for a token), for client-go's ``rest_client_*`` metrics.

Promises: every failure of the HTTP library leaves
:func:`translated` as a :class:`~routectl.errors.KubeError` (410 as
:class:`~routectl.errors.ResourceVersionGoneError`), an answer that is not a JSON object
included; messages never carry the request's headers, so the bearer token cannot leak.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ssl
import urllib.parse
from collections.abc import Iterator, Mapping
from http import HTTPStatus
from typing import Any, Protocol

import aiohttp
import orjson

from routectl import __version__
from routectl.cloud.budget import Limiter
from routectl.errors import KubeError, ResourceVersionGoneError
from routectl.kube.connection import Connection

__all__ = [
    "JsonObj",
    "PacedApiClient",
    "Pacing",
    "RequestObserver",
    "error",
    "read_body",
    "read_json",
    "translated",
]

USER_AGENT = f"routectl/{__version__}"
JsonObj = dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Pacing:
    """client-go's client-side limit: ``qps`` sustained, ``burst`` at once."""

    qps: float
    burst: int


class RequestObserver(Protocol):
    """Receives a record of each API request (for metrics); must not block."""

    def api_request(self, *, method: str, host: str, code: str, seconds: float) -> None: ...

    def api_rate_limited(self, *, method: str, host: str, seconds: float) -> None: ...


class PacedApiClient:
    """HTTP to the API server over one aiohttp session, each request paced and observed.

    Bodies go out as JSON (orjson); answers come back as raw aiohttp responses, for
    :func:`read_json` or a watch's stream. A non-2xx answer is returned, not raised.
    """

    def __init__(
        self,
        connection: Connection,
        *,
        pacing: Pacing | None = None,
        observer: RequestObserver | None = None,
        pool_size: int = 32,
    ) -> None:
        self._connection = connection
        self._bucket = None if pacing is None else Limiter(qps=pacing.qps, burst=pacing.burst)
        self._observer = observer
        self._host = str(urllib.parse.urlsplit(connection.server).netloc)
        self._pool_size = pool_size
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            tls: ssl.SSLContext | bool = self._connection.ssl or False
            connector = aiohttp.TCPConnector(limit=self._pool_size, ssl=tls)
            self._session = aiohttp.ClientSession(
                connector=connector, headers={"User-Agent": USER_AGENT}
            )
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool] | None = None,
        body: object = None,
        content_type: str = "application/json",
        timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109 -- aiohttp's own, per request
    ) -> aiohttp.ClientResponse:
        """Wait for a token, send, and report the answer's code and time."""
        loop = asyncio.get_running_loop()
        bucket = self._bucket
        if bucket is not None:
            waited_from = loop.time()
            await bucket.acquire()
            if self._observer is not None:
                waited = loop.time() - waited_from
                self._observer.api_rate_limited(method=method, host=self._host, seconds=waited)
        headers = {"Accept": "application/json"}
        authorization = await self._connection.authorization()
        if authorization:
            headers["Authorization"] = authorization
        data: bytes | None = None
        if body is not None:
            data = orjson.dumps(body)
            headers["Content-Type"] = content_type
        params = {k: _query_value(v) for k, v in (query or {}).items()}
        url = self._connection.server + path
        started, code = loop.time(), "<error>"
        try:
            response = await self._open().request(
                method,
                url,
                params=params,
                data=data,
                headers=headers,
                timeout=timeout,
                server_hostname=self._connection.server_name or None,
            )
            code = str(response.status)
        finally:
            if self._observer is not None:
                seconds = loop.time() - started
                self._observer.api_request(
                    method=method, host=self._host, code=code, seconds=seconds
                )
        return response

    async def close(self) -> None:
        """Close the HTTP session (and its connections)."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


def _query_value(value: str | int | bool) -> str:  # noqa: FBT001
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def error(status: int, body: bytes, *, what: str) -> KubeError:
    try:
        parsed = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError:
        parsed = {}
    parsed = parsed if isinstance(parsed, dict) else {}
    reason = str(parsed.get("reason", ""))
    message = f"{what}: {status} {reason}: {parsed.get('message', '')}".rstrip(": ")
    kind = ResourceVersionGoneError if status == HTTPStatus.GONE else KubeError
    return kind(message, status=status, reason=reason)


@contextlib.contextmanager
def translated(what: str) -> Iterator[None]:
    """Turn the HTTP library's errors into KubeError."""
    try:
        yield
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
        # Connected and answering, then cut mid-answer: not "unreachable".
        raise KubeError(
            f"{what}: the API server's answer was cut off: {type(exc).__name__}"
        ) from None
    except TimeoutError:
        raise KubeError(f"{what}: no answer from the API server in time") from None
    except aiohttp.ClientError as exc:
        raise KubeError(f"{what}: API server unreachable: {type(exc).__name__}") from None
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeError) as exc:
        # A proxy's HTML page, a body of the wrong shape: never a crash, a transient error.
        raise KubeError(f"{what}: unexpected answer: {type(exc).__name__}: {exc}") from None


async def read_body(response: aiohttp.ClientResponse, *, what: str) -> bytes:
    """The body of a successful answer; any other answer is a KubeError."""
    async with response:
        body = await response.read()
        if not 200 <= response.status <= 299:  # noqa: PLR2004 -- HTTP success range
            raise error(response.status, body, what=what)
    return body


async def read_json(response: aiohttp.ClientResponse, *, what: str) -> JsonObj:
    """The JSON object ``response`` answers; any other answer is a KubeError."""
    body = await read_body(response, what=what)
    try:
        parsed = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError:
        kind = response.headers.get("Content-Type", "no content type")
        raise KubeError(f"{what}: the answer is not JSON ({kind}); a proxy?") from None
    if not isinstance(parsed, dict):
        raise KubeError(f"{what}: the answer is not a JSON object")
    return parsed

"""The HTTP transport under the API calls: pacing, observation, errors and JSON reading.

Requests are paced as client-go paces them (``--kube-api-qps``/``--kube-api-burst``): one
token bucket per client, starting full. The leader election has a client (and so a bucket
and a connection pool) of its own, as the CCM's leader-election client does, so a queue of
lists, status patches or Events never delays a renewal (see :mod:`routectl.lease`). Each
request is reported to a :class:`RequestObserver` (method, code, seconds; and the time it
waited for a token), for client-go's ``rest_client_*`` metrics.

Promises: every failure of the HTTP library or of kubernetes-asyncio leaves
:func:`translated` as a :class:`~routectl.errors.KubeError` (410 as
:class:`~routectl.errors.ResourceVersionGoneError`), an answer that is not a JSON object
included; messages never carry the request's headers, so the bearer token cannot leak.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import urllib.parse
from collections.abc import Iterator
from typing import Any, Protocol

import aiohttp
import aiolimiter
import orjson
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from routectl.errors import KubeError, ResourceVersionGoneError
from routectl.redact import DEFAULT

__all__ = [
    "JsonObj",
    "PacedApiClient",
    "Pacing",
    "RequestObserver",
    "error",
    "read_json",
    "register_secrets",
    "translated",
]

HTTP_GONE = 410
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
        self._bucket = None if pacing is None else _Bucket(pacing.burst, pacing.burst / pacing.qps)
        self._observer = observer
        self._host = str(urllib.parse.urlsplit(str(configuration.host)).netloc)

    async def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        """Wait for a token, send, and report the answer's code and time."""
        loop = asyncio.get_running_loop()
        bucket = self._bucket
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


def error(status: int, body: bytes, *, what: str) -> KubeError:
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
def translated(what: str) -> Iterator[None]:
    """Turn the HTTP library's and kubernetes-asyncio's errors into KubeError."""
    try:
        yield
    except ApiException as exc:
        raw: object = exc.body
        body = raw if isinstance(raw, bytes) else str(raw or "").encode()
        raise error(exc.status or 0, body, what=what) from None
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


async def read_json(response: aiohttp.ClientResponse, *, what: str) -> JsonObj:
    """The JSON object ``response`` answers; any other answer is a KubeError."""
    async with response:
        body = await response.read()
        if not 200 <= response.status <= 299:  # noqa: PLR2004 -- HTTP success range
            raise error(response.status, body, what=what)
    try:
        parsed = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError:
        kind = response.headers.get("Content-Type", "no content type")
        raise KubeError(f"{what}: the answer is not JSON ({kind}); a proxy?") from None
    if not isinstance(parsed, dict):
        raise KubeError(f"{what}: the answer is not a JSON object")
    return parsed


def register_secrets(cfg: client.Configuration) -> None:
    """Tell the log and Event redaction the API token and client key (by value, any form)."""
    for value in (cfg.api_key or {}).values():
        DEFAULT.add(str(value).removeprefix("Bearer ").strip())

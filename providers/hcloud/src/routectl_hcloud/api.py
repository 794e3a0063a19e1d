"""A small aiohttp client of the Hetzner Cloud API, and the mapping of its errors.

Only what routes need: JSON requests with the bearer token, ``meta.pagination``, actions
polled until they finish, and every failure turned into routectl's error tree at this
boundary (``raise X(...) from ApiError``). The mapping (``code`` is the API's error code):

* HTTP 429 / ``rate_limit_exceeded`` -> ProviderThrottledError, ``retry_after`` from the
  ``RateLimit-*`` headers (see :func:`throttle_delay`);
* HTTP 503 (``unavailable``, ``maintenance``) with a readable ``Retry-After`` (seconds or
  an HTTP date) -> ProviderThrottledError with that hint: the API said when to come back;
* ``unauthorized``, ``forbidden``, ``token_readonly``, ``resource_limit_exceeded`` (the
  100-routes-per-network limit), other 4xx -> ProviderTerminalError;
* ``locked``, ``conflict``, ``timeout``, ``service_error``, other 5xx (a 503 without a
  ``Retry-After``), connection errors -> ProviderError (transient).

The token is read per request (so a rotated Secret is picked up) and never appears in a
message or a log line. Every request (each page, each poll of an action) first spends the
request budget the provider was handed. No retries here: routectl's ``CloudGate``
owns them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import email.utils
import logging
import math
import os
from collections.abc import Mapping
from http import HTTPStatus
from pathlib import Path
from typing import Any

import aiohttp

from routectl.answers import Answer
from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
)
from routectl.provider import RequestBudget
from routectl.ratelimit import parse_retry_after
from routectl_hcloud.options import read_token_file

_log = logging.getLogger(__name__)

USER_AGENT = "routectl-hcloud/0.1.0"
MIN_RETRY_AFTER = 1.0

TRANSIENT_CODES = frozenset(
    {
        "locked",
        "conflict",
        "timeout",
        "service_error",
        "server_error",
        "bad_gateway",
        "unavailable",
        "resource_unavailable",
        "robot_unavailable",
        "maintenance",
        "unknown_error",
    }
)
_TERMINAL_HINTS = {
    "unauthorized": "the API token was rejected; check HCLOUD_TOKEN or the token-file",
    "forbidden": "the API token may not do this; routectl needs a Read & Write token",
    "token_readonly": "the API token is read-only; routectl needs a Read & Write token",
    "resource_limit_exceeded": "a Hetzner Cloud network holds at most 100 routes; delete "
    "stale routes or check --cluster-cidr (routes outside it are never cleaned up)",
}


class ApiError(Exception):
    """An error answer of the API, kept as the ``__cause__`` of the routectl error."""

    def __init__(
        self, *, status: int, code: str, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(f"{message} ({code or status})")
        self.status = status
        self.code = code
        self.message = message
        self.details: Mapping[str, Any] = details or {}


def api_code(err: BaseException) -> str:
    """The API error code behind a mapped routectl error (``""`` if none)."""
    cause = err.__cause__
    return cause.code if isinstance(cause, ApiError) else ""


def _wall_clock() -> float:
    return datetime.datetime.now(datetime.UTC).timestamp()


def _header_float(headers: Mapping[str, str], name: str) -> float | None:
    try:
        value = float(headers.get(name, ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def throttle_delay(headers: Mapping[str, str], *, now: float) -> float:
    """Seconds until the API will accept a request again, at least :data:`MIN_RETRY_AFTER`.

    Hetzner's ``RateLimit-Reset`` is when the *whole* budget is back, and the budget refills
    evenly (3600/h: one request per second). Pausing until the reset would stop routing for up
    to an hour after one 429, so the pause is the time until the next request's worth has
    refilled: ``(reset - now) / (limit - remaining)``, never beyond ``reset - now``.
    ``now`` is the server's ``Date`` when it sent one (immune to clock skew), else ``now``.
    A ``Retry-After`` header (seconds or an HTTP date), if any, wins.
    """
    now = _server_now(headers, now=now)
    retry_after = _retry_after(headers, now=now)
    if retry_after is not None:
        return max(retry_after, MIN_RETRY_AFTER)
    reset = _header_float(headers, "RateLimit-Reset")
    if reset is None:
        return MIN_RETRY_AFTER
    until_reset = reset - now
    if until_reset <= 0:
        return MIN_RETRY_AFTER
    limit = _header_float(headers, "RateLimit-Limit")
    remaining = _header_float(headers, "RateLimit-Remaining") or 0.0
    if limit is not None and limit > remaining:
        until_reset /= limit - remaining
    return max(until_reset, MIN_RETRY_AFTER)


def _server_now(headers: Mapping[str, str], *, now: float) -> float:
    """The server's ``Date`` as Unix time when it sent a readable one, else ``now``."""
    with contextlib.suppress(TypeError, ValueError, IndexError):
        return email.utils.parsedate_to_datetime(headers.get("Date", "")).timestamp()
    return now


def _retry_after(headers: Mapping[str, str], *, now: float) -> float | None:
    """Seconds from ``Retry-After`` (delta-seconds, or an HTTP date less ``now``), if readable."""
    return parse_retry_after(headers.get("Retry-After"), now=now)


def _throttled(exc: ApiError, headers: Mapping[str, str], *, now: float) -> bool:
    """Rate-limited, or a 503 that says when to come back (``Retry-After``)."""
    if exc.status == HTTPStatus.TOO_MANY_REQUESTS or exc.code == "rate_limit_exceeded":
        return True
    hint = _retry_after(headers, now=_server_now(headers, now=now))
    return exc.status == HTTPStatus.SERVICE_UNAVAILABLE and hint is not None


def map_api_error(
    operation: str, exc: ApiError, headers: Mapping[str, str], *, now: float
) -> ProviderError:
    """The routectl error for an error answer to ``operation``."""
    detail = f"Hetzner Cloud {operation}: {exc.message or 'error'} ({exc.code or exc.status})"
    if _throttled(exc, headers, now=now):
        return ProviderThrottledError(detail, retry_after=throttle_delay(headers, now=now))
    hint = _TERMINAL_HINTS.get(exc.code)
    if hint is None and exc.status == HTTPStatus.UNAUTHORIZED:
        hint = _TERMINAL_HINTS["unauthorized"]
    if hint is not None:
        return ProviderTerminalError(f"{detail}: {hint}")
    if (
        exc.code in TRANSIENT_CODES
        or exc.status >= HTTPStatus.INTERNAL_SERVER_ERROR
        or exc.status == 0
    ):
        return ProviderError(detail)
    return ProviderTerminalError(detail)


class TokenSource:
    """The API token: fixed (``HCLOUD_TOKEN``) or a file re-read whenever it changes."""

    def __init__(self, *, token: str = "", path: Path | None = None) -> None:
        self._token = token
        self._path = path
        self._seen: tuple[int, int, int] | None = None

    def current(self) -> str:
        """The token to send now."""
        if self._path is None:
            return self._token
        try:
            stat = self._path.stat()
            key = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
            if key != self._seen:
                self._token = read_token_file(self._path)
                self._seen = key
        except OSError as exc:
            raise ProviderError(
                f"Hetzner Cloud: cannot read token-file {self._path} ({exc.strerror})"
            ) from None
        if not self._token:
            raise ProviderError(f"Hetzner Cloud: token-file {self._path} is empty")
        return self._token

    def invalidate(self) -> None:
        """Read the file again before the next request (the token was rejected)."""
        self._seen = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Action:
    """An asynchronous change; done when ``status`` is ``success`` or ``error``."""

    id: int
    command: str
    status: str
    error_code: str = ""
    error_message: str = ""

    @classmethod
    def parse(cls, raw: Answer) -> Action:
        """Read an ``action`` object of the API; a field of the wrong shape is an error."""
        error = raw.field("error")
        if error.missing:
            code = message = ""
        else:
            code = error.field("code").text(default="")
            message = error.field("message").text(default="")
        return cls(
            id=raw.field("id").integer(),
            command=raw.field("command").text(default=""),
            status=raw.field("status").text(),
            error_code=code,
            error_message=message,
        )


class HcloudApi:
    """JSON over HTTP to the Hetzner Cloud API; one connection pool, made on first use."""

    def __init__(
        self,
        *,
        endpoint: str,
        token: TokenSource,
        poll_seconds: float,
        budget: RequestBudget | None = None,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self._budget = budget
        self.poll_seconds = poll_seconds
        self._token = token
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    async def request(
        self,
        method: str,
        path: str,
        *,
        operation: str,
        params: Mapping[str, str | int] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Send one request; the decoded JSON answer, or a routectl error."""
        if self._closed:
            raise ProviderTerminalError("provider hcloud is closed")
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=60, connect=10),
                headers={"User-Agent": USER_AGENT},
            )
        headers = {"Authorization": f"Bearer {self._token.current()}"}
        if self._budget is not None:
            await self._budget.spend(operation)
        try:
            async with self._session.request(
                method, self.endpoint + path, params=params, json=body, headers=headers
            ) as response:
                try:
                    payload = await response.json(content_type=None)
                except ValueError:
                    payload = None
                reply_headers = dict(response.headers)
                status = response.status
        except aiohttp.ClientError as exc:
            # The URL is left out: it is configuration, and may carry user information.
            raise ProviderError(
                f"Hetzner Cloud {operation}: cannot reach the API ({type(exc).__name__})"
            ) from exc
        payload = payload if isinstance(payload, dict) else {}
        if status < HTTPStatus.BAD_REQUEST:
            return payload
        raw_error = payload.get("error")
        error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
        details = error.get("details")
        failure = ApiError(
            status=status,
            code=str(error.get("code", "")),
            message=str(error.get("message", "")) or f"HTTP {status}",
            details=details if isinstance(details, dict) else None,
        )
        if status == HTTPStatus.UNAUTHORIZED:
            _log.warning("The Hetzner Cloud API rejected the token; reading it again next time")
            self._token.invalidate()
        raise map_api_error(operation, failure, reply_headers, now=_wall_clock()) from failure

    async def pages(
        self, path: str, key: str, *, operation: str, params: Mapping[str, str | int] | None = None
    ) -> list[Answer]:
        """Every item of a paginated list (``meta.pagination.next_page``), each an object."""
        items: list[Answer] = []
        page: int | None = 1
        while page is not None:
            raw = await self.request(
                "GET",
                path,
                operation=operation,
                params={**(params or {}), "page": page, "per_page": 50},
            )
            answer = Answer(raw, what=f"Hetzner Cloud {operation} (page {page})")
            for item in answer.field(key).items():
                item.obj()
                items.append(item)
            meta = answer.field("meta")
            pagination = Answer(None, what="") if meta.missing else meta.field("pagination")
            next_page = (
                0 if pagination.missing else pagination.field("next_page").integer(default=0)
            )
            page = next_page if next_page > page else None
        return items

    def answer(self, raw: object, *, operation: str) -> Answer:
        """A decoded answer to ``operation``, to be read field by field."""
        return Answer(raw, what=f"Hetzner Cloud {operation}")

    async def wait(self, action: Action, *, operation: str) -> None:
        """Poll ``action`` until it finished; an action that failed is a transient error."""
        while action.status == "running":
            await asyncio.sleep(self.poll_seconds)
            answer = await self.request("GET", f"/actions/{action.id}", operation=operation)
            action = Action.parse(self.answer(answer, operation=operation).field("action"))
        if action.status != "success":
            raise ProviderError(
                f"Hetzner Cloud {operation}: action {action.id} ended as {action.status}: "
                f"{action.error_message or 'no reason given'} ({action.error_code or 'error'})"
            )

    async def aclose(self) -> None:
        """Close the connection pool; calling it again does nothing."""
        self._closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def token_source(*, path: Path | None, environ: Mapping[str, str] = os.environ) -> TokenSource:
    """The token from ``path`` if given, else from ``HCLOUD_TOKEN``."""
    if path is not None:
        return TokenSource(path=path)
    return TokenSource(token=environ.get("HCLOUD_TOKEN", "").strip())

"""Translate botocore's exceptions into routectl's error tree, at the plugin's boundary.

The mapping (``code`` is the EC2 error code, ``status`` the HTTP status):

* throttling codes (``RequestLimitExceeded``, ``Throttling``, ...)  -> ProviderThrottledError,
  ``retry_after`` from a ``Retry-After`` header, else :data:`DEFAULT_RETRY_AFTER`;
* any other 503 (``Unavailable``) whose ``Retry-After`` can be read (seconds or an HTTP-date)
  -> ProviderThrottledError with that hint: AWS said when to come back (botocore itself never
  reads ``Retry-After``, and its retries are off: routectl's gate honours the hint);
* ``UnauthorizedOperation``, ``AuthFailure``, ``RouteLimitExceeded``, bad parameters, missing
  credentials -> ProviderTerminalError (retrying cannot help);
* other 5xx (a 503 without a readable ``Retry-After``), ``*.NotFound`` of things that change
  under us, connection errors, anything unknown -> ProviderError (transient; routectl
  retries with backoff).

Messages carry the operation, the code and AWS's message (which never holds credentials);
nothing from the request (signed headers, keys) is ever put into them.
"""

from __future__ import annotations

from http import HTTPStatus

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionError as BotoConnectionError,
    CredentialRetrievalError,
    HTTPClientError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
)

from routectl.errors import ProviderError, ProviderTerminalError, ProviderThrottledError
from routectl.ratelimit import parse_retry_after

DEFAULT_RETRY_AFTER = 1.0
"""Seconds to pause after throttling when EC2 does not say (it usually does not)."""

THROTTLING_CODES = frozenset(
    {
        "RequestLimitExceeded",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestThrottled",
        "RequestThrottledException",
        "SlowDown",
    }
)

_TERMINAL_HINTS = {
    "UnauthorizedOperation": "the credentials lack an IAM permission routectl needs "
    "(ec2:DescribeRouteTables, ec2:DescribeInstances, ec2:CreateRoute, ec2:ReplaceRoute, "
    "ec2:DeleteRoute, ec2:ModifyInstanceAttribute)",
    "AuthFailure": "AWS could not validate the credentials",
    "InvalidClientTokenId": "AWS does not know the access key",
    "SignatureDoesNotMatch": "the secret key does not match the access key",
    "OptInRequired": "the account is not subscribed to EC2 in this region",
    "Blocked": "the account is blocked",
    "RouteLimitExceeded": "the route table is full (AWS's quota is 50 routes per table by "
    "default; ask for more, or use fewer nodes per table)",
}

_TERMINAL_CODES = frozenset(
    {
        *_TERMINAL_HINTS,
        "InvalidParameterValue",
        "InvalidParameterCombination",
        "InvalidParameter",
        "MissingParameter",
        "UnknownParameter",
        "InvalidInstanceID.Malformed",
        "InvalidRouteTableID.Malformed",
        "InvalidIPv6CIDRBlock.Malformed",
        "InvalidRoute.InvalidState",
        "InvalidRoute.Malformed",
        "InvalidVpcID.Malformed",
    }
)

_MESSAGE_LIMIT = 300


def error_code(exc: ClientError) -> str:
    """The EC2 error code of ``exc`` (``""`` if AWS sent none)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def _status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def _message(exc: ClientError) -> str:
    text = str(exc.response.get("Error", {}).get("Message", "")).strip()
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


def retry_after_seconds(exc: ClientError, *, now: float) -> float:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP-date), else the default.

    ``now`` is the wall-clock time (Unix seconds), used only for an HTTP-date.
    """
    hint = _retry_after_hint(exc, now=now)
    if hint is None:
        return DEFAULT_RETRY_AFTER
    return max(hint, 0.0) or DEFAULT_RETRY_AFTER


def _retry_after_hint(exc: ClientError, *, now: float) -> float | None:
    """Seconds from a ``Retry-After`` header as sent, or None when there is none to read."""
    headers = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    return parse_retry_after(headers.get("retry-after"), now=now)


def _throttled(exc: ClientError, *, now: float) -> bool:
    """A throttling code or 429, or a 503 that says when to come back (``Retry-After``)."""
    code, status = error_code(exc), _status(exc)
    if code in THROTTLING_CODES or status == HTTPStatus.TOO_MANY_REQUESTS:
        return True
    unavailable = status == HTTPStatus.SERVICE_UNAVAILABLE
    return unavailable and _retry_after_hint(exc, now=now) is not None


def map_client_error(operation: str, exc: ClientError, *, now: float) -> ProviderError:
    """The routectl error for an EC2 error response to ``operation``."""
    code = error_code(exc)
    status = _status(exc)
    detail = f"EC2 {operation}: {code or status or 'error'}: {_message(exc)}".rstrip(": ")
    if _throttled(exc, now=now):
        return ProviderThrottledError(detail, retry_after=retry_after_seconds(exc, now=now))
    if code in _TERMINAL_CODES:
        hint = _TERMINAL_HINTS.get(code)
        return ProviderTerminalError(f"{detail} ({hint})" if hint else detail)
    return ProviderError(detail)


def map_botocore_error(operation: str, exc: BotoCoreError) -> ProviderError:
    """The routectl error for a failure before or after talking to EC2."""
    name = type(exc).__name__
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return ProviderTerminalError(
            f"EC2 {operation}: no usable AWS credentials ({name}); configure the standard "
            "credential chain (environment, web identity / IRSA, instance profile)"
        )
    if isinstance(exc, ParamValidationError):
        return ProviderTerminalError(f"EC2 {operation}: invalid request ({name})")
    if isinstance(exc, CredentialRetrievalError):
        return ProviderError(f"EC2 {operation}: could not fetch credentials ({name})")
    if isinstance(exc, BotoConnectionError | HTTPClientError):
        # The endpoint URL is left out: it is configuration, and may carry user information.
        return ProviderError(f"EC2 {operation}: cannot reach the EC2 endpoint ({name})")
    return ProviderError(f"EC2 {operation}: {name}")

"""``metav1.Status`` errors, built the way kube-apiserver builds them.

Promises:

* every failure this package reports is an :class:`ApiError` whose ``status`` is a complete
  ``Status`` object (``kind``, ``apiVersion``, ``metadata: {}``, ``status``, ``message``,
  ``reason``, ``details``, ``code``) with keys in Go's field order;
* messages, reasons and ``details`` follow ``k8s.io/apimachinery/pkg/api/errors``: the resource
  is named ``nodes`` / ``leases.coordination.k8s.io``, ``details.kind`` is the plural resource,
  and validation errors list their ``causes``;
* like Go's ``omitempty``, an empty ``reason`` and absent ``details`` are left out, exactly
  where the recorded fixtures leave them out;
* ``retry_after`` fills ``details.retryAfterSeconds`` and the ``Retry-After`` header.

This module builds values only; it does not write HTTP responses.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any, Literal

JsonObj = dict[str, Any]

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
"""The ``StatusReason`` kube-apiserver pairs with each HTTP code."""

_GENERIC_MESSAGES = {
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: injected failure",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still "
    "be processing the request",
}


@dataclasses.dataclass(frozen=True, slots=True)
class GroupResource:
    """A resource as error messages name it: ``nodes`` or ``leases.coordination.k8s.io``."""

    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


FieldErrorType = Literal["Invalid", "Required", "Forbidden", "NotSupported", "Duplicate"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FieldError:
    """One ``field.Error`` of a validation failure."""

    field: str
    type: FieldErrorType
    value: Any = None
    detail: str = ""
    supported: Sequence[str] = ()

    @property
    def reason(self) -> str:
        """The cause type, e.g. ``FieldValueInvalid``."""
        return f"FieldValue{self.type}"

    def body(self) -> str:
        """Go's ``ErrorBody()``: the message without the field path."""
        if self.type == "Required":
            text = "Required value"
        elif self.type == "Forbidden":
            text = "Forbidden"
        elif self.type == "NotSupported":
            text = f"Unsupported value: {go_value(self.value)}"
            if self.supported:
                text += ": supported values: " + ", ".join(json.dumps(s) for s in self.supported)
        else:
            label = "Invalid value" if self.type == "Invalid" else "Duplicate value"
            text = f"{label}: {go_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def go_value(value: Any) -> str:
    """Format a bad value as ``field.Error`` does: quoted strings, bare numbers, JSON else."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return "null"
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class ApiError(Exception):
    """A request failed; ``status`` is the ``Status`` object the server answers with."""

    def __init__(self, status: JsonObj, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(status.get("message", ""))
        self.status = status
        self.headers = dict(headers or {})

    @property
    def code(self) -> int:
        """The HTTP status code."""
        return int(self.status["code"])

    @property
    def reason(self) -> str:
        """The ``StatusReason`` (empty for unknown errors)."""
        return str(self.status.get("reason", ""))


def build_status(
    *,
    code: int,
    message: str,
    reason: str | None = None,
    details: JsonObj | None = None,
    metadata: JsonObj | None = None,
) -> JsonObj:
    """A failure ``Status`` with keys in Go order; ``reason=None`` picks the usual one."""
    status: JsonObj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": metadata or {},
        "status": "Failure",
        "message": message,
    }
    chosen = REASONS.get(code, "") if reason is None else reason
    if chosen:
        status["reason"] = chosen
    if details is not None:
        status["details"] = details
    status["code"] = code
    return status


def error(
    *,
    code: int,
    message: str,
    reason: str | None = None,
    details: JsonObj | None = None,
    retry_after: int | None = None,
    metadata: JsonObj | None = None,
) -> ApiError:
    """An :class:`ApiError`; ``retry_after`` adds the detail and the header."""
    headers: dict[str, str] = {}
    if retry_after:
        details = {**(details or {}), "retryAfterSeconds": retry_after}
        headers["Retry-After"] = str(retry_after)
    body = build_status(
        code=code, message=message, reason=reason, details=details, metadata=metadata
    )
    return ApiError(body, headers=headers)


def _details(resource: GroupResource, name: str = "", **extra: Any) -> JsonObj:
    details: JsonObj = {}
    if name:
        details["name"] = name
    if resource.group:
        details["group"] = resource.group
    details["kind"] = resource.resource
    details.update(extra)
    return details


def not_found(resource: GroupResource, name: str) -> ApiError:
    """404: ``nodes "x" not found``."""
    return error(
        code=404, message=f'{resource} "{name}" not found', details=_details(resource, name)
    )


def already_exists(resource: GroupResource, name: str) -> ApiError:
    """409 AlreadyExists: ``nodes "x" already exists``."""
    return error(
        code=409,
        message=f'{resource} "{name}" already exists',
        reason="AlreadyExists",
        details=_details(resource, name),
    )


OPTIMISTIC_LOCK_MESSAGE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def conflict(resource: GroupResource, name: str, why: str = OPTIMISTIC_LOCK_MESSAGE) -> ApiError:
    """409 Conflict: ``Operation cannot be fulfilled on nodes "x": <why>``."""
    return error(
        code=409,
        message=f'Operation cannot be fulfilled on {resource} "{name}": {why}',
        details=_details(resource, name),
    )


def aggregate(errors: Sequence[FieldError]) -> str:
    """``ErrorList.ToAggregate().Error()``: one error bare, several in brackets."""
    texts = [str(e) for e in errors]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def invalid(*, group: str, kind: str, name: str, errors: Sequence[FieldError]) -> ApiError:
    """422 Invalid: ``Node "x" is invalid: <field errors>`` with ``details.causes``."""
    qualified = f"{kind}.{group}" if group else kind
    causes = [{"reason": e.reason, "message": e.body(), "field": e.field} for e in errors]
    details: JsonObj = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    details["causes"] = causes
    return error(
        code=422, message=f'{qualified} "{name}" is invalid: {aggregate(errors)}', details=details
    )


def invalid_options(errors: Sequence[FieldError]) -> ApiError:
    """422 for bad list/watch options (``ListOptions.meta.k8s.io "" is invalid``)."""
    return invalid(group="meta.k8s.io", kind="ListOptions", name="", errors=errors)


def bad_request(message: str) -> ApiError:
    """400 BadRequest with no details."""
    return error(code=400, message=message)


def expired(message: str, *, metadata: JsonObj | None = None) -> ApiError:
    """410 Expired with no details."""
    return error(code=410, message=message, metadata=metadata)


def too_large_resource_version(requested: int, current: int) -> ApiError:
    """504 after waiting for a future resourceVersion, with ``Retry-After: 1``."""
    return error(
        code=504,
        message=f"Timeout: Too large resource version: {requested}, current: {current}",
        details={
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ]
        },
        retry_after=1,
    )


def forbidden(resource: GroupResource, name: str, why: str) -> ApiError:
    """403 Forbidden as RBAC words it."""
    subject = f'{resource} "{name}"' if name else str(resource)
    return error(
        code=403, message=f"{subject} is forbidden: {why}", details=_details(resource, name)
    )


def generic(code: int, *, message: str | None = None, retry_after: int | None = None) -> ApiError:
    """An error for an injected failure: the usual reason and a plausible message."""
    text = message or _GENERIC_MESSAGES.get(code, f"injected failure with HTTP status {code}")
    return error(code=code, message=text, details={}, retry_after=retry_after)


def success(resource: GroupResource, name: str, uid: str) -> JsonObj:
    """The ``Status`` a DELETE answers with when the object is gone."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": _details(resource, name, uid=uid),
    }

"""The Compute API's answers as the fake writes them, and its list ``filter`` language.

Error bodies are ``{"error": {"code", "message", "errors": [{"domain", "reason",
"message"}]}}``; an operation's error is ``{"error": {"errors": [{"code", "message"}]},
"httpErrorStatusCode", "httpErrorMessage"}``, as the REST API v1 documents them.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

BASE = "https://www.googleapis.com/compute/v1"
"""Where the API's links (``selfLink``, ``network``, ``zone``) point, whatever the fake's URL."""
CLAUSE = re.compile(
    r"""\(?\s*([A-Za-z][A-Za-z0-9_.]*)\s+(eq|ne|=|!=)\s+("[^"]*"|'[^']*'|[^\s()]+)\s*\)?"""
)


class FilterError(ValueError):
    """A ``filter`` the fake cannot read (the real API answers 400 invalid)."""


def matches(resource: dict[str, Any], expression: str) -> bool:
    """Whether ``resource`` passes a Compute list ``filter`` (top-level string fields).

    ``eq``/``ne`` take an RE2 regular expression that must match the whole field; ``=`` and
    ``!=`` a literal. Clauses in parentheses are ANDed.
    """
    expression = expression.strip()
    if not expression:
        return True
    position = 0
    for clause in CLAUSE.finditer(expression):
        if expression[position : clause.start()].strip():
            raise FilterError(f"Invalid value for field 'filter': {expression!r}")
        position = clause.end()
        field, op, literal = clause.groups()
        if literal[:1] in {'"', "'"}:
            literal = literal[1:-1]
        value = str(resource.get(field, ""))
        hit = re.fullmatch(literal, value) is not None if op in {"eq", "ne"} else value == literal
        if hit != (op in {"eq", "="}):
            return False
    if expression[position:].strip():
        raise FilterError(f"Invalid value for field 'filter': {expression!r}")
    return True


def error_answer(
    status: int, reason: str, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    """An error answer: ``status``, with ``reason`` in the API's error body."""
    domain = "usageLimits" if "imit" in reason else "global"
    body = {
        "error": {
            "code": status,
            "message": message,
            "errors": [{"message": message, "domain": domain, "reason": reason}],
        }
    }
    return web.json_response(body, status=status, headers=headers)


def not_found(project: str, collection: str, name: str) -> web.Response:
    """The API's 404 for a resource of ``collection`` named ``name``."""
    return error_answer(
        404, "notFound", f"The resource 'projects/{project}/{collection}/{name}' was not found"
    )


def operation_failure(code: str, message: str, status: int) -> dict[str, Any]:
    """What an operation that ended in error ``code`` carries beside ``status: DONE``."""
    return {
        "error": {"errors": [{"code": code, "message": message}]},
        "httpErrorStatusCode": status,
        "httpErrorMessage": {403: "FORBIDDEN", 404: "NOT FOUND", 429: "TOO MANY REQUESTS"}.get(
            status, "BAD REQUEST"
        ),
    }

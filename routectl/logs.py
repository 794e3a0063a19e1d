"""Logging set-up: text for people, JSON lines for log pipelines; ``-v`` raises detail.

Verbosity follows klog: 0-3 log at INFO, 4 and above at DEBUG. Library loggers (aiohttp,
kubernetes-asyncio) stay at WARNING unless verbosity is 6 or more.

Every record passes :class:`RedactingFilter` on its way out: bearer tokens and the values
of ``Authorization`` (and similar credential) headers are replaced by ``<redacted>``, in
the message and in a traceback alike. routectl never puts credentials into messages; this
is the second line of defence, for libraries that log requests at high verbosity.
"""

from __future__ import annotations

import datetime
import logging
import re
import sys

import orjson

DEBUG_VERBOSITY = 4
LIBRARY_VERBOSITY = 6
REDACTED = "<redacted>"

_TOKEN = r"[A-Za-z0-9._~+/=:-]+"  # noqa: S105 -- a pattern, not a password
_BEARER = re.compile(rf"\b(Bearer\s+){_TOKEN}")
_HEADER = re.compile(
    r"(?i)\b([a-z0-9_-]*(?:authorization|token|secret|password)[a-z0-9_-]*|x-api-key)"
    rf"(['\"]?\s*[:=]\s*['\"]?(?:bearer\s+|basic\s+)?){_TOKEN}"
)


def redact(text: str) -> str:
    """``text`` with bearer tokens and credential header values replaced by ``<redacted>``."""
    text = _HEADER.sub(rf"\1\2{REDACTED}", text)
    return _BEARER.sub(rf"\1{REDACTED}", text)


class RedactingFilter(logging.Filter):
    """Rewrites each record so no credential reaches a handler (never drops a record)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Render the message (and traceback) now, redacted; always keep the record."""
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg (and exc when there is one)."""

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as a JSON line."""
        entry = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_text:
            entry["exc"] = record.exc_text
        elif record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry).decode()


def configure_logging(*, fmt: str, verbosity: int) -> None:
    """Install one stderr handler, with the redacting filter, on the root logger."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbosity >= DEBUG_VERBOSITY else logging.INFO)
    quiet = logging.DEBUG if verbosity >= LIBRARY_VERBOSITY else logging.WARNING
    for name in ("aiohttp", "kubernetes_asyncio", "asyncio"):
        logging.getLogger(name).setLevel(quiet)

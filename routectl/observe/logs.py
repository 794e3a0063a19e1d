"""Logging set-up: klog's structured text or JSON; ``-v`` with klog's meaning; no secret out.

Lines read as Kubernetes components' lines do, so the tools operators use for the CCM read
routectl's too:

* text (``--logging-format=text``, the default) is klog's header and structured form:
  ``I1201 12:07:44.123456   12345 apply.py:63] "Creating route ..." node="n1" cidr="..."``;
* JSON (``--logging-format=json``) is klog's JSON form, one object per line:
  ``{"ts":1764590864.123,"caller":"apply.py:63","msg":"...","v":0,"node":"n1"}``, with
  ``"err"`` for a line that carries an exception (and ``"level"`` for WARNING and above);
* the Node, CIDR, route, Lease and sync a line is about are fields (``extra={"node": ...}``
  at the call; ``sync`` comes from :data:`routectl.observe.logctx.SYNC`);
* ``-v N`` shows lines of ``V(N)`` and below (:func:`routectl.observe.logctx.v`): 0 upstream's
  Info lines, 2 the status patches and no-op decisions, 4 every cloud call and retry
  (DEBUG), 6 the libraries' debug output (aiohttp, kubernetes-asyncio, botocore).

Every line passes :data:`routectl.observe.redact.DEFAULT` as it is written, message, fields and
traceback alike: bearer tokens, credential headers and fields (bytes reprs included), AWS
key ids and signatures, and the values of the process's credential variables never reach
the output, at any verbosity.
"""

from __future__ import annotations

import datetime
import logging
import os
import sys
import traceback
from collections.abc import Mapping
from typing import Any, TextIO

import orjson

from routectl.observe.logctx import DEBUG_VERBOSITY, SYNC, level_for, verbosity_of
from routectl.observe.redact import DEFAULT, REDACTED, Redactor, redact

__all__ = [
    "DEBUG_VERBOSITY", "LIBRARY_VERBOSITY", "REDACTED", "JsonFormatter", "KlogFormatter",
    "RedactingFilter", "configure_logging", "redact",
]  # fmt: skip

LIBRARY_VERBOSITY = 6
LIBRARIES = (
    "aiohttp", "kubernetes_asyncio", "asyncio", "botocore", "aiobotocore", "urllib3", "azure",
    "google", "openstack", "keystoneauth",
)  # fmt: skip
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}
_LETTER = {"CRITICAL": "F", "ERROR": "E", "WARNING": "W"}


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields of ``record``: its ``extra`` keys, and the sync it belongs to."""
    found = {k: v for k, v in record.__dict__.items() if k not in _STANDARD and k[0] != "_"}
    sync = getattr(record, "sync", None)
    found["sync"] = sync if sync is not None else SYNC.get()
    return {k: v for k, v in found.items() if v is not None}


class RedactingFilter(logging.Filter):
    """Sets each record's ``sync`` field; formatters redact (never drops a record)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Stamp the sync now (the formatter may run elsewhere); keep the record."""
        if getattr(record, "sync", None) is None:
            record.sync = SYNC.get()
        return True


def _exception(record: logging.LogRecord) -> str:
    if record.exc_info:
        return "".join(traceback.format_exception(*record.exc_info)).rstrip()
    return record.exc_text or ""


def _quote(value: object) -> str:
    """A value as klog prints it: numbers and booleans bare, everything else quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return orjson.dumps(str(value)).decode()


class KlogFormatter(logging.Formatter):
    """klog's text form: header, quoted message, ``key="value"`` fields."""

    def __init__(self, redactor: Redactor = DEFAULT) -> None:
        super().__init__()
        self._redact = redactor

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as one klog line (a traceback follows on its own lines)."""
        moment = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
        header = (
            f"{_LETTER.get(record.levelname, 'I')}{moment:%m%d %H:%M:%S.%f} "
            f"{record.process or os.getpid():>7} {record.filename}:{record.lineno}]"
        )
        clean = self._redact
        parts = [header, _quote(clean(record.getMessage()))]
        parts += [f"{key}={_quote(_jsonable(v, clean))}" for key, v in fields_of(record).items()]
        line = " ".join(parts)
        if text := _exception(record):
            line += "\n" + clean(text)
        return line


class JsonFormatter(logging.Formatter):
    """klog's JSON form: ts, caller, msg, v (or err), then the fields."""

    def __init__(self, redactor: Redactor = DEFAULT) -> None:
        super().__init__()
        self._redact = redactor

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as a JSON line."""
        entry: dict[str, Any] = {
            "ts": round(record.created, 6),
            "caller": f"{record.filename}:{record.lineno}",
            "msg": self._redact(record.getMessage()),
        }
        if record.levelno < logging.WARNING:
            entry["v"] = verbosity_of(record.levelno)
        else:
            entry["level"] = record.levelname.lower()
        if text := _exception(record):
            entry["err"] = self._redact(text)
        for key, value in fields_of(record).items():
            entry.setdefault(key, _jsonable(value, self._redact))
        return orjson.dumps(entry).decode()


def _jsonable(value: object, clean: Redactor) -> object:
    if isinstance(value, bool | int | float):
        return value
    return clean(str(value))


def configure_logging(
    *,
    fmt: str,
    verbosity: int,
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Install one handler (stderr by default) on the root logger, klog-style.

    The values of credential variables in ``environ`` (default: the process's) are
    registered for redaction first.
    """
    DEFAULT.add_environment(os.environ if environ is None else environ)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else KlogFormatter())
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level_for(verbosity))
    libraries = logging.DEBUG if verbosity >= LIBRARY_VERBOSITY else logging.WARNING
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(libraries)

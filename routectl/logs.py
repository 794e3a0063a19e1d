"""Logging set-up: text for people, JSON lines for log pipelines; ``-v`` raises detail.

Verbosity follows klog: 0-3 log at INFO, 4 and above at DEBUG. Library loggers (aiohttp,
kubernetes-asyncio) stay at WARNING unless verbosity is 6 or more.
"""

from __future__ import annotations

import datetime
import logging
import sys

import orjson

DEBUG_VERBOSITY = 4
LIBRARY_VERBOSITY = 6


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
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry).decode()


def configure_logging(*, fmt: str, verbosity: int) -> None:
    """Install one stderr handler on the root logger."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbosity >= DEBUG_VERBOSITY else logging.INFO)
    quiet = logging.DEBUG if verbosity >= LIBRARY_VERBOSITY else logging.WARNING
    for name in ("aiohttp", "kubernetes_asyncio", "asyncio"):
        logging.getLogger(name).setLevel(quiet)

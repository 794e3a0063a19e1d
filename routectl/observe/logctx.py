"""What a log line carries besides its message: klog's verbosity, and the sync it is part of.

* :func:`v` is klog's ``V(level)`` as a :mod:`logging` level: ``V(0)`` is INFO, ``V(1)`` to
  ``V(3)`` lie just below it, ``V(4)`` is DEBUG and higher levels lie below DEBUG, so
  ``-v N`` shows exactly the lines of ``V(N)`` and below (see :func:`level_for`);
* :data:`SYNC` holds the number of the sync the running task works for (tasks started by a
  sync inherit it), so every line a sync logs carries ``sync=<n>``.

Pure: no I/O, no logging, no clock.
"""

from __future__ import annotations

import contextvars

INFO, DEBUG = 20, 10
DEBUG_VERBOSITY = 4
MAX_VERBOSITY = 10

SYNC: contextvars.ContextVar[int | None] = contextvars.ContextVar("routectl_sync", default=None)
"""The sync the current task works for (None outside syncs)."""


def v(level: int) -> int:
    """The :mod:`logging` level of klog's ``V(level)``."""
    level = max(0, min(level, MAX_VERBOSITY))
    if level < DEBUG_VERBOSITY:
        return INFO - level
    return DEBUG - (level - DEBUG_VERBOSITY)


def level_for(verbosity: int) -> int:
    """The logger level that lets ``-v verbosity`` through: ``V(verbosity)`` and below."""
    return v(verbosity)


def verbosity_of(levelno: int) -> int:
    """The klog verbosity of a record's level (0 for INFO and above)."""
    if levelno >= INFO:
        return 0
    if levelno > DEBUG:
        return INFO - levelno
    return DEBUG_VERBOSITY + DEBUG - levelno

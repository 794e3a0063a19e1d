"""Timestamps parsed and printed as Go's ``time`` package does for Kubernetes.

Promises:

* :func:`parse_time` accepts what ``metav1.Time`` accepts (Go ``time.RFC3339``, fractional
  seconds allowed and dropped) and returns the canonical ``2006-01-02T15:04:05Z`` form in UTC;
* :func:`parse_micro_time` accepts exactly what ``metav1.MicroTime`` accepts (layout
  ``2006-01-02T15:04:05.000000Z07:00``: six fractional digits, ``Z`` or a ``±hh:mm`` offset)
  and returns it in UTC with ``Z``;
* failures raise :class:`GoTimeError` whose text is Go's ``*time.ParseError`` text, e.g.
  ``parsing time "…" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".123Z" as ".000000"``.

It emulates only these two layouts, not Go's whole layout language.
"""

from __future__ import annotations

import calendar
import datetime
import functools
import json
from collections.abc import Callable

RFC3339 = "2006-01-02T15:04:05Z07:00"
_YEAR_WIDTH = len("2006")
_MICRO_WIDTH = len(".000000")
_ZONE_WIDTH = len("-07:00")
_ZONE_COLON = 3
_MAX_ZONE_HOURS = 24
_SIXTY = 60
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"


class GoTimeError(ValueError):
    """A timestamp Go would refuse; the message is Go's."""


class _Cursor:
    """The unparsed rest of a value, and what has been read so far."""

    def __init__(self, *, value: str, layout: str) -> None:
        self.value, self.layout, self.rest = value, layout, value
        self.fields: dict[str, int] = {}
        self.offset_seconds = 0

    def fail(self, element: str, rest: str) -> GoTimeError:
        return GoTimeError(
            f"parsing time {_quote(self.value)} as {_quote(self.layout)}: "
            f"cannot parse {_quote(rest)} as {_quote(element)}"
        )

    def out_of_range(self, what: str) -> GoTimeError:
        return GoTimeError(f"parsing time {_quote(self.value)}: {what} out of range")


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _two_digits(cur: _Cursor, *, element: str, fixed: bool = True) -> int:
    text = cur.rest
    if not text[:1].isdigit():
        raise cur.fail(element, text)
    if not text[1:2].isdigit():
        if fixed:
            raise cur.fail(element, text)
        cur.rest = text[1:]
        return int(text[0])
    cur.rest = text[2:]
    return int(text[:2])


def _literal(char: str) -> Callable[[_Cursor], None]:
    def parse(cur: _Cursor) -> None:
        if not cur.rest.startswith(char):
            raise cur.fail(char, cur.rest)
        cur.rest = cur.rest[1:]

    return parse


def _year(cur: _Cursor) -> None:
    text = cur.rest
    if len(text) < _YEAR_WIDTH or not text[:_YEAR_WIDTH].isdigit():
        raise cur.fail("2006", text)
    cur.fields["year"], cur.rest = int(text[:_YEAR_WIDTH]), text[_YEAR_WIDTH:]


def _ranged(
    name: str, element: str, low: int, high: int, *, fixed: bool = True
) -> Callable[[_Cursor], None]:
    def parse(cur: _Cursor) -> None:
        number = _two_digits(cur, element=element, fixed=fixed)
        if name != "day" and not low <= number <= high:
            raise cur.out_of_range(name)
        cur.fields[name] = number

    return parse


def _second(cur: _Cursor) -> None:
    """``05``: seconds; in RFC3339 an unexpected fraction is read and dropped (Go does too)."""
    number = _two_digits(cur, element="05")
    if number >= _SIXTY:
        raise cur.out_of_range("second")
    cur.fields["second"] = number
    text = cur.rest
    if cur.layout == RFC3339 and text[:1] in (".", ",") and text[1:2].isdigit():
        end = 2
        while end < len(text) and text[end].isdigit():
            end += 1
        cur.fields["nanosecond"] = int(text[1:end][:9].ljust(9, "0"))
        cur.rest = text[end:]


def _micro(cur: _Cursor) -> None:
    """``.000000``: exactly six fractional digits."""
    text = cur.rest
    digits = text[1:_MICRO_WIDTH]
    if len(text) < _MICRO_WIDTH or text[0] not in ".," or not digits.isdigit():
        raise cur.fail(".000000", text)
    cur.fields["nanosecond"], cur.rest = int(digits) * 1000, text[_MICRO_WIDTH:]


def _zone(cur: _Cursor) -> None:
    """``Z07:00``: ``Z`` or ``±hh:mm``."""
    text = cur.rest
    if text.startswith("Z"):
        cur.rest = text[1:]
        return
    if len(text) < _ZONE_WIDTH or text[_ZONE_COLON] != ":" or text[0] not in "+-":
        raise cur.fail("Z07:00", text)
    hours_text, minutes_text = text[1:_ZONE_COLON], text[_ZONE_COLON + 1 : _ZONE_WIDTH]
    if not (hours_text.isdigit() and minutes_text.isdigit()):
        raise cur.fail("Z07:00", text)
    hours, minutes = int(hours_text), int(minutes_text)
    if hours > _MAX_ZONE_HOURS:
        raise cur.out_of_range("time zone offset hour")
    if minutes > _SIXTY:
        raise cur.out_of_range("time zone offset minute")
    sign = -1 if text[0] == "-" else 1
    cur.offset_seconds = sign * (hours * _SIXTY + minutes) * _SIXTY
    cur.rest = text[_ZONE_WIDTH:]


_COMMON = (
    _year,
    _literal("-"),
    _ranged("month", "01", 1, 12),
    _literal("-"),
    _ranged("day", "02", 1, 31),
    _literal("T"),
    _ranged("hour", "15", 0, 23, fixed=False),
    _literal(":"),
    _ranged("minute", "04", 0, 59),
    _literal(":"),
    _second,
)
_STEPS = {RFC3339: (*_COMMON, _zone), RFC3339_MICRO: (*_COMMON, _micro, _zone)}


_CACHED = 1 << 12
"""Distinct timestamps remembered: one object's are read several times per write."""


def _parse(value: str, layout: str) -> datetime.datetime:
    cur = _Cursor(value=value, layout=layout)
    for step in _STEPS[layout]:
        step(cur)
    if cur.rest:
        raise GoTimeError(f"parsing time {_quote(value)}: extra text: {_quote(cur.rest)}")
    f = cur.fields
    if f["day"] < 1 or f["day"] > calendar.monthrange(f["year"], f["month"])[1]:
        raise cur.out_of_range("day")
    local = datetime.datetime(
        f["year"], f["month"], f["day"], f["hour"], f["minute"], f["second"], tzinfo=datetime.UTC
    )
    microseconds = f.get("nanosecond", 0) // 1000
    return local - datetime.timedelta(seconds=cur.offset_seconds, microseconds=-microseconds)


@functools.lru_cache(maxsize=_CACHED)
def parse_time(value: str) -> str:
    """Parse a ``metav1.Time`` and return it as Kubernetes prints it (whole seconds, UTC).

    Pure, so cached: an object's timestamps are parsed again on every write and read of it.
    A stamp already printed so (``2026-12-02T07:00:00Z``, a valid date and time: every
    kubelet heartbeat's) is its own canonical form and skips the parser."""
    if _printed_so(value):
        return value
    return _parse(value, RFC3339).strftime("%Y-%m-%dT%H:%M:%SZ")


_PRINTED = len("2006-01-02T15:04:05Z")


def _printed_so(value: str) -> bool:
    """True if ``value`` is ``YYYY-MM-DDTHH:MM:SSZ`` (a year from 1000) with a date and time
    that exist: then it is what the parser would print."""
    if len(value) != _PRINTED or value[4::3] != "--T::Z" or value[0] in "0-":
        return False
    fields = (value[0:4], value[5:7], value[8:10], value[11:13], value[14:16], value[17:19])
    if not all(f.isascii() and f.isdigit() for f in fields):
        return False
    year, month, day, hour, minute, second = (int(f) for f in fields)
    try:
        datetime.datetime(year, month, day, hour, minute, second, tzinfo=datetime.UTC)
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=_CACHED)
def parse_micro_time(value: str) -> str:
    """Parse a ``metav1.MicroTime`` and return it as Kubernetes prints it (6 digits, UTC)."""
    return _parse(value, RFC3339_MICRO).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_time() -> str:
    """The current wall-clock time as a ``metav1.Time`` (for creationTimestamp and the like)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

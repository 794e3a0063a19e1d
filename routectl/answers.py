"""Reading a cloud's JSON answers: a field of the wrong shape is one error naming it.

A plugin parses what its cloud answers. A cloud (or a proxy in front of it) that answers a
string where a route object belongs, or ``"two"`` where a number belongs, must not make the
plugin raise ``AttributeError`` or ``ValueError`` from deep inside: that reads as a bug, and
says nothing about which answer was wrong. :class:`Answer` wraps a decoded JSON value with
its path (``network.routes[2].gateway``) and reads it by type; the first value of the wrong
shape raises :class:`~routectl.errors.MalformedAnswerError` (a transient
:class:`~routectl.errors.ProviderError`) naming the request and the field::

    answer = Answer(await response.json(), what="Example Cloud GET /routes")
    for item in answer.field("routes").items():
        destination = item.field("destination").text()
        server = item.field("server").text(default="")

Pure: no I/O, no logging.
"""

from __future__ import annotations

from typing import Any

from routectl.cidr import parse_cidr
from routectl.errors import MalformedAnswerError

_KINDS = {
    dict: "an object",
    list: "a list",
    str: "a string",
    bool: "true or false",
    int: "a number",
    float: "a number",
    type(None): "null",
}


def _kind(value: object) -> str:
    return _KINDS.get(type(value), type(value).__name__)


class Answer:
    """One value of a decoded JSON answer, and where in the answer it is."""

    def __init__(self, value: object, *, what: str, path: str = "") -> None:
        self.value = value
        self.what = what
        """The request the answer came from, as messages name it."""
        self.path = path

    def _wrong(self, expected: str) -> MalformedAnswerError:
        where = self.path or "the answer"
        return MalformedAnswerError(
            f"{self.what}: malformed answer: {where} is {_kind(self.value)} "
            f"{self.value!r:.60}, expected {expected}",
            field=self.path,
        )

    @property
    def missing(self) -> bool:
        """True when the value is absent or null."""
        return self.value is None

    def field(self, key: str) -> Answer:
        """The value under ``key`` of this object (absent: null); not an object: an error."""
        if not isinstance(self.value, dict):
            raise self._wrong("an object")
        path = f"{self.path}.{key}" if self.path else key
        return Answer(self.value.get(key), what=self.what, path=path)

    def items(self, *, optional: bool = True) -> list[Answer]:
        """The entries of this list (null: none, when ``optional``)."""
        if self.value is None and optional:
            return []
        if not isinstance(self.value, list):
            raise self._wrong("a list")
        return [
            Answer(item, what=self.what, path=f"{self.path}[{index}]")
            for index, item in enumerate(self.value)
        ]

    def obj(self) -> dict[str, Any]:
        """This value as an object (its fields unread)."""
        if not isinstance(self.value, dict):
            raise self._wrong("an object")
        return self.value

    def text(self, *, default: str | None = None) -> str:
        """This value as a string; absent or null gives ``default`` where there is one."""
        if self.value is None and default is not None:
            return default
        if not isinstance(self.value, str):
            raise self._wrong("a string")
        return self.value

    def cidr(self) -> str:
        """This value as a string that reads as a CIDR (as Kubernetes reads one), as given."""
        text = self.text()
        try:
            parse_cidr(text)
        except ValueError:
            raise MalformedAnswerError(
                f"{self.what}: malformed answer: {self.path or 'the answer'} is "
                f"{self.value!r:.60}, expected a CIDR",
                field=self.path,
            ) from None
        return text

    def integer(self, *, default: int | None = None) -> int:
        """This value as an integer (a JSON number without fraction, not a boolean)."""
        if self.value is None and default is not None:
            return default
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise self._wrong("an integer")
        return self.value

    def flag(self, *, default: bool | None = None) -> bool:
        """This value as a boolean."""
        if self.value is None and default is not None:
            return default
        if not isinstance(self.value, bool):
            raise self._wrong("true or false")
        return self.value

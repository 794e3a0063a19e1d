"""Label and field selectors, parsed and matched like ``k8s.io/apimachinery`` does.

Promises:

* label selectors support ``=``, ``==``, ``!=``, ``in (…)``, ``notin (…)``, ``>``/``<``,
  ``key`` (exists) and ``!key`` (does not exist), comma-separated;
* field selectors support ``=``, ``==`` and ``!=`` terms, comma-separated, with ``\\``
  escapes; a field the resource does not index is refused with kube-apiserver's
  ``field label not supported: <label>``;
* every parse failure is a 400 :class:`~.status.ApiError`.

Selectors only test plain dicts; they know nothing about HTTP or storage.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Mapping

from routectl_sim.apiserver.status import ApiError, bad_request

_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|>|<|[^\s!=(),<>]+)")


@dataclasses.dataclass(frozen=True, slots=True)
class _Requirement:
    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "==", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if not present or value is None or not value.lstrip("-").isdigit():
            return False
        bound = int(self.values[0])
        return int(value) > bound if self.op == ">" else int(value) < bound


@dataclasses.dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed ``labelSelector``; the empty selector matches everything."""

    requirements: tuple[_Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the selector selects everything."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True when every requirement holds for ``labels``."""
        return all(r.matches(labels) for r in self.requirements)


def _label_error(text: str, why: str) -> ApiError:
    return bad_request(f"unable to parse requirement: labelSelector {text!r}: {why}")


def _tokens(text: str) -> list[str]:
    tokens, pos = [], 0
    while pos < len(text):
        found = _TOKEN.match(text, pos)
        if found is None:
            break
        tokens.append(found.group(1))
        pos = found.end()
        if not text[pos:].strip():
            break
    return tokens


def parse_label_selector(text: str) -> LabelSelector:
    """Parse ``text``; raise a 400 error when it is not a valid selector."""
    tokens = _tokens(text)
    requirements: list[_Requirement] = []
    while tokens:
        requirements.append(_parse_requirement(text, tokens))
        if tokens and tokens.pop(0) != ",":
            raise _label_error(text, "expected ','")
    return LabelSelector(tuple(requirements))


def _parse_requirement(text: str, tokens: list[str]) -> _Requirement:
    if tokens[0] == "!":
        tokens.pop(0)
        if not tokens or not _is_word(tokens[0]):
            raise _label_error(text, "expected a key after '!'")
        return _Requirement(tokens.pop(0), "!")
    key = tokens.pop(0)
    if not _is_word(key):
        raise _label_error(text, f"found {key!r}, expected an identifier")
    if not tokens or tokens[0] == ",":
        return _Requirement(key, "exists")
    op = tokens.pop(0)
    if op in ("=", "==", "!="):
        value = tokens.pop(0) if tokens and _is_word(tokens[0]) else ""
        return _Requirement(key, op, (value,))
    if op in (">", "<"):
        if not tokens or not tokens[0].lstrip("-").isdigit():
            raise _label_error(text, "for 'gt', 'lt' operators, exactly one integer is needed")
        return _Requirement(key, op, (tokens.pop(0),))
    if op in ("in", "notin"):
        return _Requirement(key, op, _parse_set(text, tokens))
    raise _label_error(text, f"found {op!r}, expected an operator")


def _parse_set(text: str, tokens: list[str]) -> tuple[str, ...]:
    if not tokens or tokens.pop(0) != "(":
        raise _label_error(text, "expected '(' after set operator")
    values: list[str] = []
    while tokens and tokens[0] != ")":
        item = tokens.pop(0)
        if item != ",":
            values.append(item)
    if not tokens:
        raise _label_error(text, "expected ')'")
    tokens.pop(0)
    return tuple(values)


def _is_word(token: str) -> bool:
    return token not in ("!=", "==", "=", "!", "(", ")", ",", ">", "<")


FieldGetter = Callable[[Mapping[str, object]], Mapping[str, str]]
"""Extracts a resource's selectable fields (``metadata.name`` …) from an object."""


@dataclasses.dataclass(frozen=True, slots=True)
class FieldSelector:
    """A parsed ``fieldSelector``: (label, negated, value) terms, all of which must hold."""

    terms: tuple[tuple[str, bool, str], ...] = ()

    @property
    def empty(self) -> bool:
        """True when the selector selects everything."""
        return not self.terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        """True when every term holds for the object's selectable ``fields``."""
        return all(
            (fields.get(label, "") == value) != negated for label, negated, value in self.terms
        )


def _split_unescaped(text: str, separator: str) -> list[str]:
    parts, current, escaped = [], "", False
    for char in text:
        if escaped:
            current += "\\" + char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == separator:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse_field_selector(text: str, *, supported: Collection[str]) -> FieldSelector:
    """Parse ``text`` against the resource's ``supported`` field labels (400 otherwise)."""
    if not text.strip():
        return FieldSelector()
    terms: list[tuple[str, bool, str]] = []
    for part in _split_unescaped(text, ","):
        for op in ("!=", "==", "="):
            label, found, value = part.partition(op)
            if found:
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        label = label.strip()
        if label not in supported:
            raise bad_request(f"field label not supported: {label}")
        terms.append((label, op == "!=", _unescape(value)))
    return FieldSelector(tuple(terms))

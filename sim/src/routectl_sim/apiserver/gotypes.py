"""A tiny model of Go structs, to decode and re-encode objects as kube-apiserver does.

The real server decodes JSON into Go structs and encodes them back, which silently:

* drops fields the struct does not know (and ``selfLink``/``managedFields`` here);
* turns ``null`` into the zero value, and leaves ``omitempty`` zero values out;
* always prints non-pointer structs (``"daemonEndpoints":{"kubeletEndpoint":{"Port":0}}``)
  and zero ``metav1.Time`` values as ``null``;
* normalises timestamps (see :mod:`.gotime`), prints struct fields in declaration order and
  map keys sorted.

:func:`Struct.canonical` reproduces that, so that "did this write change anything?" is
answered on the same bytes the real server compares. A JSON value of the wrong type raises
:class:`SchemaError` with Go's ``json: cannot unmarshal …`` text.

Only the shapes this package serves are modelled; unknown nested values pass through as
:class:`Raw`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

from routectl_sim.apiserver.gotime import GoTimeError, parse_micro_time, parse_time

Emit = Literal["always", "omitempty", "pointer", "omitzero"]
"""How a field is printed: Go ``omitempty`` (zero left out), pointer (``nil`` left out) …"""


class SchemaError(ValueError):
    """A JSON value Go could not decode into the struct; the message is Go's."""


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


@dataclasses.dataclass(frozen=True, slots=True)
class _Where:
    """Where a value sits, for error messages: innermost struct and dotted JSON path."""

    struct: str
    path: str

    def mismatch(self, value: Any, go_name: str) -> SchemaError:
        kind = _json_kind(value)
        if kind.startswith("number") and not go_name.startswith(("int", "float")):
            kind = "number"
        return SchemaError(
            f"json: cannot unmarshal {kind} into Go struct field "
            f"{self.struct}.{self.path} of type {go_name}"
        )


class GoType:
    """One Go type: how to decode a JSON value into it, and its zero value's encoding."""

    @property
    def go_name(self) -> str:
        """The type as Go's decode errors print it."""
        return "interface {}"

    def canonical(self, value: Any, where: _Where) -> Any:
        """Decode then encode ``value`` (never ``None``)."""
        raise NotImplementedError

    def zero(self) -> Any:
        """What Go prints for this type's zero value."""
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class Scalar(GoType):
    """``string``, ``bool``, ``int32`` or ``int64``."""

    name: str

    @property
    def go_name(self) -> str:
        return self.name

    def canonical(self, value: Any, where: _Where) -> Any:
        name = self.name
        if name == "string":
            ok = isinstance(value, str)
        elif name == "bool":
            ok = isinstance(value, bool)
        else:
            bits = 31 if name == "int32" else 63
            ok = type(value) is int and -(2**bits) <= value < 2**bits
        if not ok:
            raise where.mismatch(value, name)
        return value

    def zero(self) -> Any:
        return {"bool": False, "string": ""}.get(self.go_name, 0)


@dataclasses.dataclass(frozen=True, slots=True)
class Raw(GoType):
    """A value passed through as-is (quantities, nested structs not modelled here)."""

    def canonical(self, value: Any, where: _Where) -> Any:
        return value


@dataclasses.dataclass(frozen=True, slots=True)
class Time(GoType):
    """``metav1.Time`` (whole seconds) or, with ``micro``, ``metav1.MicroTime``."""

    micro: bool = False

    @property
    def go_name(self) -> str:
        return "v1.MicroTime" if self.micro else "v1.Time"

    def canonical(self, value: Any, where: _Where) -> Any:
        if not isinstance(value, str):
            raise where.mismatch(value, "string")
        parse: Callable[[str], str] = parse_micro_time if self.micro else parse_time
        try:
            return parse(value)
        except GoTimeError as exc:
            raise SchemaError(str(exc)) from exc


@dataclasses.dataclass(frozen=True, slots=True)
class ListOf(GoType):
    """A Go slice; ``null`` decodes to ``nil``."""

    item: GoType

    @property
    def go_name(self) -> str:
        return f"[]{self.item.go_name}"

    def canonical(self, value: Any, where: _Where) -> Any:
        if not isinstance(value, list):
            raise where.mismatch(value, self.go_name)
        return [self.item.zero() if v is None else self.item.canonical(v, where) for v in value]

    def canonical_like(self, value: Any, where: _Where, known: list[list[Any]]) -> Any:
        """:meth:`canonical`, taking an item that *is* an item of a ``known`` canonical
        list of this type as it is."""
        if not isinstance(value, list):
            raise where.mismatch(value, self.go_name)
        seen = {id(item) for items in known for item in items}
        item = self.item
        return [
            item.zero() if v is None else v if id(v) in seen else item.canonical(v, where)
            for v in value
        ]


@dataclasses.dataclass(frozen=True, slots=True)
class MapOf(GoType):
    """A Go map with string keys."""

    item: GoType

    @property
    def go_name(self) -> str:
        return f"map[string]{self.item.go_name}"

    def canonical(self, value: Any, where: _Where) -> Any:
        if not isinstance(value, dict):
            raise where.mismatch(value, self.go_name)
        return {  # Go's encoding/json writes map keys sorted
            k: self.item.zero() if value[k] is None else self.item.canonical(value[k], where)
            for k in sorted(value)
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Field:
    """A struct field: JSON name, type, and how Go prints it."""

    name: str
    type: GoType
    emit: Emit = "omitempty"


def _is_empty(value: Any) -> bool:
    """Go's ``omitempty`` test on a decoded JSON value: null, false, 0, "", [] and {} (the
    JSON values that are false in Python)."""
    return not value


_ALWAYS, _IF_GIVEN, _OMITEMPTY = 0, 1, 2
"""How a struct field is printed, as :data:`Emit` says, in the form the hot loop tests."""


@dataclasses.dataclass(frozen=True, slots=True)
class Struct(GoType):
    """A Go struct: known fields in order; unknown fields are dropped."""

    name: str
    fields: tuple[Field, ...]
    _places: dict[str, tuple[_Where, ...]] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    """Per parent path, where each field sits (built once: decoding is the server's hot path)."""
    _plan: list[tuple[str, GoType, int, bool]] = dataclasses.field(
        default_factory=list, init=False, repr=False, compare=False, hash=False
    )
    """Per field: JSON name, type, how it is printed, and whether its zero value is empty."""

    @property
    def go_name(self) -> str:
        return self.name

    def _where(self, path: str) -> tuple[_Where, ...]:
        places = self._places.get(path)
        if places is None:
            short = self.name.rpartition(".")[2]
            places = tuple(
                _Where(short, f"{path}.{field.name}" if path else field.name)
                for field in self.fields
            )
            self._places[path] = places
        return places

    def _fields(self) -> list[tuple[str, GoType, int, bool]]:
        if not self._plan:
            emits = {"always": _ALWAYS, "pointer": _IF_GIVEN, "omitzero": _IF_GIVEN}
            self._plan.extend(
                (f.name, f.type, emits.get(f.emit, _OMITEMPTY), _is_empty(f.type.zero()))
                for f in self.fields
            )
        return self._plan

    def canonical(self, value: Any, where: _Where) -> dict[str, Any]:
        return self._canonical_like(value, where, ())

    def zero(self) -> Any:
        return self.canonical({}, _Where(self.go_name, ""))

    def decode(self, value: Any, *, known: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
        """Canonicalise a whole object (the top-level struct); raise :class:`SchemaError`.

        ``known`` are canonical objects of this struct that ``value`` may share parts with
        (the stored object a PATCH started from, say): a field whose value *is* the known
        object's (the same Python object, not an equal one) is canonical already and is
        taken as it is, since decoding a canonical value gives it back. The result is the
        same as without ``known``; only the unchanged parts are not walked again.
        """
        where = _Where(self.go_name.rpartition(".")[2], "")
        if known:
            return self._canonical_like(value, where, known)
        return self.canonical(value, where)

    def _canonical_like(
        self, value: Any, where: _Where, known: tuple[dict[str, Any], ...]
    ) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise where.mismatch(value, self.go_name)
        out: dict[str, Any] = {}
        get = value.get
        for (name, kind, emit, zero_is_empty), inner in zip(
            self._fields(), self._where(where.path), strict=True
        ):
            raw = get(name)
            if raw is None:  # null or absent: the zero value, printed unless omitted
                if emit == _ALWAYS or (emit == _OMITEMPTY and not zero_is_empty):
                    out[name] = kind.zero()
                continue
            if not known:
                decoded = kind.canonical(raw, inner)
            elif any(k.get(name) is raw for k in known):  # canonical already
                decoded = raw
            else:
                decoded = self._field_like(raw, kind, inner, [k.get(name) for k in known])
            if emit != _OMITEMPTY or not _is_empty(decoded):
                out[name] = decoded
        return out

    @staticmethod
    def _field_like(raw: Any, kind: GoType, inner: _Where, mates: list[Any]) -> Any:
        """A changed field, decoded beside the known objects' values of it (``mates``)."""
        if isinstance(kind, Struct) and (inside := tuple(m for m in mates if isinstance(m, dict))):
            return kind._canonical_like(raw, inner, inside)  # noqa: SLF001
        if isinstance(kind, ListOf) and (lists := [m for m in mates if isinstance(m, list)]):
            return kind.canonical_like(raw, inner, lists)
        return kind.canonical(raw, inner)


STRING = Scalar("string")
BOOL = Scalar("bool")
INT32 = Scalar("int32")
INT64 = Scalar("int64")
TIME = Time()
MICRO_TIME = Time(micro=True)
RAW = Raw()


def struct(go_name: str, *fields: Field) -> Struct:
    """Shorthand for :class:`Struct`."""
    return Struct(go_name, fields)

"""Settings declared once: each field says its flag, syntax, default, help and check.

A settings class is made with :func:`settings_dataclass` (frozen, slotted, keyword-only) and
each field is declared with :func:`option`. :func:`options_of` reads the declarations back as
:class:`Option` records: the table the command line, the call policy, the chart tests and
the option tests are all derived from, so nothing about a setting is written twice.

Promises:

* an option's flag is ``--`` and its field name in kebab-case, unless the option names
  another (an upstream flag name) or is internal (no flag: set in code only);
* :meth:`Option.validate` refuses a value with a ConfigError ``"<flag> <reason>"``: one line
  that names the flag (an internal option's field name stands in for it);
* :meth:`Option.read` turns a flag's text into a value; a text of the wrong shape is a
  ConfigError ``"<flag>: ..."``, and ConfigErrors in upstream's words pass unchanged;
* nothing here reads the environment: an option only names the variable that may replace
  its default, and the command line reads it.

Pure: no I/O, no clock, no logging.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, dataclass_transform

from routectl.cidr import Network
from routectl.config.syntax import (
    format_bool,
    format_cidrs,
    format_duration,
    format_key_values,
    format_number,
    is_host_port,
    key_values,
    parse_bool,
    parse_cluster_cidrs,
    parse_duration,
    parse_int,
    parse_number,
)
from routectl.errors import ConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
N = TypeVar("N", int, float)
C = TypeVar("C")

RUN = "run"
PLAN = "plan"
_KEY = "routectl.config.option"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Syntax(Generic[T]):
    """How a flag's text becomes a value (``parse``), and a value text again (``show``)."""

    metavar: str
    parse: Callable[[str], T]
    """Raises ValueError for a text of the wrong shape (or ConfigError in upstream's words)."""
    show: Callable[[T], str]
    late: bool = False
    """Read by :meth:`Option.read` after the command line is parsed, so that errors keep
    their own words rather than argparse's ``argument --flag: ...``."""
    bare: T | None = None
    """The value of the flag given without one (Go booleans: ``--leader-elect`` is true)."""
    empty_is_unset: bool = False
    """An empty text means "not given" (the default), as the CCM reads ``--tls-cert-file=``."""
    slice: bool = False
    """pflag's slices (``--controllers``, ``--tls-cipher-suites``...): a repeated flag adds
    its items, as the CCM reads it (the texts are joined by commas, then read; read late)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RepeatedSyntax(Generic[T]):
    """A flag given once per item (``--provider-option=a=1 --provider-option=b=2``); late."""

    metavar: str
    parse: Callable[[Sequence[str]], T]
    show: Callable[[T], str]


DURATION = Syntax(metavar="DURATION", parse=parse_duration, show=format_duration)
BOOL = Syntax(metavar="BOOL", parse=parse_bool, show=format_bool, bare=True)
INT = Syntax(metavar="INT", parse=parse_int, show=str)
NUMBER = Syntax(metavar="NUMBER", parse=parse_number, show=format_number)
STRING = Syntax(metavar="TEXT", parse=str, show=str)
OPTIONAL_STRING: Syntax[str | None] = Syntax(
    metavar="TEXT", parse=str, show=lambda v: v or "", empty_is_unset=True
)
"""Empty is "not given", as the CCM reads ``--tls-cert-file=`` or ``--kubeconfig=``."""
KEY_VALUES: RepeatedSyntax[Mapping[str, str]] = RepeatedSyntax(
    metavar="KEY=VALUE", parse=key_values, show=format_key_values
)
CLUSTER_CIDRS: Syntax[tuple[Network, ...]] = Syntax(
    metavar="CIDR[,CIDR]", parse=parse_cluster_cidrs, show=format_cidrs, late=True
)
"""``--cluster-cidr``, read late: its errors are upstream's texts, shown as they are."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Check(Generic[T]):
    """What makes a value valid (``ok``), and the ``reason`` a refusal gives."""

    reason: str
    """Completes ``"<flag> ..."``, e.g. ``must be >= 1``."""
    ok: Callable[[T], bool]
    refuses: tuple[T, ...]
    """Values ``ok`` refuses; the table's tests try each one."""
    choices: tuple[T, ...] = ()
    """Every valid value, when there are only a few (the command line lists them)."""


def at_least(low: N) -> Check[N]:
    """Valid from ``low`` up."""
    return Check(reason=f"must be >= {low:g}", ok=lambda v: v >= low, refuses=(low - 1,))


def above(low: N) -> Check[N]:
    """Valid above ``low`` only."""
    return Check(reason=f"must be > {low:g}", ok=lambda v: v > low, refuses=(low, low - 1))


def within(low: N, high: N) -> Check[N]:
    """Valid from ``low`` to ``high``, both included."""
    return Check(
        reason=f"must be within {low:g}..{high:g}",
        ok=lambda v: low <= v <= high,
        refuses=(low - 1, high + 1),
    )


def one_of(*choices: str) -> Check[str]:
    """Valid: one of ``choices``."""
    listed = choices[0] if len(choices) == 1 else f"{', '.join(choices[:-1])} or {choices[-1]}"
    return Check(
        reason=f"must be {listed}",
        ok=lambda v: v in choices,
        refuses=("", f"not-{choices[0]}"),
        choices=choices,
    )


def non_empty() -> Check[str]:
    """Valid: any text but the empty one."""
    return Check(reason="must not be empty", ok=bool, refuses=("",))


def matches(pattern: re.Pattern[str], *, reason: str, refuses: tuple[str, ...]) -> Check[str]:
    """Valid: a text ``pattern`` matches (anchor it)."""
    return Check(reason=reason, ok=lambda v: bool(pattern.match(v)), refuses=refuses)


def host_port() -> Check[str]:
    """Valid: ``host:port``, the port within 0..65535."""
    return Check(reason="must be host:port", ok=is_host_port, refuses=("8080", ":99999"))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Option(Generic[T]):
    """One setting: a field of the settings class, and the flag that sets it, if any."""

    name: str
    """The field's name."""
    flag: str | None
    """``--kebab-case``; None for an internal option, which only code sets."""
    aliases: tuple[str, ...]
    help: str
    syntax: Syntax[T] | RepeatedSyntax[T]
    default: T | None
    required: bool
    check: Check[T] | None
    group: str | None
    """The heading ``--help`` lists the flag under."""
    commands: frozenset[str]
    """The commands that take the flag (``run``, ``plan``)."""
    metavar: str
    env: str | None
    """An environment variable whose value, when set, replaces the default."""

    @property
    def label(self) -> str:
        """The flag, or the field's name for an internal option."""
        return self.flag or self.name

    @property
    def late(self) -> bool:
        """True when the command line leaves the flag's text to :meth:`read`."""
        syntax = self.syntax
        return isinstance(syntax, RepeatedSyntax) or syntax.late or syntax.slice

    def validate(self, value: T) -> None:
        """Raise ConfigError ``"<flag> <reason>"`` if ``value`` fails the check."""
        if self.check is not None and not self.check.ok(value):
            raise ConfigError(f"{self.label} {self.check.reason}")

    def read(self, raw: str | list[str]) -> T:
        """The value of the flag's text (of every text, for a repeated flag)."""
        texts = [raw] if isinstance(raw, str) else raw
        try:
            if isinstance(self.syntax, RepeatedSyntax):
                return self.syntax.parse(texts)
            if self.syntax.slice:
                return self.syntax.parse(",".join(texts))
            return self.syntax.parse(texts[-1])
        except ValueError as exc:
            raise ConfigError(f"{self.label}: {exc}") from None

    def accepts(self, text: str) -> bool:
        """Whether the flag takes ``text``: it reads and passes the check (rules across
        options aside)."""
        try:
            self.validate(self.read(text))
        except ConfigError:
            return False
        return True

    def help_text(self) -> str:
        """The help line: what the option does, and its default in the flag's syntax."""
        shown = "" if self.default is None else self.syntax.show(self.default)
        if self.env:
            return f"{self.help} (default: ${self.env} if set, else {shown})"
        return f"{self.help} (default: {shown})" if shown else self.help


class _Missing(enum.Enum):
    REQUIRED = "no default: the option is required"


REQUIRED = _Missing.REQUIRED


def option(
    *,
    default: T | _Missing = REQUIRED,
    factory: Callable[[], T] | None = None,
    help: str,  # noqa: A002 -- argparse's name for it
    syntax: Syntax[T] | RepeatedSyntax[T] | None = None,
    flag: str | None = None,
    internal: bool = False,
    aliases: tuple[str, ...] = (),
    check: Check[T] | None = None,
    group: str | None = None,
    commands: Collection[str] = (RUN,),
    metavar: str | None = None,
    env: str | None = None,
) -> T:
    """Declare a field of a :func:`settings_dataclass` class as an option.

    ``syntax`` may be left out for a bool, int, float or str default. ``flag`` is only given
    when it is not the field's name in kebab-case; ``internal`` options have no flag.
    """
    value: T | None = None
    if factory is not None:
        value = factory()
    elif not isinstance(default, _Missing):
        value = default
    chosen = syntax or _syntax_of(value)
    spec = Option(
        name="",
        flag=None if internal else flag or "",  # "": derived from the name by options_of()
        aliases=aliases,
        help=help,
        syntax=chosen,
        default=value,
        required=isinstance(default, _Missing) and factory is None,
        check=check,
        group=None if internal else group,
        commands=frozenset(() if internal else commands),
        metavar=metavar or chosen.metavar,
        env=env,
    )
    metadata = {_KEY: spec}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    if isinstance(default, _Missing):
        return cast("T", dataclasses.field(metadata=metadata))
    return dataclasses.field(default=default, metadata=metadata)


def _syntax_of(default: object) -> Syntax[Any]:
    for kind, syntax in ((bool, BOOL), (int, INT), (float, NUMBER), (str, STRING)):
        if isinstance(default, kind):
            return syntax
    raise TypeError(f"say the syntax of an option whose default is {default!r}")


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(option,))
def settings_dataclass(cls: type[C]) -> type[C]:
    """``dataclasses.dataclass(frozen=True, kw_only=True)``, with :func:`option`
    as the field specifier, so type checkers know which options are required. No slots:
    :class:`routectl.config.Settings` joins several such classes."""
    return dataclasses.dataclass(frozen=True, kw_only=True)(cls)


def options_of(cls: type[DataclassInstance]) -> tuple[Option[Any], ...]:
    """The options of a settings class, in field order; every field must be one."""
    found: list[Option[Any]] = []
    for field in dataclasses.fields(cls):
        spec = field.metadata.get(_KEY)
        if not isinstance(spec, Option):
            raise TypeError(f"{cls.__name__}.{field.name} is not declared with option()")
        flag = "--" + field.name.replace("_", "-") if spec.flag == "" else spec.flag
        found.append(dataclasses.replace(spec, name=field.name, flag=flag))
    return tuple(found)

"""The flags of ``routectl run`` and ``routectl plan``, built from the settings table.

Every flag is an option of :class:`~routectl.config.Settings` (:data:`~routectl.config.OPTIONS`):
its name, syntax, help, default and check are declared there, once. This module only turns
the table into argparse arguments and parsed arguments back into Settings; the one flag it
names itself is ``plan --output``, which is not a setting.

Promises:

* ``routectl plan`` takes ``routectl run``'s whole command line (a pasted CCM line
  included), so the preview reads exactly what the service will;
* flag names and syntax follow the cloud-controller-manager (``--flag=false``, durations
  such as ``1m30s``), and ``--help`` shows every flag's default, in Go syntax;
* a bad flag or value exits 2 with one line that names it;
* this is the edge that reads the environment: an option naming a variable (the Lease's
  namespace, ``POD_NAMESPACE``) takes its default from it when it is set.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from routectl.config import OPTIONS, Settings
from routectl.config.option import PLAN, RUN, Option, RepeatedSyntax, Syntax
from routectl.config.syntax import parse_bool

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def new_parser(**kwargs: Any) -> argparse.ArgumentParser:
    """An ArgumentParser whose errors are one line and exit code 2."""
    return _Parser(**kwargs)


def parse_version_flag(text: str) -> bool:
    """The CCM's ``--version[=true|false|raw]``: whether to print the version and exit."""
    text = text.removeprefix("=")
    if text == "raw":
        return True
    try:
        return parse_bool(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: use true, false or raw"
        ) from None


def wants_version(argv: Sequence[str]) -> bool:
    """``--version`` (true or raw) is among ``argv``: print the version, whatever else."""
    for arg in argv:
        name, sep, value = arg.partition("=")
        if name != "--version":
            continue
        try:
            if not sep or parse_version_flag(value):
                return True
        except argparse.ArgumentTypeError:
            return False  # argparse says what is wrong with it
    return False


def go_help(argv: Sequence[str]) -> list[str]:
    """pflag's ways the parser does not know by itself: ``--help=false`` is dropped and
    ``--help=true`` is ``--help``; a boolean flag given bare (``--leader-elect``) never takes
    the next word as its value (pflag's ``NoOptDefVal``: ``--leader-elect false`` leaves
    ``false`` as a stray argument, refused, where argparse would have read it as the value)."""
    kept: list[str] = []
    for arg in argv:
        name, sep, value = arg.partition("=")
        if not sep and name in _bare_flags():
            kept.append(f"{name}={_bare_flags()[name]}")
            continue
        if name in ("--help", "-h") and sep:
            try:
                if parse_bool(value):
                    kept.append(name)
            except ValueError:
                kept.append(arg)  # argparse says what is wrong with it
            continue
        kept.append(arg)
    return kept


@functools.cache
def _bare_flags() -> dict[str, str]:
    """Every spelling of a flag that may be given without a value (pflag's booleans), with
    the text that stands for it."""
    bare: dict[str, str] = {"--version": "true"}
    for option in OPTIONS:
        const = getattr(option.syntax, "bare", None)
        if option.flag is not None and const is not None:
            for name in (option.flag, *option.aliases):
                bare[name] = option.syntax.show(const)
    return bare


def add_commands(commands: Any, *, environ: Mapping[str, str] | None = None) -> None:
    """Add ``run`` and ``plan`` to a subparsers object (``environ``: default os.environ)."""
    environ = os.environ if environ is None else environ
    run = commands.add_parser("run", help="run the route controller")
    _add_options(run, RUN, environ)
    plan = commands.add_parser("plan", help="print what a sync would change, change nothing")
    _add_options(plan, PLAN, environ, also=RUN)  # run's whole command line, pasted as it is
    for each in (run, plan):
        each.add_argument(
            "--version", dest="print_version", nargs="?", const=True, default=False,
            type=parse_version_flag, metavar="BOOL|raw",
            help="print routectl's version and exit (the CCM's flag)",
        )  # fmt: skip
    plan.add_argument("--output", "-o", choices=["table", "json"], default="table")
    plan.add_argument(
        "--detailed-exitcode", action="store_true",
        help="exit 2 when changes are pending, 0 when none, 1 on error (as terraform plan)",
    )  # fmt: skip


def parse_run_flags(argv: Sequence[str], *, environ: Mapping[str, str] | None = None) -> Settings:
    """Parse ``routectl run`` flags (without the command) into Settings."""
    parser = new_parser(prog="routectl")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_commands(commands, environ=environ)
    return settings_from_args(parser.parse_args(["run", *go_help(argv)]))


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Validate parsed flags into :class:`Settings`; raises ConfigError naming the flag.

    A flag not given is left out, so its default is the one Settings declares.
    """
    given: dict[str, Any] = {}
    for option in OPTIONS:
        raw = getattr(args, option.name, None)
        if raw == "" and getattr(option.syntax, "empty_is_unset", False):
            continue  # an empty text is "not given", as the CCM reads it
        if raw is not None:
            given[option.name] = option.read(raw) if option.late else raw
    return Settings(**given)


def _add_options(
    parser: argparse.ArgumentParser,
    command: str,
    environ: Mapping[str, str],
    *,
    also: str | None = None,
) -> None:
    groups: dict[str | None, Any] = {}
    for option in OPTIONS:
        if option.flag is None or not {command, also} & set(option.commands):
            continue
        if option.group not in groups:
            groups[option.group] = parser.add_argument_group(option.group)
        short = tuple(a for a in option.aliases if not a.startswith("--"))
        long = tuple(a for a in option.aliases if a.startswith("--"))
        names = (*short, option.flag, *long)  # usage shows routectl's spelling
        groups[option.group].add_argument(*names, dest=option.name, **_argument(option, environ))


def _argument(option: Option[Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """argparse's keywords for ``option``: None stands for "not given" (Settings' default)."""
    spec: dict[str, Any] = {
        "help": option.help_text().replace("%", "%%"),
        "default": (environ.get(option.env) or None) if option.env else None,
        "required": option.required,
        "metavar": option.metavar,
    }
    syntax = option.syntax
    if isinstance(syntax, RepeatedSyntax) or syntax.slice:
        return spec | {"action": "append"}
    if any(alias.startswith("--") for alias in option.aliases):  # -v is --v's shorthand
        spec["action"] = _OneSpelling
    if option.check is not None and option.check.choices:
        spec |= {"choices": option.check.choices, "metavar": None}
    if syntax.bare is not None:
        spec |= {"nargs": "?", "const": syntax.bare}
    if not syntax.late and syntax.parse is not str:  # plain text needs no conversion
        spec["type"] = _converter(syntax)
    return spec


class _OneSpelling(argparse.Action):
    """Store the value, as argparse does, but refuse two spellings of one option (``--provider``
    and ``--cloud-provider``) with different values: neither silently wins."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        spelled: dict[str, tuple[str, Any]] = namespace.__dict__.setdefault("_spelled", {})
        before = spelled.get(self.dest)
        if before is not None and before[0] != option_string and before[1] != values:
            parser.error(
                f"{before[0]}={before[1]} and {option_string}={values} name the same setting "
                "with different values; give one of them"
            )
        spelled[self.dest] = (option_string or self.dest, values)
        setattr(namespace, self.dest, values)


def _converter(syntax: Syntax[Any]) -> Callable[[str], Any]:
    """argparse's ``type``: a text of the wrong shape is its one-line ``argument --flag: ...``."""

    def convert(text: str) -> Any:
        try:
            return syntax.parse(text.removeprefix("="))  # ``-v=3`` arrives as ``=3``
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = syntax.metavar.lower()
    return convert

"""The command line: ``routectl run | plan | providers``, and commands other distributions add.

``run`` and ``plan`` flags live in :mod:`routectl.cli.flags`. Other distributions add commands
through the entry-point group ``routectl.commands`` (``routectl simulate`` comes from
``routectl-sim``); the product itself depends on none of them. A bad flag or value exits 2
with one line naming it.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

from routectl import __version__
from routectl.cli.dropin import with_cloud_config
from routectl.cli.flags import (
    add_commands,
    go_help,
    new_parser,
    settings_from_args,
    wants_version,
)
from routectl.errors import ConfigError
from routectl.provider import installed_providers

__all__ = ["COMMANDS_GROUP", "CommandPlugin", "build_parser", "main", "settings_from_args"]

COMMANDS_GROUP = "routectl.commands"
BUILT_IN = frozenset({"run", "plan", "providers"})
"""routectl's own commands: running one needs no other distribution's command."""
EXIT_USAGE = 2
_KNOWN_ELSEWHERE = {
    "simulate": "routectl simulate comes with the routectl-sim distribution: "
    "pip install -e ./sim (from the repository)",
    "playground": "routectl playground comes with the routectl-sim distribution: "
    "pip install -e ./sim (from the repository)",
}


class CommandPlugin(Protocol):
    """A subcommand another distribution adds under ``routectl.commands``."""

    name: str

    def add(self, commands: Any) -> None:
        """Add the subcommand (and its flags) to an argparse subparsers object."""
        ...

    def run(self, args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        """Run it; return the process exit code."""
        ...


def command_plugins() -> Mapping[str, CommandPlugin]:
    """The installed command plugins by name (each entry point is imported)."""
    found = importlib.metadata.entry_points(group=COMMANDS_GROUP)
    return {ep.name: cast("CommandPlugin", ep.load()) for ep in found}


def build_parser(
    plugins: Mapping[str, CommandPlugin] | None = None,
) -> argparse.ArgumentParser:
    """The full command-line parser (also used to check the Helm chart's rendered args)."""
    parser = new_parser(
        prog="routectl", description="Keeps cloud routes in step with Kubernetes Nodes."
    )
    parser.add_argument("--version", action="version", version=f"routectl {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=type(parser))
    add_commands(commands)
    commands.add_parser("providers", help="list installed provider plugins")
    plugins = command_plugins() if plugins is None else plugins
    for plugin in plugins.values():
        plugin.add(commands)
    for name, hint in _KNOWN_ELSEWHERE.items():
        if name not in plugins:
            commands.add_parser(name, help=f"(not installed) {hint}", add_help=False)
    return parser


def _print_providers() -> int:
    found = installed_providers()
    if not found:
        print("no provider plugins installed")  # noqa: T201
        return 1
    width = max(len(p.name) for p in found)
    for p in found:
        print(f"{p.name:<{width}}  {p.distribution} {p.version}  ({p.target})")  # noqa: T201
    return 0


def main(
    argv: Sequence[str] | None = None, *, plugins: Mapping[str, CommandPlugin] | None = None
) -> int:
    """Parse ``argv`` and run the command; returns the process exit code.

    ``plugins`` are the commands other distributions add; by default the installed ones,
    imported only when the command asked for is not one of routectl's own (``routectl run``
    starts without importing ``routectl simulate`` and its fake API server).
    """
    given = sys.argv[1:] if argv is None else list(argv)
    if plugins is None:
        plugins = {} if given[:1] and given[0] in BUILT_IN else command_plugins()
    parser = build_parser(plugins)
    if given[:1] in (["run"], ["plan"]):
        if wants_version(given[1:]):
            print(f"routectl {__version__}")  # noqa: T201 -- the CCM's --version
            return 0
        given = [given[0], *go_help(given[1:])]
    args, extra = parser.parse_known_args(given)
    if args.command in _KNOWN_ELSEWHERE and args.command not in plugins:
        parser.exit(EXIT_USAGE, f"routectl: error: {_KNOWN_ELSEWHERE[args.command]}\n")
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "providers":
        return _print_providers()
    if args.command in plugins:
        return plugins[args.command].run(args, parser)
    try:
        settings = with_cloud_config(settings_from_args(args))
    except ConfigError as exc:
        parser.error(str(exc))
    from routectl.cli.app import plan_once, run  # noqa: PLC0415 -- keeps `providers` light

    try:
        if args.command == "plan":
            return asyncio.run(
                plan_once(settings, output=args.output, detailed_exitcode=args.detailed_exitcode)
            )
        return asyncio.run(run(settings))
    except ConfigError as exc:
        parser.error(str(exc))

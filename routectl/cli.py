"""The command line: ``routectl run | plan | providers | simulate``.

``run`` and ``plan`` flags live in :mod:`routectl.flags`; ``simulate`` in
:mod:`routectl.simulate.command`. A bad flag or value exits 2 with one line naming it.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from routectl import __version__
from routectl.errors import ConfigError
from routectl.flags import add_commands, new_parser, settings_from_args
from routectl.provider import installed_providers
from routectl.simulate.command import add_simulate, run_simulate

__all__ = ["build_parser", "main", "settings_from_args"]


def build_parser() -> argparse.ArgumentParser:
    """The full command-line parser (also used to check the Helm chart's rendered args)."""
    parser = new_parser(
        prog="routectl", description="Keeps cloud routes in step with Kubernetes Nodes."
    )
    parser.add_argument("--version", action="version", version=f"routectl {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=type(parser))
    add_commands(commands)
    commands.add_parser("providers", help="list installed provider plugins")
    add_simulate(commands)
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


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "providers":
        return _print_providers()
    if args.command == "simulate":
        return run_simulate(args, parser)
    try:
        settings = settings_from_args(args)
    except ConfigError as exc:
        parser.error(str(exc))
    from routectl.service import plan_once, run  # noqa: PLC0415 -- keeps `providers` light

    try:
        if args.command == "plan":
            return asyncio.run(plan_once(settings, output=args.output))
        return asyncio.run(run(settings))
    except ConfigError as exc:
        parser.error(str(exc))

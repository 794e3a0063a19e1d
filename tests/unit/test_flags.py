"""The command line built from the settings table: help, defaults, commands, environment."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from routectl.cli.flags import add_commands, new_parser, parse_run_flags
from routectl.config import OPTIONS, Settings
from routectl.config.option import PLAN, RUN

REQUIRED = ["--cluster-cidr=10.244.0.0/16", "--provider=fake"]


def subparser(command: str, environ: dict[str, str] | None = None) -> argparse.ArgumentParser:
    """The parser of ``routectl <command>``."""
    parser = new_parser(prog="routectl")
    commands = parser.add_subparsers(dest="command", required=True)
    add_commands(commands, environ=environ or {})
    found: argparse.ArgumentParser = commands.choices[command]
    return found


@pytest.mark.parametrize("command", [RUN, PLAN])
def test_help_lists_every_flag_with_its_help_and_default(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--help`` shows each flag of the command, its help and its default (Go syntax)."""
    monkeypatch.setenv("COLUMNS", "400")  # so that no long word is broken across lines
    text = " ".join(subparser(command).format_help().split())
    for each in OPTIONS:
        if each.flag and command in each.commands:
            assert each.flag in text
            assert " ".join(each.help_text().split()) in text, each.flag


def test_help_shows_durations_and_booleans_in_go_syntax() -> None:
    """Defaults read as a Go binary prints them: ``1h0m0s``, ``250ms``, ``true``."""
    text = " ".join(subparser(RUN).format_help().split())
    assert "(default: 1h0m0s)" in text
    assert "(default: 250ms)" in text
    assert "program routes at all (default: true)" in text


@pytest.mark.parametrize("command", [RUN, PLAN])
def test_each_command_takes_exactly_its_options(command: str) -> None:
    """``run`` takes the flags the table gives it; ``plan`` takes run's whole command line
    (a pasted CCM line previews as it is) and adds ``--output`` and ``--detailed-exitcode``."""
    taken = {s for a in subparser(command)._actions for s in a.option_strings}
    expected = {n for o in OPTIONS if RUN in o.commands for n in (o.flag, *o.aliases)}
    extra = {"-o", "--output", "--detailed-exitcode"} if command == PLAN else set()
    assert taken == expected | extra | {"-h", "--help", "--version"}


def test_flags_not_given_leave_the_settings_defaults() -> None:
    """Only the required flags: every other setting is the table's default."""
    parsed = parse_run_flags(REQUIRED, environ={})
    defaults = {o.name: o.default for o in OPTIONS if not o.required}
    assert {f.name: getattr(parsed, f.name) for f in dataclasses.fields(Settings)} == defaults | {
        "cluster_cidrs": parsed.cluster_cidrs,
        "provider": "fake",
    }


@pytest.mark.parametrize(
    ("environ", "flags", "namespace"),
    [
        pytest.param({}, [], "kube-system", id="unset"),
        pytest.param({"POD_NAMESPACE": ""}, [], "kube-system", id="empty"),
        pytest.param({"POD_NAMESPACE": "routing"}, [], "routing", id="from-env"),
        pytest.param(
            {"POD_NAMESPACE": "routing"},
            ["--leader-elect-resource-namespace=other"],
            "other",
            id="flag-wins",
        ),
    ],
)
def test_the_lease_namespace_defaults_to_pod_namespace(
    environ: dict[str, str], flags: list[str], namespace: str
) -> None:
    """POD_NAMESPACE (read by the command line, not by config) replaces the default."""
    parsed = parse_run_flags([*REQUIRED, *flags], environ=environ)
    assert parsed.leader_elect_resource_namespace == namespace


def test_every_flag_takes_the_default_its_help_shows() -> None:
    """Passing each default exactly as ``--help`` prints it changes nothing."""
    plain = parse_run_flags(REQUIRED, environ={})
    for each in OPTIONS:
        shown = "" if each.default is None else each.syntax.show(each.default)
        if each.flag and RUN in each.commands and shown and not each.env:
            assert parse_run_flags([*REQUIRED, f"{each.flag}={shown}"], environ={}) == plain

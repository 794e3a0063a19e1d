"""The settings table: every option complete, consistently named, and valid by its own check.

Table-driven over ``routectl.config.OPTIONS``, so a new option is covered as soon as it is
declared.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from routectl.config import OPTIONS, Settings, parse_cluster_cidrs
from routectl.config.option import PLAN, RUN, Option, option, options_of, settings_dataclass
from routectl.config.syntax import format_duration, parse_duration
from routectl.errors import ConfigError

REQUIRED: dict[str, Any] = {
    "cluster_cidrs": parse_cluster_cidrs("10.244.0.0/16"),
    "provider": "fake",
}
UPSTREAM_NAMES = {
    "cluster_cidrs": "--cluster-cidr",
    "provider_options": "--provider-option",
    "batch_window": "--route-sync-batch-window",
    "listing_max_age": "--route-listing-max-age",
    "verbosity": "--v",
}
"""Flags not named after their field: the CCM's names, or routectl's published ones."""
KEBAB = re.compile(r"^--[a-z][a-z0-9]*(-[a-z0-9]+)*$")
DEFAULTED = [o for o in OPTIONS if not o.required]
CHECKED = [(o, bad) for o in OPTIONS if o.check for bad in o.check.refuses]


def ids(value: object) -> str:
    """Name a parameter by its option."""
    return value.name if isinstance(value, Option) else repr(value)


@pytest.mark.parametrize("each", OPTIONS, ids=ids)
def test_every_option_has_one_line_of_help(each: Option[object]) -> None:
    """Each option says what it does, on one line, without a full stop (argparse style)."""
    assert each.help.strip()
    assert "\n" not in each.help
    assert not each.help.endswith(".")


def test_flags_are_the_field_names_in_kebab_case_unless_upstream_named_them() -> None:
    """A flag is ``--`` and its field's name with dashes; the exceptions are pinned here."""
    renamed = {
        o.name: o.flag for o in OPTIONS if o.flag and o.flag != f"--{o.name}".replace("_", "-")
    }
    assert renamed == UPSTREAM_NAMES
    assert [o.flag for o in OPTIONS if o.flag and not KEBAB.match(o.flag)] == []


def test_flags_and_aliases_are_unique() -> None:
    """No two options share a flag or an alias."""
    names = [n for o in OPTIONS if o.flag for n in (o.flag, *o.aliases)]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("each", OPTIONS, ids=ids)
def test_flags_have_a_heading_and_commands_internal_options_none(each: Option[object]) -> None:
    """A flag is listed under a heading of ``run`` and/or ``plan``; an internal option is not
    reachable from the command line or the environment at all."""
    if each.flag:
        assert each.group
        assert each.commands
        assert each.commands <= {RUN, PLAN}
    else:
        assert (each.group, each.commands, each.aliases, each.env) == (None, frozenset(), (), None)


def test_only_where_the_cluster_and_the_cloud_are_is_required() -> None:
    """The pod CIDRs and the provider have no default; everything else does."""
    assert [o.flag for o in OPTIONS if o.required] == ["--cluster-cidr", "--provider"]


@pytest.mark.parametrize("each", DEFAULTED, ids=ids)
def test_defaults_pass_their_own_check(each: Option[object]) -> None:
    """Each default is valid by its option's check, and is the default Settings gets."""
    if each.check is not None:
        assert each.check.ok(each.default)
    assert getattr(Settings(**REQUIRED), each.name) == each.default


@pytest.mark.parametrize("each", [o for o in DEFAULTED if o.flag], ids=ids)
def test_the_default_help_shows_is_a_text_the_flag_reads_back(each: Option[object]) -> None:
    """The default in ``--help`` is in the flag's own syntax (Go durations, Go booleans)."""
    shown = each.syntax.show(each.default) if each.default is not None else ""
    if shown:
        assert each.read(shown) == each.default


@pytest.mark.parametrize(("each", "bad"), CHECKED, ids=ids)
def test_each_check_refuses_a_bad_value_in_one_line_naming_the_flag(
    each: Option[object], bad: object
) -> None:
    """A value the check refuses is a ConfigError ``"<flag> <reason>"``."""
    assert each.check is not None
    with pytest.raises(ConfigError) as info:
        Settings(**(REQUIRED | {each.name: bad}))
    assert str(info.value) == f"{each.label} {each.check.reason}"
    assert "\n" not in str(info.value)


def test_the_leader_election_rule_names_flags_of_the_table() -> None:
    """The rule across the Lease timings says which flags to change; all of them exist."""
    with pytest.raises(ConfigError) as info:
        Settings(**REQUIRED, leader_elect_renew_deadline=20.0)
    named = set(re.findall(r"--[a-z-]+", str(info.value)))
    assert named == {
        "--leader-elect-lease-duration",
        "--leader-elect-renew-deadline",
        "--leader-elect-retry-period",
    }
    assert named <= {o.flag for o in OPTIONS}


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        pytest.param(
            "provider_options",
            "novalue",
            "--provider-option: expected key=value, got 'novalue'",
            id="key-value",
        ),
        pytest.param(
            "feature_gates",
            "Nope=true",
            "--feature-gates: unrecognized feature gate: Nope",
            id="feature-gate",
        ),
        pytest.param(
            "cluster_cidrs",
            "banana",
            'failed to parse cidr value:"banana" with error:invalid CIDR address: banana',
            id="cidr-upstream-text",
        ),
        pytest.param(
            "cloud_call_timeout",
            "10",
            "--cloud-call-timeout: invalid duration '10' (use Go syntax such as 10s, 1m30s, 500ms)",
            id="duration",
        ),
    ],
)
def test_a_text_of_the_wrong_shape_names_the_flag(name: str, text: str, message: str) -> None:
    """Reading a flag's text fails with the flag's name, or with upstream's exact words."""
    (each,) = (o for o in OPTIONS if o.name == name)
    with pytest.raises(ConfigError) as info:
        each.read(text)
    assert str(info.value) == message


def test_accepts_reads_and_checks_a_text() -> None:
    """``accepts`` says whether a flag takes a text: the right shape and within its check."""
    (timeout,) = (o for o in OPTIONS if o.name == "cloud_call_timeout")
    assert timeout.accepts("1m30s")
    assert not timeout.accepts("0s")
    assert not timeout.accepts("ten seconds")


def test_a_field_declared_without_option_is_refused() -> None:
    """Every field of a settings class must be an option, or reading the table fails."""

    @settings_dataclass
    class Partial:
        declared: int = option(default=1, help="a declared option")
        undeclared: int = 2

    with pytest.raises(TypeError, match=r"Partial\.undeclared"):
        options_of(Partial)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0s"),
        (1e-9, "1ns"),
        (1.5e-6, "1.5µs"),
        (0.25, "250ms"),
        (10.0, "10s"),
        (90.0, "1m30s"),
        (300.0, "5m0s"),
        (3600.0, "1h0m0s"),
        (5400.5, "1h30m0.5s"),
        (-1.5, "-1.5s"),
    ],
)
def test_durations_print_as_go_prints_them(seconds: float, text: str) -> None:
    """``format_duration`` matches Go's ``time.Duration.String``, and reads back (if >= 0)."""
    assert format_duration(seconds) == text
    if seconds >= 0:
        assert parse_duration(text) == pytest.approx(seconds)

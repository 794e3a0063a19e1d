"""`routectl simulate`'s presentation: the summary, the notes, the tables and the picture.

Built from hand-made results (no simulation runs), so each rule is checked on numbers
chosen to show it: who wins and by how much, ties, "never", the one-line reason where
routectl's median is worse, rows left out when they would say nothing, and panels only
where there is data, every line drawn to the end of its run.
"""

from __future__ import annotations

import argparse
import io
import math
from pathlib import Path

import pytest
from rich.console import Console

from routectl_sim.app import PIPED_WIDTH, console, picture_path, report
from routectl_sim.report import (
    SUMMARY,
    _calls_axis,
    _draw_calls,
    _seconds_axis,
    budget_notes,
    panels,
    table,
    verdict,
)
from routectl_sim.runner import CloudModel, Job, Result

CALLS, LATENCY, CONVERGED = SUMMARY


def result(
    profile: str,
    *,
    scenario: str = "scale-up",
    calls: int = 10,
    latencies: tuple[float, ...] = (),
    throttled: int = 0,
    converge: float = 0.0,
    duration: float = 900.0,
) -> Result:
    """A result with only what the presentation reads set."""
    return Result(
        job=Job(
            scenario=scenario, profile=profile, nodes=100, duration=duration, cloud=CloudModel()
        ),
        cloud_calls={"list": 1, "create": calls - 1, "delete": 0, "replace": 0},
        throttled=throttled,
        latencies=list(latencies),
        ready_latencies=list(latencies),
        converge_seconds=converge,
        wrongful_deletes=0,
        cpu_seconds=0.5,
        peak_rss_bytes=2**20,
        call_times=[float(i) for i in range(calls)],
    )


def test_the_winner_is_named_with_its_ratio_over_the_next_best() -> None:
    group = [result("routectl", calls=10), result("a", calls=25), result("b", calls=100)]
    assert verdict(CALLS, group) == "routectl: 10\n2.5x fewer: a 25"


def test_equal_winners_are_named_together_and_a_full_tie_says_so() -> None:
    group = [result("routectl", calls=1), result("a", calls=1), result("b", calls=91)]
    assert verdict(CALLS, group) == "routectl = a: 1\n91x fewer: b 91"
    assert verdict(CALLS, group[:2]) == "tie: all 1"


def test_a_profile_that_never_converged_loses_to_any_that_did() -> None:
    group = [result("routectl", converge=30.0), result("a", converge=-1.0)]
    assert verdict(CONVERGED, group) == "routectl: 30.00s\na: never"


def test_no_latency_anywhere_is_a_dash_not_a_zero() -> None:
    assert verdict(LATENCY, [result("routectl"), result("a")]) == "-"


def test_routectl_slower_median_within_budget_gets_its_reason() -> None:
    """routectl's median above a profile's that was throttled: one line says why."""
    ours = result("routectl", latencies=(10.0, 20.0, 30.0))
    theirs = result("upstream-watch", latencies=(5.0, 8.0, 60.0), throttled=66)
    (note,) = budget_notes([ours, theirs])
    assert note.startswith("scale-up: routectl's median latency (20.00s) is above ")
    assert "upstream-watch's 8.00s (66 throttled)" in note
    assert "1 request/s" in note
    assert "\n" not in note


def test_no_reason_is_given_where_routectl_is_not_slower_or_the_other_was_not_refused() -> None:
    ours = result("routectl", latencies=(10.0, 20.0, 30.0))
    assert budget_notes([ours, result("a", latencies=(30.0,), throttled=5)]) == []
    assert budget_notes([ours, result("a", latencies=(5.0,), throttled=0)]) == []


def test_rows_that_say_nothing_are_left_out() -> None:
    """Options that were off (ReplaceRoute, batches) and quiet chaos rows do not show."""
    out = io.StringIO()
    Console(file=out, width=PIPED_WIDTH).print(table([result("routectl"), result("a")]))
    text = out.getvalue()
    assert "ListRoutes calls" in text
    assert "ReplaceRoute" not in text
    assert "whole-table" not in text
    assert "faults injected" not in text
    assert "invariants broken" in text


def test_the_report_opens_with_the_summary_and_ends_with_the_legend() -> None:
    out = io.StringIO()
    group = [result("routectl", latencies=(1.0,)), result("upstream-periodic", calls=91)]
    report(Console(file=out, width=PIPED_WIDTH), group)
    text = out.getvalue()
    assert text.lstrip().startswith("At a glance")
    assert text.index("At a glance") < text.index("scale-up: 100 nodes") < text.index("Legend")
    assert "better" in text
    assert max(len(line) for line in text.splitlines()) <= PIPED_WIDTH


def test_panels_are_only_those_with_data() -> None:
    """An idle run has calls and nothing to measure: one panel, not three."""
    idle = [result("routectl", scenario="idle"), result("a", scenario="idle")]
    joins = [result("routectl", latencies=(1.0, 2.0)), result("a")]
    rows = panels([*idle, *joins])
    assert [p.title for p in rows[0]] == ["cumulative cloud calls"]
    assert [p.title for p in rows[1]] == [
        "cumulative cloud calls",
        "route latency CDF",
        "node ready CDF",
    ]


@pytest.fixture
def axis():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    plt = pytest.importorskip("matplotlib.pyplot")
    fig, axis = plt.subplots()
    yield axis
    plt.close(fig)


def test_each_calls_line_runs_to_the_end_of_its_run(axis) -> None:
    """A run whose last call is early still draws to its end (and marks it)."""
    short = result("upstream-periodic", calls=3, duration=900.0)
    long = result("upstream-watch", calls=1, duration=54240.0)
    for r in (short, long):
        _draw_calls(axis, r, {"label": r.job.profile})
    ends = [max(line.get_xdata()) for line in axis.get_lines()]
    assert math.isclose(max(ends), 54240.0 / 60)
    assert any(math.isclose(end, 900.0 / 60) for end in ends)
    _calls_axis(axis)


def test_log_axes_label_more_than_the_powers_of_ten(axis) -> None:
    axis.plot([0.8, 40.0], [0.0, 1.0])
    _seconds_axis(axis)
    axis.figure.canvas.draw()
    labels = {t.get_text() for t in axis.get_xticklabels() if t.get_text()}
    assert {"1", "2", "5", "10", "20"} <= labels


def test_log_axes_over_many_decades_label_each_power_of_ten_without_crowding(axis) -> None:
    axis.plot([0.001, 100.0], [0.0, 1.0])
    _seconds_axis(axis)
    axis.figure.canvas.draw()
    labels = [t.get_text() for t in axis.get_xticklabels() if t.get_text()]
    assert {"0.001", "0.01", "0.1", "1", "10", "100"} <= set(labels)
    assert "2" not in labels


def test_piped_output_is_a_readable_fixed_width(monkeypatch) -> None:
    """Not a terminal (pytest captures stdout) and no COLUMNS: 120 columns, not 80."""
    monkeypatch.delenv("COLUMNS", raising=False)
    assert console().width == PIPED_WIDTH


@pytest.mark.parametrize(
    ("json_path", "plot", "no_plot", "can_plot", "drawn"),
    [
        ("out/sim.json", None, False, True, "out/sim.png"),  # beside the JSON by default
        ("out/sim.json", None, False, False, None),  # no matplotlib: no picture, no failure
        ("out/sim.json", "pic.png", False, True, "pic.png"),
        ("out/sim.json", None, True, True, None),
        (None, None, False, True, None),  # nothing asked, nothing written
    ],
)
def test_where_the_picture_goes(json_path, plot, no_plot, can_plot, drawn) -> None:
    args = argparse.Namespace(
        json=None if json_path is None else Path(json_path),
        plot=None if plot is None else Path(plot),
        no_plot=no_plot,
        can_plot=can_plot,
        seeds=1,
    )
    assert picture_path(args) == (None if drawn is None else Path(drawn))

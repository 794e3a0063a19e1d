"""Present simulation results: the summary, a table per scenario, the legend, the JSON of
record, and the picture.

* :func:`summary_table` names, per scenario, the winner on cloud calls, p99 latency and
  convergence (lower wins) with its ratio over the named next best; ties and "never" are
  said as such, and where the profiles' runs differ in length (drift) calls are per hour;
* :func:`budget_notes` gives one line wherever routectl's median latency is above that of
  a profile the cloud throttled (routectl holds to the budget);
* :func:`table` leaves out rows every profile shows as "option off", and shows "-" where
  there is nothing to measure; :func:`legend_table` says what each row means and which
  way is better;
* :func:`plot` draws one panel per scenario and measure that has data, each profile with
  its own line style and markers, log axes labelled, every calls line to the end of its
  run (marked by a bar).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from routectl_sim.measure import percentile
from routectl_sim.profiles import IPAM_SCENARIOS, pod_cidr_pool
from routectl_sim.runner import Job, Result

MINUTES_FROM = 120.0
INVARIANTS = (
    "wrongful_deletes",
    "foreign_routes_touched",
    "budget_overruns",
    "concurrent_writers",
    "unconverged_after_faults",
    "unhandled_exceptions",
    "cidr_reused_while_routed",
)


def by_scenario(results: Sequence[Result]) -> dict[str, list[Result]]:
    """Group results by scenario, keeping their order."""
    groups: dict[str, list[Result]] = {}
    for result in results:
        groups.setdefault(result.job.scenario, []).append(result)
    return groups


def scenario_json(results: Sequence[Result]) -> dict[str, object]:
    """One scenario's object of ``--json`` (all results share the scenario)."""
    first = results[0].job
    return {
        "scenario": first.scenario,
        "nodes": first.nodes,
        "simulated_seconds": max(float(r.job.duration) for r in results),
        "profiles": {r.job.profile: r.summary() for r in results},
    }


def write_json(path: Path, results: Sequence[Result], *, many: bool) -> None:
    """Write one object (one scenario) or a list of them (``--scenario all``)."""
    objects = [scenario_json(group) for group in by_scenario(results).values()]
    path.write_text(json.dumps(objects if many else objects[0], indent=2) + "\n", encoding="utf-8")


def sweep_json(results: Sequence[Result]) -> dict[str, object]:
    """A seed sweep: per (scenario, profile), the invariants of every seed and their sum."""
    first = results[0].job
    runs: dict[str, list[Result]] = {}
    for r in results:
        runs.setdefault(f"{r.job.scenario}/{r.job.profile}", []).append(r)
    totals = {
        key: {name: sum(r.invariants.get(name, 0) for r in group) for name in INVARIANTS}
        for key, group in runs.items()
    }
    listed = {
        key: [{"seed": r.job.seed, "invariants": r.invariants, "faults": r.faults} for r in group]
        for key, group in runs.items()
    }
    return {
        "nodes": first.nodes,
        "simulated_seconds": float(first.duration),
        "seeds": sorted({r.job.seed for r in results}),
        "totals": totals,
        "runs": listed,
    }


def write_sweep_json(path: Path, results: Sequence[Result]) -> None:
    """Write a seed sweep's JSON (``--seeds``)."""
    path.write_text(json.dumps(sweep_json(results), indent=2) + "\n", encoding="utf-8")


def sweep_table(results: Sequence[Result]) -> Table:
    """A seed sweep: one row per invariant, its total over all seeds and the seeds breaking it."""
    first = results[0].job
    seeds = sorted({r.job.seed for r in results})
    t = Table(
        title=f"{first.scenario}: {len(seeds)} seeds ({seeds[0]}..{seeds[-1]}), "
        f"{first.nodes} nodes, {_seconds(first.duration)} simulated each"
    )
    for column in ("profile", "invariant", "total", "seeds breaking it"):
        t.add_column(column)
    for r_profile in sorted({r.job.profile for r in results}):
        mine = [r for r in results if r.job.profile == r_profile]
        for name in INVARIANTS:
            bad = [str(r.job.seed) for r in mine if r.invariants.get(name, 0)]
            total = sum(r.invariants.get(name, 0) for r in mine)
            t.add_row(r_profile, name, str(total), ", ".join(bad) or "-")
    faults = sum(len(r.faults) for r in results)
    t.caption = f"{faults} faults injected in all"
    return t


def _seconds(value: float) -> str:
    if value < 0:
        return "never"
    return f"{value:.2f}s" if value < MINUTES_FROM else f"{value / 60:.1f}min"


def _count(value: float) -> str:
    return f"{value:,.0f}"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Measure:
    """One column of the summary: a number per result (None: nothing to measure); lower wins."""

    title: str
    unit: str
    """What the ratio counts: "fewer", "faster", "sooner"."""
    value: Callable[[Result], float | None]
    show: Callable[[float], str]


def _total_calls(r: Result) -> float:
    return float(sum(r.cloud_calls.values()))


def _calls_per_hour(r: Result) -> float:
    return _total_calls(r) * 3600.0 / r.job.duration


def _latency_p99(r: Result) -> float | None:
    values = r.join_latencies if r.job.scenario in IPAM_SCENARIOS else r.latencies
    return percentile(values, 0.99) if values else None


def _convergence(r: Result) -> float | None:
    return math.inf if r.converge_seconds < 0 else r.converge_seconds


def _show_seconds(value: float) -> str:
    return "never" if math.isinf(value) else _seconds(value)


SUMMARY = (
    Measure(title="cloud calls", unit="fewer", value=_total_calls, show=_count),
    Measure(title="latency p99", unit="faster", value=_latency_p99, show=_show_seconds),
    Measure(
        title="converged after last change", unit="sooner", value=_convergence, show=_show_seconds
    ),
)
"""The summary's columns: calls, latency (route, or registration → ready in the node IPAM
scenarios) and convergence; lower wins in each."""
PER_HOUR = Measure(
    title="cloud calls", unit="fewer", value=_calls_per_hour, show=lambda v: f"{v:,.1f}/h"
)
"""Calls where the profiles' runs differ in length (drift): per simulated hour."""


def verdict(measure: Measure, results: Sequence[Result]) -> str:
    """Who wins on ``measure``, by how much over the next best (ties named together)."""
    values = [(v, r.job.profile) for r in results if (v := measure.value(r)) is not None]
    if not values:
        return "-"
    best = min(v for v, _ in values)
    winners = [p for v, p in values if _same(v, best)]
    others = sorted((v, p) for v, p in values if not _same(v, best))
    if not others:
        return f"tie: all {measure.show(best)}" if len(values) > 1 else measure.show(best)
    runner_up, name = others[0]
    if math.isinf(runner_up):
        beaten = f"{name}: never"
    elif best <= 0:
        beaten = f"{name}: {measure.show(runner_up)}"
    else:
        beaten = f"{_ratio(runner_up / best)} {measure.unit}: {name} {measure.show(runner_up)}"
    return f"{' = '.join(winners)}: {measure.show(best)}\n{beaten}"


def _ratio(value: float) -> str:
    return f"{value:,.0f}x" if value >= 100 else f"{value:.3g}x"  # noqa: PLR2004


def _same(a: float, b: float) -> bool:
    return a == b or (not math.isinf(a) and not math.isinf(b) and math.isclose(a, b, rel_tol=0.01))


def summary_table(results: Sequence[Result]) -> Table:
    """At a glance: per scenario, which profile wins on calls, latency and convergence."""
    first = results[0].job
    t = Table(
        title=f"At a glance: {first.nodes} Nodes, seed {first.seed}, a cloud budget of "
        f"{first.cloud.qps:g} request/s (burst {first.cloud.burst}). Each cell: the winner "
        "(lower is better), then how many times better it is than the next best, named",
    )
    t.add_column("scenario")
    for measure in SUMMARY:
        t.add_column(measure.title)
    for scenario, group in by_scenario(results).items():
        measures = SUMMARY
        if len({r.job.duration for r in group}) > 1:
            measures = (PER_HOUR, *SUMMARY[1:])
        t.add_row(scenario, *(verdict(m, group) for m in measures))
    t.caption = (
        "cloud calls: every request the cloud received (ListRoutes, CreateRoute, DeleteRoute, "
        "ReplaceRoute, throttled ones too). latency p99: 99th percentile from a Node getting "
        "its pod CIDR (or new addresses) to its route existing; node IPAM scenarios: from "
        "registering to ready. converged: from the workload's last change until the cloud "
        "matched the cluster (never: not within the run). Where the profiles' runs differ "
        "in length (drift: each runs until its full listing could repair), calls are per "
        "simulated hour."
    )
    return t


OURS = ("routectl", "routectl-ipam", "kcm+routectl")
"""Profiles whose calls routectl paces to the cloud's budget."""


def budget_notes(results: Sequence[Result]) -> list[str]:
    """One line per scenario where routectl's median latency is above another profile's
    because routectl holds every call to the budget while that profile is refused."""
    notes = []
    for scenario, group in by_scenario(results).items():
        ours = [r for r in group if r.job.profile in OURS]
        for mine in ours:
            values = _latencies(mine)
            if not values or mine.throttled:
                continue
            median = percentile(values, 0.50)
            faster = [
                r
                for r in group
                if r.job.profile not in OURS
                and r.throttled
                and _latencies(r)
                and percentile(_latencies(r), 0.50) < median * 0.99
            ]
            if not faster:
                continue
            names = ", ".join(
                f"{r.job.profile}'s {_seconds(percentile(_latencies(r), 0.50))} "
                f"({r.throttled} throttled)"
                for r in faster
            )
            qps = mine.job.cloud.qps
            notes.append(
                f"{scenario}: {mine.job.profile}'s median latency "
                f"({_seconds(median)}) is above {names}: {mine.job.profile} holds every call "
                f"to the cloud's budget ({qps:g} request/s) and is never refused, while the "
                f"others spend the burst at once and are then throttled; compare the p99 and "
                f"convergence."
            )
    return notes


def _latencies(r: Result) -> list[float]:
    return r.join_latencies if r.job.scenario in IPAM_SCENARIOS else r.latencies


def table(results: Sequence[Result]) -> Table:
    """One scenario, one column per profile; rows that would say nothing are left out."""
    first = results[0].job
    longest = max(r.job.duration for r in results)
    title = f"{first.scenario}: {first.nodes} nodes, {_seconds(longest)} simulated"
    if first.scenario in IPAM_SCENARIOS:
        pool = pod_cidr_pool(first.scenario, nodes=first.nodes, pool_blocks=first.pool_blocks)
        title += f", pod CIDRs from {pool}"
    if any(r.job.duration != longest for r in results):
        title += " (each profile until its full listing could repair drift)"
    t = Table(title=title)
    t.add_column("")
    for r in results:
        t.add_column(r.job.profile, justify="right")
    rows = _ipam_rows(results) if first.scenario in IPAM_SCENARIOS else _route_rows(results)
    for label, cells in rows:
        if label in QUIET_WHEN and all(cell == QUIET_WHEN[label] for cell in cells):
            continue
        t.add_row(label, *cells)
    return t


QUIET_WHEN = {
    "ReplaceRoute calls": "0",
    "of the writes, whole-table batches": "0",
    "faults injected": "0",
    "controller replicas started": "1",
}
"""Rows left out of a table when every profile shows this (the option was off)."""


def _broken(r: Result, names: Iterable[str]) -> str:
    broken = [f"{n.replace('_', ' ')} {r.invariants[n]}" for n in names if r.invariants.get(n)]
    return ", ".join(broken) or "none"


def _ipam_rows(results: Sequence[Result]) -> list[tuple[str, list[str]]]:
    """What node IPAM costs: the way from registration to ready, API writes and Events."""
    reasons = sorted({key for r in results for key in r.events})
    writes = ("node_spec", "node_status", "leases", "events")
    return [
        (
            "Nodes registered / ready",
            [f"{r.registrations} / {len(r.join_latencies)}" for r in results],
        ),
        (
            "registration → pod CIDR p50 / p99",
            [_pair(r.cidr_latencies) for r in results],
        ),
        ("registration → ready p50 / p99", [_pair(r.join_latencies) for r in results]),
        (
            "registration → ready max",
            [_most(r.join_latencies) for r in results],
        ),
        *(
            (f"API writes: {w.replace('_', ' ')}", [str(r.api_writes.get(w, 0)) for r in results])
            for w in writes
        ),
        *((f"Events: {key}", [str(r.events.get(key, 0)) for r in results]) for key in reasons),
        ("ListRoutes / CreateRoute / DeleteRoute", [_calls_of(r) for r in results]),
        ("throttled answers", [str(r.throttled) for r in results]),
        ("converged after last change", [_seconds(r.converge_seconds) for r in results]),
        ("controller CPU (routes; KCM's not counted)", [f"{r.cpu_seconds:.2f}s" for r in results]),
        ("invariants broken", [_broken(r, INVARIANTS) for r in results]),
    ]


def _pair(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return (
        f"{_seconds(percentile(list(values), 0.50))} / {_seconds(percentile(list(values), 0.99))}"
    )


def _most(values: Sequence[float]) -> str:
    return _seconds(max(values)) if values else "-"


def _calls_of(r: Result) -> str:
    return " / ".join(str(r.cloud_calls[op]) for op in ("list", "create", "delete"))


def _route_rows(results: Sequence[Result]) -> list[tuple[str, list[str]]]:
    """What routing costs: cloud calls, latencies, CPU and memory."""
    invariants = [n for n in INVARIANTS if n != "cidr_reused_while_routed"]
    return [
        ("ListRoutes calls", [str(r.cloud_calls["list"]) for r in results]),
        ("CreateRoute calls", [str(r.cloud_calls["create"]) for r in results]),
        ("DeleteRoute calls", [str(r.cloud_calls["delete"]) for r in results]),
        ("ReplaceRoute calls", [str(r.cloud_calls.get("replace", 0)) for r in results]),
        ("throttled answers", [str(r.throttled) for r in results]),
        ("of the writes, whole-table batches", [str(r.batched_writes) for r in results]),
        ("route latency p50 / p99", [_pair(r.latencies) for r in results]),
        ("route latency max", [_most(r.latencies) for r in results]),
        ("node ready p50 / p99", [_pair(r.ready_latencies) for r in results]),
        ("node ready max", [_most(r.ready_latencies) for r in results]),
        (
            "node ready after its route, max",
            [_most(r.ready_after_route) for r in results],
        ),
        ("converged after last change", [_seconds(r.converge_seconds) for r in results]),
        ("controller CPU", [f"{r.cpu_seconds:.2f}s" for r in results]),
        ("peak RSS growth", [f"{r.peak_rss_bytes / 2**20:.1f} MiB" for r in results]),
        (
            "RSS growth, last two thirds",
            [f"{r.late_rss_growth_bytes / 2**20:.1f} MiB" for r in results],
        ),
        ("faults injected", [str(len(r.faults)) for r in results]),
        ("controller replicas started", [str(r.replicas_started) for r in results]),
        ("invariants broken", [_broken(r, invariants) for r in results]),
    ]


LEGEND = (
    (
        "ListRoutes / CreateRoute / DeleteRoute / ReplaceRoute calls",
        "requests the cloud received, throttled ones included",
        "fewer",
    ),
    (
        "throttled answers",
        'requests the cloud\'s budget refused (it answered "slow down")',
        "fewer; 0 is the goal",
    ),
    ("whole-table batches", "writes that carried a batch to a whole-table cloud", "-"),
    (
        "route latency",
        (
            "a Node gets its pod CIDR (or new addresses) → its route exists; "
            "p50 / p99 / max over the Nodes that got one"
        ),
        "lower",
    ),
    (
        "node ready",
        (
            "a Node gets its pod CIDR → NetworkUnavailable=False is written "
            "(until then no pod is scheduled on it)"
        ),
        "lower",
    ),
    (
        "node ready after its route",
        "the longest a Node waited after its own route existed",
        "lower",
    ),
    (
        "registration → pod CIDR / ready",
        "node IPAM: a Node registers → it has a pod CIDR / is ready",
        "lower",
    ),
    (
        "API writes, Events",
        "node IPAM: write requests to the API server by kind; Events by type and reason",
        "fewer",
    ),
    (
        "converged after last change",
        "the workload's last change → the cloud matches the cluster; never: not within the run",
        "lower",
    ),
    (
        "controller CPU",
        "CPU time of the controller's own callbacks (not the fake API server's or the cloud's)",
        "lower",
    ),
    (
        "peak RSS growth, RSS growth last two thirds",
        (
            "the process's memory above its size "
            "before the controller started (an upper bound); growth late in the run hints at a leak"
        ),
        "lower",
    ),
    (
        "invariants broken",
        (
            "wrongful deletes, foreign routes touched, budget overruns, two "
            "writers at once, unconverged after faults, unhandled exceptions (node IPAM: CIDRs "
            "reused while routed)"
        ),
        "none; the upstream profiles are expected to overrun the budget",
    ),
    (
        "profile routectl",
        "routectl with its defaults, its client bucket set to the cloud's budget",
        "-",
    ),
    (
        "profile upstream-watch",
        (
            "the CCM's route controller, watch mode (KEP-5237): at most one sync "
            "per 10 s, a fresh listing each time, no client budget, no retries"
        ),
        "-",
    ),
    (
        "profile upstream-periodic",
        "the classic CCM route controller: a full sync with a fresh listing every 10 s",
        "-",
    ),
    (
        "profiles kcm+<profile>, routectl-ipam",
        (
            "node IPAM: KCM's allocator beside <profile>, or "
            "routectl allocating itself (--allocate-node-cidrs)"
        ),
        "-",
    ),
)
"""What each row and profile of the tables means, and which way is better."""


def legend_table() -> Table:
    """The legend of the detail tables."""
    t = Table(title="Legend (docs/benchmarks.md has the method)", expand=True)
    t.add_column("row or column", ratio=3)
    t.add_column("what it measures", ratio=6)
    t.add_column("better", ratio=2)
    for row in LEGEND:
        t.add_row(*row)
    return t


STYLES = (
    {"linestyle": "-", "marker": "o", "linewidth": 3.0, "alpha": 0.55},
    {"linestyle": "--", "marker": "s", "linewidth": 1.8, "alpha": 0.9},
    {"linestyle": ":", "marker": "^", "linewidth": 1.8, "alpha": 0.9},
    {"linestyle": "-.", "marker": "D", "linewidth": 1.4, "alpha": 0.9},
)
"""One style per profile: a thick pale solid line under thinner dashed and dotted ones,
each with its own hollow marker, so lines that coincide stay told apart."""
MARKS = 8
"""Markers per line (placed at different points for each profile)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Panel:
    """One plot panel: a scenario's measure, drawn for each of its profiles."""

    scenario: str
    title: str
    draw: Callable[[Any, Result, dict[str, Any]], None]
    has_data: Callable[[Result], bool]
    log_seconds: bool = True


def panels(results: Sequence[Result]) -> list[list[Panel]]:
    """Per scenario, the panels that have something to show (cloud calls always do)."""
    rows = []
    for scenario, group in by_scenario(results).items():
        ready = "registration → ready" if scenario in IPAM_SCENARIOS else "node ready"
        ready_of = "join_latencies" if scenario in IPAM_SCENARIOS else "ready_latencies"
        candidates = [
            Panel(
                scenario=scenario,
                title="cumulative cloud calls",
                draw=_draw_calls,
                has_data=lambda r: True,
                log_seconds=False,
            ),
            Panel(
                scenario=scenario,
                title="route latency CDF",
                draw=functools.partial(_draw_cdf, attribute="latencies"),
                has_data=lambda r: bool(r.latencies),
            ),
            Panel(
                scenario=scenario,
                title=f"{ready} CDF",
                draw=functools.partial(_draw_cdf, attribute=ready_of),
                has_data=functools.partial(_has, attribute=ready_of),
            ),
        ]
        rows.append([p for p in candidates if any(p.has_data(r) for r in group)])
    return rows


def _has(r: Result, *, attribute: str) -> bool:
    return bool(getattr(r, attribute))


def plot(path: Path, results: Sequence[Result]) -> None:
    """Per scenario, a row of panels: cumulative cloud calls over the whole run, and the CDFs
    of route latency and node readiness, one line per profile; panels with nothing to
    measure are left out."""
    import matplotlib as mpl  # noqa: PLC0415 -- optional dependency, only for the picture

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    groups = by_scenario(results)
    layout = panels(results)
    columns = max(len(row) for row in layout)
    fig, axes = plt.subplots(
        len(layout), columns, figsize=(5.6 * columns, 3.9 * len(layout)), squeeze=False
    )
    for row, (scenario, group), axis_row in zip(layout, groups.items(), axes, strict=True):
        lengths_differ = len({r.job.duration for r in group}) > 1
        for panel, axis in zip(row, axis_row, strict=False):
            for index, r in enumerate(group):
                if panel.has_data(r):
                    label = r.job.profile
                    if lengths_differ and not panel.log_seconds:
                        label += f", run ends at {r.job.duration / 60:,.0f} min (the bar)"
                    style = STYLES[index % len(STYLES)] | {"fillstyle": "none", "label": label}
                    panel.draw(axis, r, style | {"markevery": _marks(index)})
            axis.set_title(f"{scenario}: {panel.title}")
            if panel.log_seconds:
                _seconds_axis(axis)
            else:
                _calls_axis(axis)
            axis.grid(visible=True, which="major", alpha=0.3)
            axis.legend(fontsize="small")
        for axis in axis_row[len(row) :]:
            axis.set_visible(False)
    first = results[0].job
    fig.suptitle(_title(first, results), fontsize="x-large")
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _title(first: Job, results: Sequence[Result]) -> str:
    cloud = first.cloud
    profiles = ", ".join(dict.fromkeys(r.job.profile for r in results))
    return (
        f"routectl simulate: {first.nodes} Nodes, seed {first.seed}; simulated cloud: "
        f"{cloud.qps:g} request/s (burst {cloud.burst}), ListRoutes {cloud.list_latency:g} s, "
        f"writes {cloud.write_latency:g} s\nprofiles: {profiles}"
    )


def _marks(index: int) -> tuple[float, float]:
    """Where a profile's markers go: every eighth of the line's drawn length, starting a
    little further along for each profile, so coinciding lines show every one's markers."""
    return ((0.2 + 0.3 * index) / MARKS, 1.0 / MARKS)


def _draw_calls(axis: Any, r: Result, style: dict[str, Any]) -> None:
    """Cumulative calls as a step line from 0 to the end of the run, which a bar marks."""
    times = [0.0, *sorted(r.call_times), r.job.duration]
    counts = [0, *range(1, len(r.call_times) + 1), len(r.call_times)]
    (line,) = axis.step([t / 60 for t in times], counts, where="post", **style)
    end = r.job.duration / 60
    axis.plot([end], [counts[-1]], marker="|", markersize=18, color=line.get_color())
    axis.set(xlabel="simulated minutes", ylabel="calls so far")


def _draw_cdf(axis: Any, r: Result, style: dict[str, Any], *, attribute: str) -> None:
    """An empirical CDF that shows even for one value."""
    ordered = sorted(max(v, 1e-3) for v in getattr(r, attribute))
    shares = [(i + 1) / len(ordered) for i in range(len(ordered))]
    axis.step([ordered[0], *ordered], [0.0, *shares], where="post", **style)
    axis.set(xlabel="seconds (log scale)", ylabel="share of Nodes", ylim=(0, 1.05))


def _seconds_axis(axis: Any) -> None:
    """A log axis of seconds spanning at least one decade, labelled at 1, 2 and 5 of each
    decade (at each power of ten only, where the data spans more than three decades)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: PLC0415

    drawn = [x for line in axis.get_lines() for x in line.get_xdata() if x > 0]
    low = min(drawn, default=1.0) / 1.6
    high = max(max(drawn, default=1.0) * 1.6, low * 10)
    axis.set_xscale("log")
    axis.set_xlim(low, high)
    labelled = (1.0,) if math.log10(high / low) > 3 else (1.0, 2.0, 5.0)  # noqa: PLR2004
    axis.xaxis.set_major_locator(LogLocator(base=10, subs=labelled))
    axis.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.xaxis.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10))))
    axis.xaxis.set_minor_formatter(NullFormatter())


def _calls_axis(axis: Any) -> None:
    """Calls on a symmetric log scale (linear below 1), so 1 call and 5,000 both show."""
    from matplotlib.ticker import FuncFormatter  # noqa: PLC0415

    axis.set_yscale("symlog", linthresh=1.0)
    axis.set_ylim(bottom=0)
    axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    axis.set_xlim(left=0)

"""Present simulation results: a table per scenario, the JSON of record, and a plot."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from routectl_sim.measure import percentile
from routectl_sim.profiles import IPAM_SCENARIOS, pod_cidr_pool
from routectl_sim.runner import Result

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


def table(results: Sequence[Result]) -> Table:
    """One scenario, one column per profile."""
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
        t.add_row(label, *cells)
    return t


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
            [_seconds(max(r.join_latencies, default=0.0)) for r in results],
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
        *(
            (
                f"must be 0: {name.replace('_', ' ')}",
                [str(r.invariants.get(name, 0)) for r in results],
            )
            for name in INVARIANTS
        ),
    ]


def _pair(values: Sequence[float]) -> str:
    return (
        f"{_seconds(percentile(list(values), 0.50))} / {_seconds(percentile(list(values), 0.99))}"
    )


def _calls_of(r: Result) -> str:
    return " / ".join(str(r.cloud_calls[op]) for op in ("list", "create", "delete"))


def _route_rows(results: Sequence[Result]) -> list[tuple[str, list[str]]]:
    """What routing costs: cloud calls, latencies, CPU and memory."""
    return [
        ("ListRoutes calls", [str(r.cloud_calls["list"]) for r in results]),
        ("CreateRoute calls", [str(r.cloud_calls["create"]) for r in results]),
        ("DeleteRoute calls", [str(r.cloud_calls["delete"]) for r in results]),
        ("ReplaceRoute calls", [str(r.cloud_calls.get("replace", 0)) for r in results]),
        ("throttled answers", [str(r.throttled) for r in results]),
        ("of the writes, whole-table batches", [str(r.batched_writes) for r in results]),
        ("route latency p50", [_seconds(percentile(r.latencies, 0.50)) for r in results]),
        ("route latency p99", [_seconds(percentile(r.latencies, 0.99)) for r in results]),
        ("route latency max", [_seconds(max(r.latencies, default=0.0)) for r in results]),
        ("node ready p50", [_seconds(percentile(r.ready_latencies, 0.50)) for r in results]),
        ("node ready p99", [_seconds(percentile(r.ready_latencies, 0.99)) for r in results]),
        ("node ready max", [_seconds(max(r.ready_latencies, default=0.0)) for r in results]),
        (
            "node ready after its route, max",
            [_seconds(max(r.ready_after_route, default=0.0)) for r in results],
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
        *(
            (
                f"must be 0: {name.replace('_', ' ')}",
                [str(r.invariants.get(name, 0)) for r in results],
            )
            for name in INVARIANTS
            if name != "cidr_reused_while_routed"
        ),
    ]


def plot(path: Path, results: Sequence[Result]) -> None:
    """Per scenario: cumulative cloud calls over the whole run, and the CDFs of route latency
    and of node readiness (pod CIDR to NetworkUnavailable=False), per profile."""
    import matplotlib as mpl  # noqa: PLC0415 -- optional dependency, only for --plot

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter  # noqa: PLC0415

    groups = by_scenario(results)
    fig, axes = plt.subplots(len(groups), 3, figsize=(16, 3.6 * len(groups)), squeeze=False)
    for row, (scenario, group) in enumerate(groups.items()):
        calls, routes, ready = axes[row]
        for r in group:
            _calls(calls, r)
        calls.set(
            title=f"{scenario}: cumulative cloud calls", xlabel="simulated minutes", ylabel="calls"
        )
        calls.legend()
        for axis, what, attribute in (
            (routes, "route latency", "latencies"),
            (ready, "node ready", "ready_latencies"),
        ):
            for r in group:
                _cdf(axis, getattr(r, attribute), r.job.profile)
            axis.set(title=f"{scenario}: {what} CDF", xlabel="seconds (log)", ylabel="share")
            axis.set_xscale("log")
            axis.xaxis.set_major_locator(LogLocator(base=10))
            axis.xaxis.set_major_formatter(ScalarFormatter())
            axis.xaxis.set_minor_formatter(NullFormatter())
            axis.set_ylim(0, 1.05)
            if any(getattr(r, attribute) for r in group):
                axis.legend()
            else:
                axis.text(0.5, 0.5, "nothing to measure", ha="center", transform=axis.transAxes)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _calls(axis: Any, r: Result) -> None:
    """Cumulative calls as a step line that runs from 0 to the end of the run."""
    times = [0.0, *sorted(r.call_times), r.job.duration]
    counts = [0, *range(1, len(r.call_times) + 1), len(r.call_times)]
    axis.step([t / 60 for t in times], counts, where="post", label=r.job.profile)


def _cdf(axis: Any, values: Sequence[float], label: str) -> None:
    """An empirical CDF that shows even for one value (a marker on each step)."""
    ordered = sorted(max(v, 1e-3) for v in values)
    if not ordered:
        return
    shares = [(i + 1) / len(ordered) for i in range(len(ordered))]
    axis.step([ordered[0], *ordered], [0.0, *shares], where="post", label=label, marker=".")

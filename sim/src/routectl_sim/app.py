"""Run the jobs of a ``routectl simulate`` invocation and present the results."""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from routectl.cli.flags import parse_run_flags
from routectl_sim.profiles import ELECTED, IPAM_SCENARIOS, SCENARIOS, profile_flags
from routectl_sim.report import (
    budget_notes,
    by_scenario,
    legend_table,
    plot,
    summary_table,
    sweep_table,
    table,
    write_json,
    write_sweep_json,
)
from routectl_sim.runner import CloudModel, Job, Result, run_jobs


def scenarios_of(choice: str) -> list[str]:
    """``all``: every route scenario but chaos; ``ipam``: every node IPAM scenario."""
    if choice == "all":
        return [s for s in SCENARIOS if s not in ELECTED]
    if choice == "ipam":
        return list(IPAM_SCENARIOS)
    return [choice]


def jobs_for(args: argparse.Namespace, profiles: list[str]) -> list[Job]:
    """Every (scenario, profile) pair, scenario-major."""
    scenarios = scenarios_of(args.scenario)
    extra = tuple(shlex.split(args.controller_flags))
    cloud = CloudModel(
        list_latency=args.cloud_list_latency,
        write_latency=args.cloud_write_latency,
        qps=args.cloud_qps,
        burst=args.cloud_burst,
        whole_table=args.cloud_whole_table,
        replace=args.cloud_replace,
    )
    return [
        Job(
            scenario=s,
            profile=p,
            nodes=args.nodes,
            duration=_duration(s, p, args.duration, cloud, extra),
            seed=seed,
            heartbeat=args.heartbeat_period,
            controller_flags=extra,
            cloud=cloud,
            pool_blocks=args.ipam_pool_blocks,
        )
        for seed in range(args.seed, args.seed + args.seeds)
        for s in scenarios
        for p in profiles
    ]


DRIFT_AT = 60.0
"""When the drift scenario changes the cloud behind the controller's back."""


DEFAULT_DURATION = 900.0


def _duration(
    scenario: str, profile: str, asked: float | None, cloud: CloudModel, extra: tuple[str, ...]
) -> float:
    """The run's length: as asked; by default 15 minutes, but a drift run then lasts until
    the profile's next full listing could have repaired the drift (its resync, jittered, or
    its period), so the table shows when each profile repairs it instead of "never". (Runs
    of one length would cost minutes more: upstream-periodic syncing every 10 s for the
    15 hours upstream-watch needs.)"""
    if asked is not None:
        return asked
    if scenario != "drift":
        return DEFAULT_DURATION
    flags = profile_flags(profile, budget_qps=cloud.qps, budget_burst=cloud.burst)
    settings = parse_run_flags([*flags, *extra])
    if settings.watch_mode:
        horizon = settings.route_resync_period * 1.25 + settings.retry_backoff_cap
    else:
        horizon = 2 * settings.route_reconciliation_period
    return max(DEFAULT_DURATION, DRIFT_AT + horizon + 60.0)


PIPED_WIDTH = 120
"""Columns of the output when it is not a terminal (and ``COLUMNS`` does not say)."""


def console() -> Console:
    """The terminal's width, or a readable fixed one when piped."""
    out = Console()
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out = Console(width=PIPED_WIDTH)
    return out


def simulate(args: argparse.Namespace, profiles: list[str]) -> int:
    """Run; print the summary, then a table per scenario and the legend; write the JSON and
    its picture if asked; 1 on a broken invariant."""
    out = console()
    jobs = jobs_for(args, profiles)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=out, transient=True) as progress:
        bar = progress.add_task("simulating", total=len(jobs))

        def done(result: Result) -> None:
            progress.update(
                bar, advance=1, description=f"{result.job.scenario} / {result.job.profile}"
            )

        results = run_jobs(jobs, workers=args.jobs, on_done=done)
    written: list[Path] = []
    if args.seeds > 1:
        out.print(sweep_table(results))
        if args.json is not None:
            write_sweep_json(args.json, results)
            written.append(args.json)
    else:
        report(out, results)
        if args.json is not None:
            write_json(args.json, results, many=args.scenario in ("all", "ipam"))
            written.append(args.json)
        picture = picture_path(args)
        if picture is not None:
            plot(picture, results)
            written.append(picture)
    if written:
        out.print(f"Wrote {', '.join(map(str, written))}.")
    if args.json is not None and not args.can_plot and not args.no_plot:
        out.print("No picture: pip install 'routectl-sim[plot]' (matplotlib) to draw one.")
    elif args.json is None and args.seeds == 1:
        out.print(
            "--json FILE writes these numbers as JSON and draws them beside it (FILE with .png)."
        )
    return 1 if any(broken(r) for r in results) else 0


def report(out: Console, results: list[Result]) -> None:
    """The summary and what it needs said, then one table per scenario, then the legend."""
    out.print(summary_table(results))
    for note in budget_notes(results):
        out.print(f"[bold]Note[/bold] {note}", highlight=False)
    for group in by_scenario(results).values():
        out.print(table(group))
    out.print(legend_table())


def picture_path(args: argparse.Namespace) -> Path | None:
    """Where to draw: ``--plot``, else beside ``--json`` (same name, ``.png``), unless
    ``--no-plot`` (or matplotlib is missing, which the command checked)."""
    if args.no_plot or args.seeds > 1:
        return None
    if args.plot is not None:
        return Path(args.plot)
    if args.json is not None and args.can_plot:
        return Path(args.json).with_suffix(".png")
    return None


SAFETY = (
    "wrongful_deletes",
    "foreign_routes_touched",
    "concurrent_writers",
    "unhandled_exceptions",
)
ROUTECTL_ROUTES = frozenset({"routectl", "routectl-ipam", "kcm+routectl"})
"""Profiles whose routes are routectl's with its own defaults."""
REUSE = "cidr_reused_while_routed"


def broken(result: Result) -> bool:
    """A safety invariant broken by any profile, or any invariant broken by routectl.

    The upstream profiles are expected to overrun the budget and to leave failed routes
    unconverged (that is what the comparison shows); they must still be safe. A CIDR reused
    while routed is held against routectl only where routectl allocates (``routectl-ipam``):
    elsewhere the allocator is KCM, or the workload's script.
    """
    profile = result.job.profile
    names = [n for n in result.invariants if n != REUSE] if profile in ROUTECTL_ROUTES else SAFETY
    if profile == "routectl-ipam":
        names = [*names, REUSE]
    return any(result.invariants.get(name, 0) for name in names)

"""The ``routectl simulate`` subcommand: flags, progress, and where the output goes."""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path
from typing import Any

from routectl.config import parse_duration
from routectl_sim.profiles import (
    IPAM_PROFILES,
    IPAM_SCENARIOS,
    ROUTE_PROFILES,
    SCENARIOS,
    default_pool_blocks,
    known_profile,
    split_profile,
)

MAX_NODES = 65536  # one /24 of 10.0.0.0/8 each
GROUPS = ("all", "ipam")


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_simulate(commands: Any) -> None:
    """Add ``simulate`` to a subparsers object."""
    p = commands.add_parser(
        "simulate",
        help="run the controller against a fake cluster and a simulated cloud, side by side",
        description="Runs routectl's real informer, queue and worker over HTTP against a fake "
        "API server and a simulated cloud, on a virtual clock, once per profile on the same "
        "seeded workload, and compares what each costs.",
    )
    p.add_argument(
        "--scenario",
        choices=[*SCENARIOS, *IPAM_SCENARIOS, *GROUPS],
        default="all",
        help="one scenario; all: every route scenario but chaos and burst-failover; "
        "ipam: the node IPAM ones "
        "(ipam-join, ipam-churn, ipam-exhaustion), where Nodes register without pod CIDRs and "
        "the profile's allocator gives them one: KCM's beside the route controller "
        "(kcm+upstream-periodic, kcm+upstream-watch, kcm+routectl) or routectl's own "
        "(routectl-ipam)",
    )
    p.add_argument("--nodes", type=int, default=100, help="cluster size (default: 100)")
    p.add_argument(
        "--duration",
        type=_duration,
        default=None,
        help="simulated time per run (default: 15m, and a drift run lasts until each "
        "profile's full listing could repair the drift)",
    )
    p.add_argument(
        "--profiles",
        default=None,
        help=f"comma-separated profiles (default: all of the scenario's kind: route "
        f"scenarios {','.join(ROUTE_PROFILES)}; node IPAM scenarios {','.join(IPAM_PROFILES)})",
    )
    p.add_argument(
        "--ipam-pool-blocks",
        type=int,
        default=0,
        help="node IPAM scenarios: /24 blocks in the pod CIDR pool, a power of two "
        "(default: twice the nodes for ipam-join, room for an eighth more for ipam-churn, "
        "fewer than the nodes for ipam-exhaustion)",
    )
    p.add_argument("--seed", type=int, default=1, help="the workload's and faults' seed")
    p.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="sweep: run seeds --seed .. --seed+N-1 and report every invariant per seed",
    )
    p.add_argument(
        "--heartbeat-period",
        type=_duration,
        default=300.0,
        help="kubelet status period (default: 5m)",
    )
    p.add_argument("--cloud-list-latency", type=_duration, default=0.2, help="default: 200ms")
    p.add_argument("--cloud-write-latency", type=_duration, default=1.0, help="default: 1s")
    p.add_argument(
        "--cloud-qps",
        type=float,
        default=1.0,
        help="the cloud's request budget per second (default: 1)",
    )
    p.add_argument(
        "--cloud-burst", type=int, default=10, help="the cloud's budget burst (default: 10)"
    )
    p.add_argument(
        "--controller-flags",
        default="",
        help="extra `routectl run` flags for every profile, e.g. '--route-resync-period=10m'",
    )
    p.add_argument(
        "--cloud-whole-table",
        action="store_true",
        help="the cloud stores a route table as one object and takes batched writes",
    )
    p.add_argument(
        "--cloud-replace",
        action="store_true",
        help="the cloud repoints a route in one call (like AWS's ReplaceRoute)",
    )
    p.add_argument(
        "--jobs", type=int, default=min(2, os.cpu_count() or 1), help="simulations run at once"
    )
    p.add_argument(
        "--json",
        type=Path,
        help="write the results as JSON to this file, and draw them beside it (the same name "
        "with .png: cloud calls over time and latency CDFs per scenario; needs matplotlib, "
        "pip install 'routectl-sim[plot]')",
    )
    p.add_argument("--plot", type=Path, help="draw the PNG to this file instead")
    p.add_argument("--no-plot", action="store_true", help="draw no PNG")


def _profiles(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[str]:
    """The profiles asked for, checked against the scenario's kind (who allocates)."""
    ipam = args.scenario == "ipam" or args.scenario in IPAM_SCENARIOS
    fitting = IPAM_PROFILES if ipam else ROUTE_PROFILES
    if args.profiles is None:
        return list(fitting)
    profiles = [p.strip() for p in args.profiles.split(",") if p.strip()]
    unknown = sorted(p for p in profiles if not known_profile(p))
    if unknown or not profiles:
        parser.error(
            f"--profiles: unknown profile(s) {', '.join(unknown) or '(none given)'}; "
            f"known: {', '.join((*ROUTE_PROFILES, *IPAM_PROFILES))}"
        )
    misfits = sorted(p for p in profiles if _allocates(p) != ipam)
    if misfits:
        parser.error(
            f"--profiles: {', '.join(misfits)} cannot run {args.scenario}: in node IPAM "
            "scenarios a profile must allocate (routectl-ipam, kcm+<profile>), elsewhere not"
        )
    return profiles


def _allocates(profile: str) -> bool:
    companions, base = split_profile(profile)
    return bool(companions) or base == "routectl-ipam"


def _pool_error(args: argparse.Namespace) -> str | None:
    """What is wrong with the pod CIDR pool the flags ask for (the default's too), if any."""
    blocks = args.ipam_pool_blocks
    if blocks:
        if not 1 <= blocks <= MAX_NODES or blocks & (blocks - 1):
            return "--ipam-pool-blocks: must be a power of two within 1..65536"
        return None
    for scenario in IPAM_SCENARIOS:
        if args.scenario in (scenario, "ipam") and (
            default_pool_blocks(scenario, args.nodes) > MAX_NODES
        ):
            return (
                f"--nodes: {scenario}'s default pool would not fit in 10.0.0.0/8; "
                "give --ipam-pool-blocks"
            )
    return None


def run_simulate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Validate the flags, run every job with a progress bar, print and write the results."""
    profiles = _profiles(args, parser)
    if not 1 <= args.nodes <= MAX_NODES:
        parser.error("--nodes: must be within 1..65536 (one /24 of 10.0.0.0/8 per node)")
    if (pool_error := _pool_error(args)) is not None:
        parser.error(pool_error)
    if args.seeds < 1:
        parser.error("--seeds: must be >= 1")
    if args.cloud_qps <= 0 or args.cloud_burst < 1 or (args.duration or 1) <= 0:
        parser.error("--cloud-qps and --duration must be > 0, --cloud-burst >= 1")
    args.can_plot = importlib.util.find_spec("matplotlib") is not None
    if args.plot is not None and not args.no_plot and not args.can_plot:
        parser.error("--plot needs matplotlib: pip install 'routectl-sim[plot]'")
    from routectl_sim.app import simulate  # noqa: PLC0415 -- heavy, only when simulating

    return simulate(args, profiles)


class SimulateCommand:
    """``routectl simulate``, added to routectl's command line through an entry point."""

    name = "simulate"

    def add(self, commands: Any) -> None:
        """Add the subcommand and its flags."""
        add_simulate(commands)

    def run(self, args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        """Run the simulations the flags ask for."""
        return run_simulate(args, parser)


COMMAND = SimulateCommand()

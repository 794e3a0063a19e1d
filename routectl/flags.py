"""The flags of ``routectl run`` and ``routectl plan``, and their validation into Settings.

Flag names and defaults follow the cloud-controller-manager where it has them
(``--cluster-cidr``, ``--configure-cloud-routes``, ``--route-reconciliation-period``,
``--feature-gates``, ``--leader-elect-*``), Go syntax included (``--flag=false``,
durations such as ``1m30s``). A bad flag or value exits 2 with one line naming it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from routectl.config import (
    FEATURE_GATE_DEFAULTS,
    WATCH_GATE,
    Settings,
    parse_bool,
    parse_cluster_cidrs,
    parse_duration,
    parse_feature_gates,
    parse_key_values,
)

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def _typed(name: str, parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text.removeprefix("="))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = name
    return convert


DURATION = _typed("duration", parse_duration)
BOOL = _typed("bool", parse_bool)
INT = _typed("int", int)
FLOAT = _typed("float", float)


def _bool_flag(group: argparse._ArgumentGroup, flag: str, *, default: bool, help: str) -> None:  # noqa: A002
    group.add_argument(
        flag, type=BOOL, nargs="?", const=True, default=default, metavar="BOOL", help=help
    )


def _add_common(parser: argparse.ArgumentParser) -> None:
    """Flags shared by ``run`` and ``plan``: where the cluster and the cloud are."""
    cluster = parser.add_argument_group("cluster")
    cluster.add_argument("--kubeconfig", help="kubeconfig file; in-cluster config when absent")
    cluster.add_argument(
        "--cluster-name",
        default="kubernetes",
        help="the cluster's name, passed to the provider (default: kubernetes)",
    )
    cluster.add_argument(
        "--cluster-cidr",
        required=True,
        help="pod CIDRs of the cluster: one, or one IPv4 and one IPv6, comma-separated",
    )
    cloud = parser.add_argument_group("cloud")
    cloud.add_argument(
        "--provider", required=True, help="provider plugin name (see `routectl providers`)"
    )
    cloud.add_argument(
        "--provider-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option for the provider (repeatable)",
    )
    cloud.add_argument(
        "--cloud-qps",
        type=FLOAT,
        default=2.0,
        help="sustained cloud calls per second, retries included (default: 2)",
    )
    cloud.add_argument(
        "--cloud-burst",
        type=INT,
        default=10,
        help="cloud calls allowed at once after a quiet period (default: 10)",
    )
    cloud.add_argument(
        "--max-concurrent-route-operations",
        type=INT,
        default=200,
        help="cloud calls in flight at once (default: 200)",
    )
    cloud.add_argument(
        "--cloud-call-timeout",
        type=DURATION,
        default=30.0,
        help="timeout of one cloud call (default: 30s)",
    )
    cloud.add_argument(
        "--cloud-max-attempts",
        type=INT,
        default=4,
        help="attempts per cloud call before the sync is requeued (default: 4)",
    )


def _add_run(parser: argparse.ArgumentParser) -> None:
    sync = parser.add_argument_group("synchronisation")
    _bool_flag(
        sync, "--configure-cloud-routes", default=True, help="program routes at all (default: true)"
    )
    sync.add_argument(
        "--feature-gates",
        default="",
        help=f"{WATCH_GATE}=true|false (default true: watch mode; false: periodic)",
    )
    sync.add_argument(
        "--route-reconciliation-period",
        type=DURATION,
        default=10.0,
        help="periodic mode: sync period (default: 10s)",
    )
    sync.add_argument(
        "--route-resync-period",
        type=DURATION,
        default=3600.0,
        help="watch mode: full resync with a fresh listing (default: 1h, jittered)",
    )
    sync.add_argument(
        "--route-sync-batch-window",
        type=DURATION,
        default=0.25,
        help="node events this close together make one sync (default: 250ms)",
    )
    sync.add_argument(
        "--min-sync-interval",
        type=DURATION,
        default=0.0,
        help="syncs start no closer together than this (default: 0s)",
    )
    sync.add_argument(
        "--route-listing-max-age",
        type=DURATION,
        default=300.0,
        help="reuse a route listing this young; 0 lists every sync (default: 5m)",
    )
    _bool_flag(
        sync,
        "--batch-writes",
        default=True,
        help="write a whole sync in one call when the provider can (default: true)",
    )
    sync.add_argument(
        "--batch-write-interval",
        type=DURATION,
        default=10.0,
        help="with batched writes, syncs start no closer together than this (default: 10s)",
    )
    _bool_flag(
        sync,
        "--retry-failed-syncs",
        default=True,
        help="requeue failed syncs with backoff (default: true)",
    )
    sync.add_argument(
        "--mass-delete-threshold",
        type=FLOAT,
        default=0.5,
        help="refuse a sync deleting more than this share of owned routes (default: 0.5)",
    )
    _bool_flag(
        sync,
        "--allow-mass-delete",
        default=False,
        help="lift the mass-delete guard (default: false)",
    )
    election = parser.add_argument_group("leader election")
    _bool_flag(
        election, "--leader-elect", default=True, help="elect a leader on a Lease (default: true)"
    )
    election.add_argument("--leader-elect-lease-duration", type=DURATION, default=15.0)
    election.add_argument("--leader-elect-renew-deadline", type=DURATION, default=10.0)
    election.add_argument("--leader-elect-retry-period", type=DURATION, default=2.0)
    election.add_argument("--leader-elect-resource-name", default="routectl")
    election.add_argument(
        "--leader-elect-resource-namespace",
        default=os.environ.get("POD_NAMESPACE") or "kube-system",
    )
    serving = parser.add_argument_group("serving and logging")
    serving.add_argument(
        "--metrics-bind-address",
        default="0.0.0.0:8080",
        help="/metrics, /healthz and /readyz (default: 0.0.0.0:8080)",
    )
    serving.add_argument("--log-format", choices=["text", "json"], default="text")
    serving.add_argument("-v", "--v", dest="verbosity", type=INT, default=0, help="log verbosity")
    serving.add_argument("--graceful-shutdown-timeout", type=DURATION, default=30.0)


def new_parser(**kwargs: Any) -> argparse.ArgumentParser:
    """An ArgumentParser whose errors are one line and exit code 2."""
    return _Parser(**kwargs)


def add_commands(commands: Any) -> None:
    """Add ``run`` and ``plan`` to a subparsers object."""
    run = commands.add_parser("run", help="run the route controller")
    _add_common(run)
    _add_run(run)
    plan = commands.add_parser("plan", help="print what a sync would change, change nothing")
    _add_common(plan)
    plan.add_argument("--output", "-o", choices=["table", "json"], default="table")


def parse_run_flags(argv: Sequence[str]) -> Settings:
    """Parse ``routectl run`` flags (without the command) into Settings."""
    parser = new_parser(prog="routectl")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_commands(commands)
    return settings_from_args(parser.parse_args(["run", *argv]))


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Validate parsed flags into :class:`Settings`; raises ConfigError naming the flag."""
    gates = parse_feature_gates(getattr(args, "feature_gates", ""), known=FEATURE_GATE_DEFAULTS)
    values: dict[str, Any] = {
        "cluster_cidrs": parse_cluster_cidrs(args.cluster_cidr),
        "provider": args.provider,
        "provider_options": parse_key_values(args.provider_option, flag="--provider-option"),
        "cluster_name": args.cluster_name,
        "kubeconfig": args.kubeconfig,
        "cloud_qps": args.cloud_qps,
        "cloud_burst": args.cloud_burst,
        "max_concurrent_route_operations": args.max_concurrent_route_operations,
        "cloud_call_timeout": args.cloud_call_timeout,
        "cloud_max_attempts": args.cloud_max_attempts,
        "watch_mode": gates[WATCH_GATE],
    }
    if args.command == "run":
        values |= {
            "configure_cloud_routes": args.configure_cloud_routes,
            "route_reconciliation_period": args.route_reconciliation_period,
            "route_resync_period": args.route_resync_period,
            "batch_window": args.route_sync_batch_window,
            "min_sync_interval": args.min_sync_interval,
            "listing_max_age": args.route_listing_max_age,
            "retry_failed_syncs": args.retry_failed_syncs,
            "batch_writes": args.batch_writes,
            "batch_write_interval": args.batch_write_interval,
            "mass_delete_threshold": args.mass_delete_threshold,
            "allow_mass_delete": args.allow_mass_delete,
            "leader_elect": args.leader_elect,
            "leader_elect_lease_duration": args.leader_elect_lease_duration,
            "leader_elect_renew_deadline": args.leader_elect_renew_deadline,
            "leader_elect_retry_period": args.leader_elect_retry_period,
            "leader_elect_resource_name": args.leader_elect_resource_name,
            "leader_elect_resource_namespace": args.leader_elect_resource_namespace,
            "metrics_bind_address": args.metrics_bind_address,
            "log_format": args.log_format,
            "verbosity": args.verbosity,
            "graceful_shutdown_timeout": args.graceful_shutdown_timeout,
        }
    return Settings(**values)

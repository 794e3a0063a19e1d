"""The options of routing itself: the cluster, the cloud and how syncs run.

Promises: each option carries its flag, syntax, default, check and help (see
:mod:`routectl.config.option`); the cloud options are the ones
:func:`routectl.cloud.policy.call_policy` reads. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from routectl.cidr import Network
from routectl.config.ccm import (
    WATCH_GATE,
    format_controllers,
    format_gates,
    parse_controllers,
    parse_gates,
)
from routectl.config.groups import BOTH, CLOUD, CLUSTER, SYNC
from routectl.config.option import (
    CLUSTER_CIDRS,
    DURATION,
    KEY_VALUES,
    OPTIONAL_STRING,
    STRING,
    Check,
    Syntax,
    above,
    at_least,
    non_empty,
    option,
    settings_dataclass,
    within,
)

__all__ = ["CONTROLLERS", "FEATURE_GATES", "RoutingOptions"]

FEATURE_GATES: Syntax[Mapping[str, bool]] = Syntax(
    metavar="GATE=BOOL,...", parse=parse_gates, show=format_gates, late=True, slice=True
)
"""``--feature-gates``: Kubernetes' known gates; routectl acts on the watch-mode gate only.
Given twice, the lists add up (a later value of one gate wins), as pflag's mapStringBool."""
CONTROLLERS: Syntax[tuple[str, ...]] = Syntax(
    metavar="NAME,...", parse=parse_controllers, show=format_controllers, slice=True
)
"""``--controllers``, as the CCM reads it."""
QPS_FLOOR = 0.01
"""The lowest request rate accepted: one request every 100 s."""
KUBE_QPS: Check[float] = Check(
    reason=f"must be >= {QPS_FLOOR:g} (one request every {1 / QPS_FLOOR:g}s): "
    "below that every request after the burst waits longer than any timeout",
    ok=lambda v: v >= QPS_FLOOR,
    refuses=(0.0, -1.0, 1e-300, 0.009),
)
"""``--kube-api-qps``: the CCM takes any positive float32, but a value so small that a request
waits for hours would pass at start-up and stall every sync later, so routectl refuses it."""
CLOUD_QPS: Check[float] = Check(
    reason=f"must be 0 (no client-side limit) or >= {QPS_FLOOR:g}: below that every cloud "
    "call after the burst waits longer than any timeout",
    ok=lambda v: v == 0 or v >= QPS_FLOOR,
    refuses=(-1.0, 1e-300, 0.009),
)
"""``--cloud-qps``: as ``--kube-api-qps``, with 0 for no limit."""


@settings_dataclass
class RoutingOptions:
    """The cluster (where Nodes come from), the cloud (where routes go) and the syncs."""

    # One option is a few lines of a table: one argument per line would hide the table.
    # fmt: off
    kubeconfig: str | None = option(
        default=None, syntax=OPTIONAL_STRING, metavar="PATH", group=CLUSTER, commands=BOTH,
        help="kubeconfig file; in-cluster config when absent",
    )
    cluster_name: str = option(
        default="kubernetes", check=non_empty(), metavar="NAME", group=CLUSTER, commands=BOTH,
        help="the cluster's name, passed to the provider",
    )
    """The provider uses it to tell this cluster's routes from others'."""
    cluster_cidrs: tuple[Network, ...] = option(
        syntax=CLUSTER_CIDRS, flag="--cluster-cidr", group=CLUSTER, commands=BOTH,
        help="pod CIDRs of the cluster: one, or one IPv4 and one IPv6, comma-separated",
    )
    kube_api_qps: float = option(
        default=20.0, check=KUBE_QPS, group=CLUSTER, commands=BOTH,
        help="requests per second to the API server (leader election has a client of its own)",
    )
    kube_api_burst: int = option(
        default=30, check=at_least(1), group=CLUSTER, commands=BOTH,
        help="requests to the API server allowed at once",
    )
    provider: str = option(
        syntax=STRING, metavar="NAME", group=CLOUD, commands=BOTH, aliases=("--cloud-provider",),
        help="provider plugin name (see `routectl providers`)",
    )
    cloud_config: str | None = option(
        default=None, syntax=OPTIONAL_STRING, metavar="PATH", group=CLOUD, commands=BOTH,
        help="a file of provider options, one key = value per line (with --provider-option)",
    )
    provider_options: Mapping[str, str] = option(
        factory=dict, syntax=KEY_VALUES, flag="--provider-option", group=CLOUD, commands=BOTH,
        help="an option for the provider (repeatable)",
    )
    cloud_qps: float = option(
        default=2.0, check=CLOUD_QPS, group=CLOUD, commands=BOTH,
        help="sustained cloud calls per second, retries included; 0: no client-side limit",
    )
    """0 disables the client-side bucket (only to reproduce upstream in benchmarks)."""
    cloud_burst: int = option(
        default=10, check=at_least(1), group=CLOUD, commands=BOTH,
        help="cloud calls allowed at once after a quiet period",
    )
    max_concurrent_route_operations: int = option(
        default=200, check=at_least(1), group=CLOUD, commands=BOTH,
        help="cloud calls in flight at once",
    )
    cloud_call_timeout: float = option(
        default=30.0, syntax=DURATION, check=above(0.0), group=CLOUD, commands=BOTH,
        help="timeout of one cloud call (the cloud's time: waiting for the request budget "
        "does not count)",
    )
    cloud_max_attempts: int = option(
        default=4, check=at_least(1), group=CLOUD, commands=BOTH,
        help="attempts per cloud call before the sync is requeued",
    )
    cloud_retry_after_cap: float = option(
        default=120.0, syntax=DURATION, check=at_least(0.0), group=CLOUD, commands=BOTH,
        help="longest pause a cloud's retry-after may impose on every call",
    )
    """Honoured up to this, with a WARNING; defaults to the failed-sync backoff cap."""
    cloud_call_backoff_base: float = option(
        default=0.5, syntax=DURATION, check=above(0.0), internal=True,
        help="wait before the first retry of a cloud call; doubles, with jitter",
    )
    cloud_call_backoff_cap: float = option(
        default=30.0, syntax=DURATION, check=above(0.0), internal=True,
        help="longest wait between two attempts of a cloud call",
    )
    configure_cloud_routes: bool = option(default=True, group=SYNC, help="program routes at all")
    controllers: tuple[str, ...] = option(
        default=("*",), syntax=CONTROLLERS, group=SYNC,
        help="the CCM's controller list; it must enable route (or *), the only one routectl is",
    )
    feature_gates: Mapping[str, bool] = option(
        factory=dict, syntax=FEATURE_GATES, group=SYNC,
        help=f"Kubernetes feature gates; {WATCH_GATE}=false selects periodic syncs, the others "
        "are accepted and ignored",
    )
    route_reconciliation_period: float = option(
        default=10.0, syntax=DURATION, check=above(0.0), group=SYNC,
        help="periodic mode: sync period",
    )
    route_resync_period: float = option(
        default=3600.0, syntax=DURATION, check=above(0.0), group=SYNC,
        help="watch mode: full resync with a fresh listing, jittered up to +25%",
    )
    """Repairs drift made by others; upstream's 12-24 h is too slow for that."""
    batch_window: float = option(
        default=0.25, syntax=DURATION, check=at_least(0.0), flag="--route-sync-batch-window",
        group=SYNC, help="node events this close together make one sync (one listing)",
    )
    min_sync_interval: float = option(
        default=0.0, syntax=DURATION, check=at_least(0.0), group=SYNC,
        help="syncs start no closer together than this (upstream's watch mode: 10s)",
    )
    listing_max_age: float = option(
        default=300.0, syntax=DURATION, check=at_least(0.0), flag="--route-listing-max-age",
        group=SYNC, help="reuse a route listing this young; 0 lists every sync",
    )
    """The listing is kept current with routectl's own writes."""
    batch_writes: bool = option(
        default=True, group=SYNC, help="write a whole sync in one call when the provider can"
    )
    batch_write_interval: float = option(
        default=10.0, syntax=DURATION, check=at_least(0.0), group=SYNC,
        help="with batched writes, syncs start no closer together than this, and a burst of "
        "Node events settles first (until they pause for a tenth of this, or "
        "--route-sync-batch-window if longer), at most this long",
    )
    """So a burst of Node events becomes a few large writes rather than many small ones: the
    first Node of a burst does not get a table write of its own."""
    retry_failed_syncs: bool = option(
        default=True, group=SYNC,
        help="requeue failed syncs with backoff (upstream's watch mode does not)",
    )
    retry_backoff_base: float = option(
        default=1.0, syntax=DURATION, check=above(0.0), internal=True,
        help="wait before the first retry of a failed sync; doubles",
    )
    retry_backoff_cap: float = option(
        default=120.0, syntax=DURATION, check=above(0.0), internal=True,
        help="longest wait before a failed sync is retried",
    )
    mass_delete_threshold: float = option(
        default=0.5, check=within(0.0, 1.0), group=SYNC,
        help="refuse a sync deleting more than this share of owned routes",
    )
    allow_mass_delete: bool = option(default=False, group=SYNC, help="lift the mass-delete guard")
    # fmt: on

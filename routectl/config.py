"""What ``routectl run`` and ``routectl plan`` are told: every setting, declared once.

Each field of :class:`Settings` is an option (see :mod:`routectl.option`): its flag, syntax,
default, help and the reason a value is valid sit on the field, and :data:`OPTIONS` reads
them back. The command line (:mod:`routectl.flags`), the cloud call policy
(:func:`routectl.provider.call_policy`) and the chart's tests are derived from that table.
Flag names, syntax and error texts follow the cloud-controller-manager where it has them.

Promises:

* a Settings value is valid: each option passes its own check, then each rule across options
  in :data:`RULES` holds; otherwise ConfigError, one line that names the flag;
* defaults live here only.

Pure: no I/O, no environment, no clock, no logging, no argparse.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias, TypeVar

from routectl.ccm import (
    IGNORED_FLAGS,
    WATCH_GATE,
    controllers_problem,
    format_controllers,
    format_gates,
    parse_controllers,
    parse_gates,
)
from routectl.cidr import Network, parse_cidr
from routectl.errors import ConfigError
from routectl.ipam.pools import check_pools, node_mask_sizes, parse_service_ranges
from routectl.option import (
    CLUSTER_CIDRS,
    DURATION,
    KEY_VALUES,
    OPTIONAL_STRING,
    PLAN,
    RUN,
    STRING,
    Check,
    Option,
    Syntax,
    above,
    at_least,
    host_port,
    matches,
    non_empty,
    one_of,
    option,
    options_of,
    settings_dataclass,
    within,
)
from routectl.syntax import (
    format_bool,
    format_cidrs,
    format_duration,
    parse_bool,
    parse_cluster_cidrs,
    parse_duration,
    parse_feature_gates,
    parse_int,
    parse_key_values,
)

__all__ = [  # the parsers are re-exported from routectl.syntax, where they live
    "FEATURE_GATE_DEFAULTS", "IGNORED", "OPTIONS", "RULES", "WATCH_GATE", "Settings",
    "default_of", "leader_election_timings", "parse_cluster_cidrs", "parse_duration",
    "parse_feature_gates", "parse_key_values",
]  # fmt: skip
T = TypeVar("T")

MAX_LEASE_SECONDS = float(2**31 - 1)
LEASE_SECONDS = Check(
    reason="must be at least 1s and at most 2147483647s (the Lease's whole seconds)",
    ok=lambda v: 1.0 <= v <= MAX_LEASE_SECONDS,
    refuses=(0.5, MAX_LEASE_SECONDS + 1),
)
FEATURE_GATE_DEFAULTS = {WATCH_GATE: True}
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)

FEATURE_GATES: Syntax[Mapping[str, bool]] = Syntax(
    metavar="GATE=BOOL,...", parse=parse_gates, show=format_gates, late=True
)
"""``--feature-gates``: Kubernetes' known gates; routectl acts on the watch-mode gate only."""
CONTROLLERS: Syntax[tuple[str, ...]] = Syntax(
    metavar="NAME,...", parse=parse_controllers, show=format_controllers, late=True
)
"""``--controllers``, as the CCM reads it."""
LEASES_ONLY = Check(
    reason="must be leases: routectl elects on a coordination.k8s.io/v1 Lease only",
    ok=lambda v: v == "leases",
    refuses=("endpointsleases", "configmapsleases", "endpoints", ""),
)
TLS_VERSIONS = ("VersionTLS12", "VersionTLS13")
PORT = within(0, 65535)
_IP = re.compile(r"^(\d{1,3}(\.\d{1,3}){3}|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$")
IP_ADDRESS = matches(_IP, reason="must be an IP address", refuses=("", "localhost", "1.2.3"))


def _paths(text: str) -> tuple[str, ...]:
    paths = tuple(filter(None, (p.strip() for p in text.split(","))))
    if not all(p.startswith("/") for p in paths):
        raise ValueError(f"expected absolute paths such as /healthz, got {text!r}")
    return paths


PATHS: Syntax[tuple[str, ...]] = Syntax(metavar="PATH,...", parse=_paths, show=",".join)
MAYBE_BOOL: Syntax[bool | None] = Syntax(
    metavar="BOOL", parse=parse_bool, show=lambda v: "" if v is None else format_bool(v), bare=True
)
MAYBE_DURATION: Syntax[float | None] = Syntax(
    metavar="DURATION", parse=parse_duration, show=lambda v: "" if v is None else format_duration(v)
)
MAYBE_INT: Syntax[int | None] = Syntax(
    metavar="INT", parse=parse_int, show=lambda v: "" if v is None else str(v)
)


def _cidr_list(text: str) -> tuple[Network, ...]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return tuple(parse_cidr(p) for p in parts)


CIDR_LIST: Syntax[tuple[Network, ...]] = Syntax(
    metavar="CIDR,...", parse=_cidr_list, show=format_cidrs
)
"""Any number of CIDRs of either family, comma-separated (sloppy, masked, like KCM)."""
SERVICE_RANGES: Syntax[tuple[Network, ...]] = Syntax(
    metavar="CIDR[,CIDR]", parse=parse_service_ranges, show=format_cidrs, late=True
)
"""``--service-cluster-ip-range``, read late: its errors are KCM's texts, shown as they are."""

CLUSTER, CLOUD, SYNC = "cluster", "cloud", "synchronisation"
IPAM = "node IPAM (pod CIDR allocation, off by default)"
ELECTION, SERVING = "leader election", "serving and logging"
SECURE = "secure serving and delegated authentication (as the CCM's)"
IGNORED = "cloud-controller-manager flags that do not concern routes (accepted, ignored)"
BOTH = (RUN, PLAN)


def host_port_or_off() -> Check[str]:
    """``host:port``, or empty for "not served"."""
    plain = host_port()
    return Check(
        reason="must be host:port, or empty to serve no plain HTTP",
        ok=lambda v: v == "" or plain.ok(v),
        refuses=plain.refuses,
    )


def _ignored(syntax: Syntax[T | None]) -> T | None:
    """A CCM flag routectl accepts and ignores (said once at start-up when it is given).

    Its help is the reason in :data:`routectl.ccm.IGNORED_FLAGS`, filled in by
    :data:`OPTIONS` once the flag's name is known.
    """
    return option(default=None, syntax=syntax, group=IGNORED, help="ignored")


_Bool: TypeAlias = bool | None
_Duration: TypeAlias = float | None
_Int: TypeAlias = int | None
_Text: TypeAlias = str | None
_B, _D, _I, _S = MAYBE_BOOL, MAYBE_DURATION, MAYBE_INT, OPTIONAL_STRING


@settings_dataclass
class Settings:
    """Everything ``routectl run`` (or ``plan``) is told, validated. Defaults live here only."""

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
        default=20.0, check=above(0.0), group=CLUSTER, commands=BOTH,
        help="requests per second to the API server (Lease renewals have a bucket of their own)",
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
        default=2.0, check=at_least(0.0), group=CLOUD, commands=BOTH,
        help="sustained cloud calls per second, retries included",
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
        help="timeout of one cloud call",
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
        help="with batched writes, syncs start no closer together than this",
    )
    """So a burst of Node events becomes a few large writes rather than many small ones."""
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
    leader_elect: bool = option(default=True, group=ELECTION, help="elect a leader on a Lease")
    leader_elect_lease_duration: float = option(
        default=15.0, syntax=DURATION, check=LEASE_SECONDS, group=ELECTION,
        help="how long a leader's Lease keeps other candidates out (whole seconds count)",
    )
    """The Lease stores whole seconds (an int32): 1s at least, fractions dropped."""
    leader_elect_renew_deadline: float = option(
        default=10.0, syntax=DURATION, check=above(0.0), group=ELECTION,
        help="the leader steps down if it cannot renew its Lease within this",
    )
    leader_elect_retry_period: float = option(
        default=2.0, syntax=DURATION, check=above(0.0), group=ELECTION,
        help="how often candidates try to take the Lease",
    )
    leader_elect_resource_lock: str = option(
        default="leases", check=LEASES_ONLY, metavar="KIND", group=ELECTION,
        help="the kind of lock object: leases",
    )
    leader_elect_resource_name: str = option(
        default="routectl", metavar="NAME", group=ELECTION, help="the Lease's name",
        check=matches(
            _DNS_SUBDOMAIN, refuses=("", "Not_A_Name", "a..b"),
            reason="must be a DNS subdomain (lower case, digits, '-', '.')",
        ),
    )
    leader_elect_resource_namespace: str = option(
        default="kube-system", env="POD_NAMESPACE", metavar="NAMESPACE", group=ELECTION,
        help="the Lease's namespace",
        check=matches(
            _DNS_LABEL, refuses=("", "a.b", "-a"),
            reason="must be a DNS label (lower case, digits, '-')",
        ),
    )
    leader_elect_identity: str = option(
        default="", internal=True, help="this candidate's name in the Lease"
    )
    metrics_bind_address: str = option(
        default="0.0.0.0:10290", check=host_port_or_off(), metavar="HOST:PORT", group=SERVING,
        help="/metrics, /healthz and /readyz over plain HTTP; empty: off (see --secure-port)",
    )
    log_format: str = option(
        default="text", check=one_of("text", "json"), group=SERVING, aliases=("--logging-format",),
        help="log line format: klog's text or JSON",
    )
    verbosity: int = option(
        default=0, flag="--v", aliases=("-v",), metavar="LEVEL", group=SERVING,
        help="log verbosity, as klog's: 4 and above log at debug level",
    )
    bind_address: str = option(
        default="0.0.0.0", check=IP_ADDRESS, metavar="IP", group=SECURE,  # noqa: S104
        help="the address --secure-port listens on",
    )
    secure_port: int = option(
        default=0, check=PORT, metavar="PORT", group=SECURE,
        help="serve /metrics, /healthz, /readyz over HTTPS here, with delegated authn/z; 0: off",
    )
    tls_cert_file: str | None = option(
        default=None, syntax=OPTIONAL_STRING, metavar="PATH", group=SECURE,
        help="the serving certificate (PEM); self-signed when absent",
    )
    tls_private_key_file: str | None = option(
        default=None, syntax=OPTIONAL_STRING, metavar="PATH", group=SECURE,
        help="the serving certificate's key (PEM)",
    )
    cert_dir: str | None = option(
        default=None, syntax=OPTIONAL_STRING, metavar="DIR", group=SECURE,
        help="where the self-signed certificate is written (default: a temporary directory)",
    )
    tls_min_version: str = option(
        default="VersionTLS12", check=one_of(*TLS_VERSIONS), group=SECURE,
        help="the lowest TLS version served",
    )
    authentication_kubeconfig: str | None = option(
        default=None, syntax=OPTIONAL_STRING, metavar="PATH", group=SECURE,
        help="kubeconfig for TokenReviews (default: --kubeconfig, or in-cluster)",
    )
    authentication_token_webhook_cache_ttl: float = option(
        default=10.0, syntax=DURATION, check=at_least(0.0), group=SECURE,
        help="how long a TokenReview's answer is cached",
    )
    authorization_kubeconfig: str | None = option(
        default=None, syntax=OPTIONAL_STRING, metavar="PATH", group=SECURE,
        help="kubeconfig for SubjectAccessReviews (default: --kubeconfig, or in-cluster)",
    )
    authorization_always_allow_paths: tuple[str, ...] = option(
        default=("/healthz", "/readyz", "/livez"), syntax=PATHS, group=SECURE,
        help="paths served without authentication or authorization",
    )
    authorization_webhook_cache_authorized_ttl: float = option(
        default=10.0, syntax=DURATION, check=at_least(0.0), group=SECURE,
        help="how long an allowing SubjectAccessReview is cached",
    )
    authorization_webhook_cache_unauthorized_ttl: float = option(
        default=10.0, syntax=DURATION, check=at_least(0.0), group=SECURE,
        help="how long a denying SubjectAccessReview is cached",
    )
    graceful_shutdown_timeout: float = option(
        default=30.0, syntax=DURATION, check=at_least(0.0), group=SERVING,
        help="on SIGTERM, how long the sync in flight may take to finish",
    )
    allocate_node_cidrs: bool = option(
        default=False, group=IPAM, commands=BOTH,
        help="Should CIDRs for Pods be allocated and set on the cloud provider. "
        "Requires --cluster-cidr",
    )
    """KCM's flag and help text. routectl allocates in its route sync: turn KCM's off."""
    node_cidr_mask_size: int = option(
        default=0, check=within(0, 128), group=IPAM, commands=BOTH,
        help="Mask size for node cidr in cluster. Default is 24 for IPv4 and 64 for IPv6",
    )
    node_cidr_mask_size_ipv4: int = option(
        default=0, check=within(0, 32), group=IPAM, commands=BOTH,
        help="Mask size for IPv4 node cidr in dual-stack cluster. Default is 24",
    )
    node_cidr_mask_size_ipv6: int = option(
        default=0, check=within(0, 128), group=IPAM, commands=BOTH,
        help="Mask size for IPv6 node cidr in dual-stack cluster. Default is 64",
    )
    service_cluster_ip_range: tuple[Network, ...] = option(
        default=(), syntax=SERVICE_RANGES, group=IPAM, commands=BOTH,
        help="CIDR Range for Services in cluster. Only used when --allocate-node-cidrs=true; "
        "if false, this option will be ignored",
    )
    """Excluded from the pools. Unlike KCM, a value that does not parse is an error."""
    additional_cluster_cidrs: tuple[Network, ...] = option(
        default=(), syntax=CIDR_LIST, group=IPAM, commands=BOTH,
        help="more pod CIDR pools, used in order once --cluster-cidr's pool of the family is "
        "full; routes inside them are routectl's too",
    )
    pod_cidr_exclude: tuple[Network, ...] = option(
        default=(), syntax=CIDR_LIST, group=IPAM, commands=BOTH,
        help="ranges never handed to a Node (the node subnet, say)",
    )
    pod_cidr_reuse_delay: float = option(
        default=300.0, syntax=DURATION, check=at_least(0.0), group=IPAM, commands=BOTH,
        help="a released pod CIDR is reused only this long after its route is gone",
    )
    pod_cidr_claims: str = option(
        default="lease", check=one_of("lease", "none"), group=IPAM, commands=BOTH,
        help="claim each allocated CIDR with a Lease before writing it to the Node "
        "(two writers can never hand one CIDR out twice)",
    )
    ipam_event_type: str = option(
        default="Warning", check=one_of("Warning", "Normal"), group=IPAM,
        help="type of CIDRNotAvailable and CIDRAssignmentFailed Events (KCM: Normal)",
    )
    # The CCM's generic flags that do not concern routes: accepted, said once, ignored.
    cidr_allocator_type: _Text = _ignored(_S)
    concurrent_node_syncs: _Int = _ignored(_I)
    concurrent_service_syncs: _Int = _ignored(_I)
    controller_start_interval: _Duration = _ignored(_D)
    external_cloud_volume_plugin: _Text = _ignored(_S)
    kube_api_content_type: _Text = _ignored(_S)
    master: _Text = _ignored(_S)
    min_resync_period: _Duration = _ignored(_D)
    node_monitor_period: _Duration = _ignored(_D)
    node_status_update_frequency: _Duration = _ignored(_D)
    node_sync_period: _Duration = _ignored(_D)
    use_service_account_credentials: _Bool = _ignored(_B)
    enable_leader_migration: _Bool = _ignored(_B)
    leader_migration_config: _Text = _ignored(_S)
    profiling: _Bool = _ignored(_B)
    contention_profiling: _Bool = _ignored(_B)
    authentication_skip_lookup: _Bool = _ignored(_B)
    authentication_tolerate_lookup_failure: _Bool = _ignored(_B)
    client_ca_file: _Text = _ignored(_S)
    requestheader_client_ca_file: _Text = _ignored(_S)
    requestheader_allowed_names: _Text = _ignored(_S)
    requestheader_extra_headers_prefix: _Text = _ignored(_S)
    requestheader_group_headers: _Text = _ignored(_S)
    requestheader_username_headers: _Text = _ignored(_S)
    requestheader_uid_headers: _Text = _ignored(_S)
    http2_max_streams_per_connection: _Int = _ignored(_I)
    permit_address_sharing: _Bool = _ignored(_B)
    permit_port_sharing: _Bool = _ignored(_B)
    tls_cipher_suites: _Text = _ignored(_S)
    tls_sni_cert_key: _Text = _ignored(_S)
    vmodule: _Text = _ignored(_S)
    log_flush_frequency: _Duration = _ignored(_D)
    log_json_info_buffer_size: _Text = _ignored(_S)
    log_json_split_stream: _Bool = _ignored(_B)
    log_text_info_buffer_size: _Text = _ignored(_S)
    log_text_split_stream: _Bool = _ignored(_B)
    allow_metric_labels: _Text = _ignored(_S)
    allow_metric_labels_manifest: _Text = _ignored(_S)
    disabled_metrics: _Text = _ignored(_S)
    show_hidden_metrics_for_version: _Text = _ignored(_S)
    webhook_bind_address: _Text = _ignored(_S)
    webhook_cert_dir: _Text = _ignored(_S)
    webhook_secure_port: _Int = _ignored(_I)
    webhooks: _Text = _ignored(_S)
    # fmt: on

    @property
    def watch_mode(self) -> bool:
        """Watch mode (the default) unless ``--feature-gates`` turns its gate off."""
        return self.feature_gates.get(WATCH_GATE, True)

    @property
    def route_cidrs(self) -> tuple[Network, ...]:
        """The ranges whose routes are routectl's: the cluster CIDRs, and with node IPAM
        on, the additional pools."""
        if not self.allocate_node_cidrs:
            return self.cluster_cidrs
        return (*self.cluster_cidrs, *self.additional_cluster_cidrs)

    @property
    def node_masks(self) -> dict[int, int]:
        """The node mask size per IP version, as KCM resolves the three flags."""
        return node_mask_sizes(
            self.cluster_cidrs,
            mask=self.node_cidr_mask_size,
            ipv4=self.node_cidr_mask_size_ipv4,
            ipv6=self.node_cidr_mask_size_ipv6,
        )

    def __post_init__(self) -> None:
        for each in OPTIONS:
            each.validate(getattr(self, each.name))
        for rule in RULES:
            if problem := rule(self):
                raise ConfigError(problem)


def leader_election_timings(s: Settings) -> str | None:
    """client-go's rule: the lease outlasts the renew deadline, which outlasts the retries."""
    if (
        s.leader_elect_lease_duration
        > s.leader_elect_renew_deadline
        > 1.2 * s.leader_elect_retry_period
        > 0
    ):
        return None
    return (
        "--leader-elect-lease-duration must exceed --leader-elect-renew-deadline, "
        "which must exceed 1.2 x --leader-elect-retry-period"
    )


def node_ipam(s: Settings) -> str | None:
    """KCM's checks of the mask sizes against the pools, when node IPAM is on."""
    if not s.allocate_node_cidrs:
        return None
    if not s.configure_cloud_routes:
        return (
            "--allocate-node-cidrs=true needs --configure-cloud-routes=true "
            "(routectl allocates pod CIDRs in its route sync)"
        )
    families = {c.version for c in s.cluster_cidrs}
    for extra in s.additional_cluster_cidrs:
        if extra.version not in families:
            return (
                f"--additional-cluster-cidrs: {extra} is IPv{extra.version}, "
                "a family --cluster-cidr does not have"
            )
    try:
        check_pools(s.route_cidrs, s.node_masks)
    except ConfigError as exc:
        return str(exc)
    return None


def _with_reasons(options: tuple[Option[Any], ...]) -> tuple[Option[Any], ...]:
    """The ignored CCM flags' help: why each is ignored."""
    return tuple(
        dataclasses.replace(o, help=f"ignored: {IGNORED_FLAGS[o.flag]}")
        if o.group == IGNORED and o.flag
        else o
        for o in options
    )


OPTIONS: tuple[Option[Any], ...] = _with_reasons(options_of(Settings))
"""Every setting, in field order: the table the command line and the call policy come from."""


def tls_pair(s: Settings) -> str | None:
    """A serving certificate comes with its key."""
    if (s.tls_cert_file is None) == (s.tls_private_key_file is None):
        return None
    return "--tls-cert-file and --tls-private-key-file must be given together"


def route_controller_enabled(s: Settings) -> str | None:
    """``--controllers`` must leave routectl's one controller on."""
    return controllers_problem(s.controllers)


RULES: tuple[Callable[[Settings], str | None], ...] = (
    leader_election_timings,
    tls_pair,
    route_controller_enabled,
    node_ipam,
)
"""Rules across options, checked after each option's own; each returns the problem or None."""
_DEFAULTS = {each.name: each.default for each in OPTIONS if not each.required}


def default_of(name: str) -> Any:
    """The default of the setting ``name`` (for records that mirror a few settings)."""
    return _DEFAULTS[name]

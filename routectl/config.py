"""Validation of configuration values, with upstream's exact error texts.

Everything here is pure: values come in as strings (from flags, environment or chart
values) and go out as typed values or a :class:`~routectl.errors.ConfigError` whose
message is fit to print as the one line a bad start-up exits with.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from routectl.cidr import Network, parse_cidr
from routectl.errors import ConfigError

MAX_CLUSTER_CIDRS = 2
MAX_PORT = 65535
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


def parse_cluster_cidrs(text: str) -> tuple[Network, ...]:
    """Parse ``--cluster-cidr``: one CIDR, or one IPv4 and one IPv6, comma-separated.

    Like upstream's ``processCIDRs``: each part is parsed sloppily and masked; an empty
    value is an error; two CIDRs must be of different families; three or more are refused.
    Unlike upstream, blanks around each part are tolerated.
    """
    cidrs = tuple(_parse_one(part.strip()) for part in text.strip().split(","))
    families = {cidr.version for cidr in cidrs}
    if len(cidrs) > 1 and families != {4, 6}:
        # The missing closing parenthesis is upstream's; the text is kept as it is.
        raise ConfigError(
            f"len of ClusterCIDRs=={len(cidrs)} and they are not configured as dual stack "
            "(at least one from each IPFamily"
        )
    if len(cidrs) > MAX_CLUSTER_CIDRS:
        raise ConfigError(
            f"length of clusterCIDRs is:{len(cidrs)} more than max allowed of {MAX_CLUSTER_CIDRS}"
        )
    return cidrs


def _parse_one(text: str) -> Network:
    try:
        return parse_cidr(text)
    except ValueError as exc:
        raise ConfigError(f'failed to parse cidr value:"{text}" with error:{exc}') from None


def parse_key_values(pairs: list[str], *, flag: str) -> dict[str, str]:
    """Turn repeated ``key=value`` flag values into a mapping; a malformed pair is an error."""
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag}: expected key=value, got {pair!r}")
        result[key.strip()] = value
    return result


def parse_feature_gates(text: str, *, known: dict[str, bool]) -> dict[str, bool]:
    """Parse ``--feature-gates=A=true,B=false`` over the defaults ``known``.

    Unknown gates are refused (the CCM refuses them too), so a typo cannot silently leave
    routectl in the other mode.
    """
    gates = dict(known)
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip()
        if name not in known:
            raise ConfigError(f"--feature-gates: unrecognized feature gate: {name}")
        if not sep or value.strip().lower() not in {"true", "false"}:
            raise ConfigError(f"--feature-gates: invalid value of {name}: {value!r}")
        gates[name] = value.strip().lower() == "true"
    return gates


_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Parse a Go duration (``10s``, ``1m30s``, ``500ms``, ``1.5h``; ``0``) into seconds."""
    stripped = text.strip()
    if stripped in {"0", "+0"}:
        return 0.0
    position, total = 0, 0.0
    for match in _DURATION_PART.finditer(stripped):
        if match.start() != position:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    if not stripped or position != len(stripped):
        raise ValueError(f"invalid duration {text!r} (use Go syntax such as 10s, 1m30s, 500ms)")
    return total


def parse_bool(text: str) -> bool:
    """Parse a Go-style boolean flag value (``true``, ``false``, ``1``, ``0``, ``t``, ``f``)."""
    value = text.strip().lower()
    if value in {"1", "t", "true"}:
        return True
    if value in {"0", "f", "false"}:
        return False
    raise ValueError(f"invalid boolean {text!r} (use true or false)")


WATCH_GATE = "CloudControllerManagerWatchBasedRoutesReconciliation"
FEATURE_GATE_DEFAULTS = {WATCH_GATE: True}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Everything ``routectl run`` is told, validated. Defaults are the flags' defaults."""

    cluster_cidrs: tuple[Network, ...]
    provider: str
    provider_options: Mapping[str, str] = dataclasses.field(default_factory=dict)
    cluster_name: str = "kubernetes"
    """Passed to the provider, which uses it to tell this cluster's routes from others'."""
    kubeconfig: str | None = None
    configure_cloud_routes: bool = True
    watch_mode: bool = True
    """KEP-5237's watch-based reconciliation (the feature gate); False is upstream's polling."""
    route_reconciliation_period: float = 10.0
    """Periodic mode only: a full sync with a fresh listing this often (upstream's 10 s)."""
    route_resync_period: float = 3600.0
    """Watch mode: a full sync with a fresh listing this often (jittered up to +25 %), so
    drift made by others is repaired. Upstream's 12-24 h is too slow to repair drift."""
    batch_window: float = 0.25
    """Node events within this window after the first make one sync (one ListRoutes)."""
    min_sync_interval: float = 0.0
    """Syncs start no closer together than this (upstream's watch mode: 10 s)."""
    listing_max_age: float = 300.0
    """A sync may diff against a listing this young (kept current with our own writes)
    instead of listing again; 0 lists on every sync, as upstream does."""
    batch_writes: bool = True
    """Write a whole sync in one call when the provider can (whole-table clouds)."""
    batch_write_interval: float = 10.0
    """With batched writes, syncs start no closer together than this, so a burst of Node
    events becomes a few large writes rather than many small ones."""
    retry_failed_syncs: bool = True
    """Requeue a sync whose cloud calls failed, with backoff (upstream's watch mode does not)."""
    retry_backoff_base: float = 1.0
    retry_backoff_cap: float = 120.0
    cloud_qps: float = 2.0
    """Sustained cloud calls per second, all operations and retries together; 0 disables
    the client-side bucket (only to reproduce upstream in benchmarks)."""
    cloud_burst: int = 10
    max_concurrent_route_operations: int = 200
    cloud_call_timeout: float = 30.0
    cloud_max_attempts: int = 4
    mass_delete_threshold: float = 0.5
    """A sync that would delete more than this share of the routes it owns deletes nothing."""
    allow_mass_delete: bool = False
    leader_elect: bool = True
    leader_elect_lease_duration: float = 15.0
    leader_elect_renew_deadline: float = 10.0
    leader_elect_retry_period: float = 2.0
    leader_elect_resource_name: str = "routectl"
    leader_elect_resource_namespace: str = "kube-system"
    leader_elect_identity: str = ""
    metrics_bind_address: str = "0.0.0.0:8080"
    log_format: str = "text"
    verbosity: int = 0
    graceful_shutdown_timeout: float = 30.0

    def __post_init__(self) -> None:
        for message, ok in _checks(self):
            if not ok:
                raise ConfigError(message)


def _checks(s: Settings) -> list[tuple[str, bool]]:
    return [
        ("--cloud-qps must be >= 0", s.cloud_qps >= 0),
        ("--cloud-burst must be >= 1", s.cloud_burst >= 1),
        ("--max-concurrent-route-operations must be >= 1", s.max_concurrent_route_operations >= 1),
        ("--cloud-call-timeout must be > 0", s.cloud_call_timeout > 0),
        ("--cloud-max-attempts must be >= 1", s.cloud_max_attempts >= 1),
        ("--route-reconciliation-period must be > 0", s.route_reconciliation_period > 0),
        ("--route-resync-period must be > 0", s.route_resync_period > 0),
        ("--mass-delete-threshold must be within 0..1", 0 <= s.mass_delete_threshold <= 1),
        ("--log-format must be text or json", s.log_format in {"text", "json"}),
        (
            (
                "--leader-elect-lease-duration must exceed --leader-elect-renew-deadline, "
                "which must exceed 1.2 x --leader-elect-retry-period"
            ),
            s.leader_elect_lease_duration
            > s.leader_elect_renew_deadline
            > 1.2 * s.leader_elect_retry_period
            > 0,
        ),
        ("--cluster-name must not be empty", bool(s.cluster_name)),
        (
            "--leader-elect-resource-name must be a DNS subdomain (lower case, digits, '-', '.')",
            bool(_DNS_SUBDOMAIN.match(s.leader_elect_resource_name)),
        ),
        (
            "--leader-elect-resource-namespace must be a DNS label (lower case, digits, '-')",
            bool(_DNS_LABEL.match(s.leader_elect_resource_namespace)),
        ),
        ("--metrics-bind-address must be host:port", _is_host_port(s.metrics_bind_address)),
    ]


def _is_host_port(text: str) -> bool:
    host, sep, port = text.rpartition(":")
    return (
        bool(sep)
        and port.isdigit()
        and int(port) <= MAX_PORT
        and host.count("[") == host.count("]")
    )

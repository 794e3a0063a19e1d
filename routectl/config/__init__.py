"""What ``routectl run`` and ``routectl plan`` are told: every setting, declared once.

Each field of :class:`Settings` is an option (see :mod:`routectl.config.option`): its flag, syntax,
default, help and the reason a value is valid sit on the field, and :data:`OPTIONS` reads
them back. The fields are declared by topic in this package's modules (:mod:`.routing`,
:mod:`.election`, :mod:`.serving`, :mod:`.ipam`, :mod:`.ignored`); :class:`Settings` joins
them and checks the rules across them. The command line (:mod:`routectl.cli.flags`), the cloud
call policy (:func:`routectl.cloud.policy.call_policy`) and the chart's tests are derived from
that table. Flag names, syntax and error texts follow the cloud-controller-manager where it
has them.

Promises:

* a Settings value is valid: each option passes its own check, then each rule across options
  in :data:`RULES` holds; otherwise ConfigError, one line that names the flag;
* defaults live in this package only.

Pure: no I/O, no environment, no clock, no logging, no argparse.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from routectl.cidr import Network
from routectl.config.ccm import IGNORED_FLAGS, WATCH_GATE, controllers_problem
from routectl.config.election import ElectionOptions
from routectl.config.groups import IGNORED
from routectl.config.ignored import IgnoredCcmFlags
from routectl.config.ipam import IpamOptions
from routectl.config.kcm import check_pools, node_mask_sizes
from routectl.config.option import Option, options_of, settings_dataclass
from routectl.config.routing import RoutingOptions
from routectl.config.serving import ServingOptions
from routectl.config.syntax import (
    parse_cluster_cidrs,
    parse_duration,
    parse_feature_gates,
    parse_key_values,
)
from routectl.errors import ConfigError

__all__ = [  # the parsers are re-exported from routectl.config.syntax, where they live
    "FEATURE_GATE_DEFAULTS", "IGNORED", "OPTIONS", "RULES", "WATCH_GATE", "Settings",
    "default_of", "leader_election_timings", "parse_cluster_cidrs", "parse_duration",
    "parse_feature_gates", "parse_key_values",
]  # fmt: skip

FEATURE_GATE_DEFAULTS = {WATCH_GATE: True}


@settings_dataclass
class Settings(IgnoredCcmFlags, IpamOptions, ServingOptions, ElectionOptions, RoutingOptions):
    """Everything ``routectl run`` (or ``plan``) is told, validated.

    Fields come in the order of the bases from the last to the first: routing, election,
    serving, IPAM, the ignored CCM flags (the order of ``--help``).
    """

    @property
    def watch_mode(self) -> bool:
        """Watch mode (the default) unless ``--feature-gates`` turns its gate off."""
        return self.feature_gates.get(WATCH_GATE, True)

    @property
    def route_cidrs(self) -> tuple[Network, ...]:
        """The ranges whose routes are routectl's: the cluster CIDRs, and with node IPAM
        on, the additional pools."""
        if not self.routectl_allocate_node_cidrs:
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
    if not s.routectl_allocate_node_cidrs:
        return None
    if not s.configure_cloud_routes:
        return (
            "--routectl-allocate-node-cidrs needs --configure-cloud-routes=true "
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

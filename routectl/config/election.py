"""The options of leader election on a Lease, as client-go's leaderelection names them.

Promises: the Lease's duration is whole seconds in the int32 range, its name a DNS subdomain,
its namespace a DNS label; only the ``leases`` lock exists. Pure: no I/O.
"""

from __future__ import annotations

import re

from routectl.config.groups import ELECTION
from routectl.config.option import DURATION, Check, above, matches, option, settings_dataclass

__all__ = ["LEASE_SECONDS", "MAX_LEASE_SECONDS", "ElectionOptions"]

MAX_LEASE_SECONDS = float(2**31 - 1)
LEASE_SECONDS = Check(
    reason="must be at least 1s and at most 2147483647s (the Lease's whole seconds)",
    ok=lambda v: 1.0 <= v <= MAX_LEASE_SECONDS,
    refuses=(0.5, MAX_LEASE_SECONDS + 1),
)
LEASES_ONLY = Check(
    reason="must be leases: routectl elects on a coordination.k8s.io/v1 Lease only",
    ok=lambda v: v == "leases",
    refuses=("endpointsleases", "configmapsleases", "endpoints", ""),
)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_MANAGERS_LEASES = frozenset({"cloud-controller-manager", "kube-controller-manager"})
"""The controller-managers' own Lease names (their default ``--leader-elect-resource-name``)."""
_DNS_SUBDOMAIN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


@settings_dataclass
class ElectionOptions:
    """Who leads, on which Lease, with which timings."""

    # One option is a few lines of a table: one argument per line would hide the table.
    # fmt: off
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
        check=Check(
            reason="must be a DNS subdomain (lower case, digits, '-', '.') and not the Lease "
            "of a controller-manager (routectl would take it from the CCM's other controllers)",
            ok=lambda v: bool(_DNS_SUBDOMAIN.match(v)) and v not in _MANAGERS_LEASES,
            refuses=("", "Not_A_Name", "a..b", "cloud-controller-manager"),
        ),
    )
    """A name of routectl's own: pasting a CCM's ``--leader-elect-resource-name`` is refused."""
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
    # fmt: on

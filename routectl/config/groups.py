"""The titles of the option groups in ``--help`` (and the commands most options belong to)."""

from __future__ import annotations

from routectl.config.option import PLAN, RUN

__all__ = ["BOTH", "CLOUD", "CLUSTER", "ELECTION", "IGNORED", "IPAM", "SECURE", "SERVING", "SYNC"]

CLUSTER, CLOUD, SYNC = "cluster", "cloud", "synchronisation"
IPAM = "node IPAM (pod CIDR allocation, off by default)"
ELECTION, SERVING = "leader election", "serving and logging"
SECURE = "secure serving and delegated authentication (as the CCM's)"
IGNORED = "cloud-controller-manager flags that do not concern routes (accepted, ignored)"
BOTH = (RUN, PLAN)
"""Options ``routectl plan`` reads too (the others are ``routectl run``'s only)."""

"""Node IPAM's Prometheus metrics, registered in routectl's own registry.

* ``routectl_ipam_blocks{pool,family,state}``: blocks of each pool's current mask size by
  state (``used``, ``free``, ``quarantined``, ``excluded``, ``foreign``);
* ``routectl_ipam_pending_nodes``: Nodes without pod CIDRs; ``routectl_ipam_waiting_nodes``:
  those of them no pool has room for;
* ``routectl_ipam_conflicts``: Nodes whose pod CIDR another Node holds too (or overlaps);
* ``routectl_ipam_findings_total{reason}``: bad pod CIDRs found on Nodes, each counted once;
* ``routectl_ipam_allocations_total{result}``: Node patches by result;
* ``routectl_ipam_allocation_seconds``: from a Node seen without pod CIDRs to its patch;
* ``routectl_ipam_claims{state}``: claim Leases known (``held``) and orphaned;
* ``routectl_ipam_other_allocator``: 1 once a pod CIDR in routectl's pools was written by
  another allocator (routectl's allocation has stopped), else 0.
"""

from __future__ import annotations

import dataclasses

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class IpamMetrics:
    """Every node IPAM metric."""

    blocks: Gauge
    pending: Gauge
    waiting: Gauge
    conflicts: Gauge
    findings: Counter
    allocations: Counter
    allocation_seconds: Histogram
    claims: Gauge
    other_allocator: Gauge

    @classmethod
    def create(cls, registry: CollectorRegistry) -> IpamMetrics:
        """Create the metrics in ``registry`` (the one of :class:`~routectl.metrics.Metrics`)."""
        r = registry
        return cls(
            blocks=Gauge(
                "routectl_ipam_blocks",
                "Pod CIDR blocks of each pool's current mask size, by state.",
                ["pool", "family", "state"],
                registry=r,
            ),
            pending=Gauge("routectl_ipam_pending_nodes", "Nodes without pod CIDRs.", registry=r),
            waiting=Gauge("routectl_ipam_waiting_nodes", "Nodes no pool has room for.", registry=r),
            conflicts=Gauge(
                "routectl_ipam_conflicts",
                "Nodes whose pod CIDR another Node holds too or overlaps.",
                registry=r,
            ),
            findings=Counter(
                "routectl_ipam_findings_total",
                "Bad pod CIDRs found on Nodes, by reason (each once).",
                ["reason"],
                registry=r,
            ),
            allocations=Counter(
                "routectl_ipam_allocations_total",
                "Node pod CIDR patches by result.",
                ["result"],
                registry=r,
            ),
            allocation_seconds=Histogram(
                "routectl_ipam_allocation_seconds",
                "Time from a Node seen without pod CIDRs to its pod CIDRs written.",
                buckets=LATENCY_BUCKETS,
                registry=r,
            ),
            claims=Gauge("routectl_ipam_claims", "Claim Leases by state.", ["state"], registry=r),
            other_allocator=Gauge(
                "routectl_ipam_other_allocator",
                "1 once another allocator wrote a pod CIDR in routectl's pools (routectl's "
                "allocation has stopped).",
                registry=r,
            ),
        )

"""Node IPAM's Prometheus metrics, registered in routectl's own registry.

* ``routectl_ipam_blocks{pool,family,state}``: blocks of each pool's current mask size by
  state (``used``, ``free``, ``quarantined``, ``excluded``, ``foreign``), counted when
  Prometheus scrapes (:class:`BlockCounts`), so it never keeps a state a sync changed;
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
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily

from routectl.ipam.core import PoolUsage

ALLOCATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600)
"""From a Node's registration to its pod CIDR: seconds when a block is free, an hour when
Nodes wait for a quarantined block."""


STATES = ("free", "used", "quarantined", "excluded", "foreign")


class BlockCounts:
    """``routectl_ipam_blocks``, computed at scrape time from what :meth:`read_from` gives.

    No timer keeps it current and no sync pays for it: the counts are taken when they are
    read, on the event loop (where the allocator lives), so they are never stale.
    """

    NAME = "routectl_ipam_blocks"
    DOC = "Pod CIDR blocks of each pool's current mask size, by state."
    LABELS = ("pool", "family", "state")

    def __init__(self) -> None:
        self._read: Callable[[], Iterable[PoolUsage]] = tuple

    def read_from(self, read: Callable[[], Iterable[PoolUsage]]) -> None:
        """Count from ``read()``'s pool usages at every scrape."""
        self._read = read

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The family, without samples (for the registry's checks)."""
        yield GaugeMetricFamily(self.NAME, self.DOC, labels=self.LABELS)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """The family with one sample per pool and state."""
        family = GaugeMetricFamily(self.NAME, self.DOC, labels=self.LABELS)
        for each in self._read():
            pool, version = str(each.pool.network), f"IPv{each.pool.network.version}"
            for state in STATES:
                family.add_metric([pool, version, state], getattr(each, state))
        yield family


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class IpamMetrics:
    """Every node IPAM metric."""

    blocks: BlockCounts
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
        """Create the metrics in ``registry``, the one :mod:`routectl.observe.metrics` uses."""
        r = registry
        blocks = BlockCounts()
        r.register(blocks)
        return cls(
            blocks=blocks,
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
                buckets=ALLOCATION_BUCKETS,
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

"""Controller profiles, each nothing but a list of ``routectl run`` flags.

* ``routectl``: watch mode with routectl's defaults; its client bucket set to the cloud's
  budget, as an operator would.
* ``upstream-watch``: KEP-5237's watch mode: the first event syncs at once, then at most one
  sync per 10 s; a fresh ListRoutes on every sync; no client bucket; one attempt per call;
  failed syncs not requeued; a 12 h resync (upstream draws 12-24 h; routectl's jitter gives
  12-15 h, which changes nothing within a simulation shorter than 12 h).
* ``upstream-periodic``: the feature gate off: a full sync with a fresh ListRoutes every
  10 s, no bucket, no retries.

The upstream profiles also pass ``--allow-mass-delete`` and ``--batch-writes=false``:
upstream has no such guard and writes one route per call even to whole-table clouds.

For the node IPAM scenarios (:data:`IPAM_SCENARIOS`), where Nodes register without pod
CIDRs, somebody must allocate:

* ``routectl-ipam``: ``routectl`` with ``--routectl-allocate-node-cidrs``: it allocates in its sync;
* ``kcm+<profile>``: ``<profile>``'s flags, and beside it a *companion*, KCM's allocator
  (:mod:`routectl_sim.kcm`). A companion is named before a ``+``; the part after the last
  ``+`` is the profile whose flags routectl runs with, so ``kcm+upstream-periodic`` is
  today's stack in the classic mode and ``kcm+routectl`` routectl's routing of KCM's CIDRs.

In those scenarios every profile's ``--cluster-cidr`` is the scenario's pool
(:func:`scenario_flags`), the same range KCM allocates from, as clusters configure both.
"""

from __future__ import annotations

from routectl.cli.flags import parse_run_flags
from routectl.config import Settings

CLUSTER_CIDR = "10.0.0.0/8"
SCENARIOS = (
    "idle",
    "scale-up",
    "scale-down",
    "rolling",
    "address-change",
    "drift",
    "single-join",
    "chaos",
    "burst-failover",
)
"""The route workloads of :mod:`routectl_sim.workload` (named here: importing is cheap);
``chaos`` and ``burst-failover`` (the chaos soak with
:func:`~routectl_sim.chaos.burst_failover` as its only fault) run two elected replicas."""
ELECTED = frozenset({"chaos", "burst-failover"})
"""The scenarios that run two replicas under leader election, and kill leaders."""
IPAM_SCENARIOS = ("ipam-join", "ipam-churn", "ipam-exhaustion")
"""The node IPAM workloads: Nodes register without pod CIDRs."""
POD_MASK = 24
"""Every pod CIDR is a /24 of ``10.0.0.0/8``."""

PROFILES: dict[str, tuple[str, ...]] = {
    "routectl": (),
    "upstream-watch": (
        "--route-sync-batch-window=0",
        "--min-sync-interval=10s",
        "--route-listing-max-age=0",
        "--cloud-qps=0",
        "--cloud-max-attempts=1",
        "--retry-failed-syncs=false",
        "--route-resync-period=12h",
        "--batch-writes=false",
        "--allow-mass-delete",
    ),
    "upstream-periodic": (
        "--feature-gates=CloudControllerManagerWatchBasedRoutesReconciliation=false",
        "--route-reconciliation-period=10s",
        "--route-listing-max-age=0",
        "--cloud-qps=0",
        "--cloud-max-attempts=1",
        "--retry-failed-syncs=false",
        "--batch-writes=false",
        "--allow-mass-delete",
    ),
    "routectl-ipam": ("--routectl-allocate-node-cidrs",),
}
BUDGETED = frozenset({"routectl", "routectl-ipam"})
"""Profiles whose client bucket is set to the cloud's budget."""
COMPANIONS = ("kcm",)
"""What a profile can run beside routectl (before a ``+``)."""
ROUTE_PROFILES = ("routectl", "upstream-watch", "upstream-periodic")
IPAM_PROFILES = ("kcm+upstream-periodic", "kcm+upstream-watch", "kcm+routectl", "routectl-ipam")
"""Every profile of the node IPAM scenarios allocates: with KCM beside it, or itself."""


def split_profile(name: str) -> tuple[tuple[str, ...], str]:
    """``"kcm+upstream-watch"`` → ``(("kcm",), "upstream-watch")``: companions, flags."""
    *companions, base = name.split("+")
    return tuple(companions), base


def known_profile(name: str) -> bool:
    """Every companion is one there is, and the flags are a profile's."""
    companions, base = split_profile(name)
    return base in PROFILES and all(c in COMPANIONS for c in companions)


def profile_flags(name: str, *, budget_qps: float, budget_burst: int) -> list[str]:
    """The complete ``routectl run`` flags of profile ``name`` against a cloud budget."""
    _, base = split_profile(name)
    flags = [
        "--provider=fake",
        f"--cluster-cidr={CLUSTER_CIDR}",
        "--leader-elect=false",
        "--metrics-bind-address=127.0.0.1:0",
    ]
    if base in BUDGETED:
        flags += [f"--cloud-qps={budget_qps:g}", f"--cloud-burst={budget_burst}"]
    return flags + list(PROFILES[base])


def default_pool_blocks(scenario: str, nodes: int) -> int:
    """The pod CIDR pool's size in /24 blocks (a power of two) for a node IPAM scenario.

    ``ipam-join``: room to spare (twice the Nodes); ``ipam-churn``: the smallest pool with
    room for an eighth more Nodes, as a cluster that has grown into its range; and
    ``ipam-exhaustion``: the largest pool smaller than the Nodes, so some must wait.
    """
    if scenario == "ipam-exhaustion":
        return max(1, _power_of_two_at_least(nodes) // 2)
    wanted = 2 * nodes if scenario == "ipam-join" else nodes + -(-nodes // 8)
    return _power_of_two_at_least(wanted)


def _power_of_two_at_least(value: int) -> int:
    return 1 << max(0, value - 1).bit_length()


def ipam_pool(blocks: int) -> str:
    """The cluster CIDR with ``blocks`` /24 blocks, from ``10.0.0.0``."""
    if blocks < 1 or blocks & (blocks - 1) or blocks > 2**POD_MASK // 2**8:
        raise ValueError(f"a pool of {blocks} /24 blocks: not a power of two within 10.0.0.0/8")
    return f"10.0.0.0/{POD_MASK - (blocks.bit_length() - 1)}"


def pod_cidr_pool(scenario: str, *, nodes: int, pool_blocks: int = 0) -> str:
    """Where pod CIDRs come from: a node IPAM scenario's pool, else the cluster CIDR."""
    if scenario not in IPAM_SCENARIOS:
        return CLUSTER_CIDR
    return ipam_pool(pool_blocks or default_pool_blocks(scenario, nodes))


def scenario_flags(scenario: str, *, nodes: int, pool_blocks: int = 0) -> list[str]:
    """What a scenario adds to every profile's flags: a node IPAM scenario's pool."""
    if scenario not in IPAM_SCENARIOS:
        return []
    return [f"--cluster-cidr={pod_cidr_pool(scenario, nodes=nodes, pool_blocks=pool_blocks)}"]


def profile_settings(name: str, *, budget_qps: float, budget_burst: int) -> Settings:
    """Parse the profile's flags exactly as ``routectl run`` would."""
    return parse_run_flags(profile_flags(name, budget_qps=budget_qps, budget_burst=budget_burst))

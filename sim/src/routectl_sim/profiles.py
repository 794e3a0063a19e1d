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
"""

from __future__ import annotations

from routectl.config import Settings
from routectl.flags import parse_run_flags

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
)
"""The workloads of :mod:`routectl_sim.workload` (named here, where importing is cheap)."""

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
}


def profile_flags(name: str, *, budget_qps: float, budget_burst: int) -> list[str]:
    """The complete ``routectl run`` flags of profile ``name`` against a cloud budget."""
    flags = [
        "--provider=fake",
        f"--cluster-cidr={CLUSTER_CIDR}",
        "--leader-elect=false",
        "--metrics-bind-address=127.0.0.1:0",
    ]
    if name == "routectl":
        flags += [f"--cloud-qps={budget_qps:g}", f"--cloud-burst={budget_burst}"]
    return flags + list(PROFILES[name])


def profile_settings(name: str, *, budget_qps: float, budget_burst: int) -> Settings:
    """Parse the profile's flags exactly as ``routectl run`` would."""
    return parse_run_flags(profile_flags(name, budget_qps=budget_qps, budget_burst=budget_burst))

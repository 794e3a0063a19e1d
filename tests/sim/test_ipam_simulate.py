"""`routectl simulate`'s node IPAM scenarios: Nodes register without pod CIDRs.

Small seeded runs on the virtual clock, each profile on the same workload: routectl
allocating itself (``routectl-ipam``) against today's stack, KCM's RangeAllocator feeding a
route controller (``kcm+…``). The tests check outcomes, never durations: every Node gets a
CIDR and gets ready, routectl never hands out a CIDR the cloud still routes elsewhere while
KCM does, an exhausted pool makes one Warning per waiting Node, and the JSON's shape.
"""

from __future__ import annotations

import json

import pytest

from routectl.cli.main import main
from routectl_sim.report import INVARIANTS
from routectl_sim.runner import CloudModel, Job, Result, run_job

pytestmark = pytest.mark.integration

CLOUD = CloudModel(list_latency=0.2, write_latency=1.0, qps=1.0, burst=10)
REUSE = "cidr_reused_while_routed"


def run(scenario: str, profile: str, *, nodes: int, minutes: int) -> Result:
    return run_job(
        Job(scenario=scenario, profile=profile, nodes=nodes, duration=minutes * 60.0, cloud=CLOUD)
    )


@pytest.mark.parametrize("profile", ["routectl-ipam", "kcm+upstream-watch"])
def test_every_joining_node_gets_one_cidr_and_gets_ready(profile: str) -> None:
    """ipam-join: 20 Nodes register without pod CIDRs; each gets one PATCH of its spec and
    one status write, and is ready; routectl also takes one claim Lease per CIDR."""
    result = run("ipam-join", profile, nodes=20, minutes=12)
    assert result.registrations == 20
    assert len(result.cidr_latencies) == len(result.join_latencies) == 20
    assert result.api_writes["node_spec"] == result.api_writes["node_status"] == 20
    assert result.api_writes["leases"] == (20 if profile == "routectl-ipam" else 0)
    assert result.cloud_calls["create"] == 20
    assert result.events == {}
    assert result.invariants == dict.fromkeys(INVARIANTS, 0)


@pytest.mark.slow
def test_under_churn_routectl_never_reuses_a_routed_cidr_and_kcm_does() -> None:
    """ipam-churn: waves of Nodes replaced, the replacements registering seconds after the
    old Nodes left. KCM frees a block in its Delete handler and its cursor hands it out
    again while the old route stands; routectl waits until a listing shows it gone."""
    ours = run("ipam-churn", "routectl-ipam", nodes=30, minutes=15)
    today = run("ipam-churn", "kcm+upstream-periodic", nodes=30, minutes=15)
    assert ours.registrations == today.registrations > 0
    assert len(ours.join_latencies) == ours.registrations
    assert ours.invariants == dict.fromkeys(INVARIANTS, 0)
    assert today.invariants[REUSE] > 0
    assert today.invariants["wrongful_deletes"] == 0


@pytest.mark.slow
def test_exhaustion_warns_once_per_waiting_node_and_kcm_repeats_itself() -> None:
    """ipam-exhaustion: 20 Nodes, 16 blocks. routectl records one Warning per waiting Node;
    KCM a Normal Event on every retry. When two Nodes leave, two waiting ones get blocks
    under both, so 18 end ready."""
    ours = run("ipam-exhaustion", "routectl-ipam", nodes=20, minutes=15)
    today = run("ipam-exhaustion", "kcm+upstream-watch", nodes=20, minutes=15)
    assert ours.events["Warning CIDRNotAvailable"] == 4
    assert "Normal CIDRNotAvailable" not in ours.events
    assert today.events["Normal CIDRNotAvailable"] > 4 * 5
    assert len(ours.join_latencies) == len(today.join_latencies) == 18
    assert ours.invariants == dict.fromkeys(INVARIANTS, 0)


def test_ipam_json_has_the_join_writes_and_events(tmp_path) -> None:
    """--scenario ipam-join without --profiles runs the four allocating profiles; each
    object has the node-join latencies, API writes by kind and Events by reason."""
    out = tmp_path / "ipam.json"
    args = ["simulate", "--scenario", "ipam-join", "--nodes", "4", "--duration", "3m"]
    assert main([*args, "--jobs", "1", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert list(data["profiles"]) == [
        "kcm+upstream-periodic",
        "kcm+upstream-watch",
        "kcm+routectl",
        "routectl-ipam",
    ]
    for profile in data["profiles"].values():
        assert set(profile["node_join_seconds"]) == {
            "registered",
            "ready",
            "cidr_p50",
            "cidr_p99",
            "ready_p50",
            "ready_p99",
            "ready_max",
        }
        assert set(profile["api_writes"]) == {
            "node_spec",
            "node_status",
            "leases",
            "events",
            "other",
        }
        assert isinstance(profile["events"], dict)
        assert profile["invariants"][REUSE] == 0

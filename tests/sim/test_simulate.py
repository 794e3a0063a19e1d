"""`routectl simulate`: small runs of every scenario, checked for correctness, not speed.

The simulations run the real controller over HTTP on their own virtual-clock loop, so these
tests are synchronous (they own the loop) and assert invariants: no wrongful delete, the
cloud converges, routectl never exceeds the budget, the JSON has exactly the documented shape.
"""

from __future__ import annotations

import json

import pytest

from routectl.cli.main import main
from routectl_sim.chaos import timeline
from routectl_sim.report import INVARIANTS
from routectl_sim.runner import CloudModel, Job, Result, _expected_cost, run_job

pytestmark = pytest.mark.integration

CLOUD = CloudModel(list_latency=0.2, write_latency=1.0, qps=1.0, burst=10)


def max_calls_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    best, start = 0, 0
    for end, t in enumerate(times):
        while t - times[start] >= window:
            start += 1
        best = max(best, end - start + 1)
    return best


def within_budget(result: Result) -> bool:
    """No window of the call log holds more calls than the cloud's bucket allows."""
    return all(
        max_calls_in_window(result.call_times, w) <= CLOUD.burst + CLOUD.qps * w + 1
        for w in (1.0, 10.0, 60.0)
    )


@pytest.mark.parametrize(
    ("scenario", "duration"),
    [
        ("idle", 900.0),
        ("scale-up", 600.0),
        ("scale-down", 600.0),
        ("rolling", 900.0),
        ("address-change", 900.0),
        ("drift", 5400.0),
        ("single-join", 900.0),
    ],
)
@pytest.mark.slow
def test_routectl_converges_without_wrongful_deletes_within_budget(scenario, duration) -> None:
    """Every scenario ends with the cloud matching the cluster, nothing wrongly deleted,
    no throttled answer and no window above the budget."""
    result = run_job(
        Job(scenario=scenario, profile="routectl", nodes=60, duration=duration, cloud=CLOUD)
    )
    assert result.wrongful_deletes == 0
    assert result.converge_seconds >= 0
    assert result.throttled == 0
    assert within_budget(result)
    assert result.cpu_seconds > 0


def test_upstream_profiles_run_the_same_workload() -> None:
    """The upstream profiles run too; periodic mode lists every 10 s whatever happens."""
    periodic = run_job(
        Job(scenario="idle", profile="upstream-periodic", nodes=20, duration=300.0, cloud=CLOUD)
    )
    watch = run_job(
        Job(scenario="idle", profile="upstream-watch", nodes=20, duration=300.0, cloud=CLOUD)
    )
    ours = run_job(Job(scenario="idle", profile="routectl", nodes=20, duration=300.0, cloud=CLOUD))
    assert 29 <= periodic.cloud_calls["list"] <= 31
    assert watch.cloud_calls["list"] <= 2
    assert ours.cloud_calls["list"] == 1
    assert periodic.wrongful_deletes == watch.wrongful_deletes == ours.wrongful_deletes == 0


def test_lone_node_gets_its_route_quickly() -> None:
    """On an idle budget a lone new node's route exists within 1.5 s of its pod CIDR (1 s write)."""
    result = run_job(
        Job(scenario="single-join", profile="routectl", nodes=50, duration=1250.0, cloud=CLOUD)
    )
    assert len(result.latencies) == 4
    assert max(result.latencies) <= 1.5


def test_json_and_plot_outputs(tmp_path, capsys) -> None:
    """--json writes exactly the documented shape (a list for all scenarios); --plot a PNG."""
    out, png = tmp_path / "sim.json", tmp_path / "sim.png"
    code = main(
        [
            "simulate",
            "--scenario",
            "all",
            "--nodes",
            "10",
            "--duration",
            "2m",
            "--jobs",
            "1",
            "--json",
            str(out),
            "--plot",
            str(png),
        ]
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert [d["scenario"] for d in data] == [
        "idle",
        "scale-up",
        "scale-down",
        "rolling",
        "address-change",
        "drift",
        "single-join",
    ]
    for scenario in data:
        assert set(scenario) == {"scenario", "nodes", "simulated_seconds", "profiles"}
        assert scenario["nodes"] == 10
        assert scenario["simulated_seconds"] == 120.0
        assert set(scenario["profiles"]) == {"routectl", "upstream-watch", "upstream-periodic"}
        for profile in scenario["profiles"].values():
            assert set(profile) == {
                "simulated_seconds",
                "cloud_calls",
                "throttled",
                "route_latency_seconds",
                "node_ready_seconds",
                "node_join_seconds",
                "api_writes",
                "events",
                "converge_seconds",
                "wrongful_deletes",
                "cpu_seconds",
                "peak_rss_bytes",
                "invariants",
            }
            assert set(profile["invariants"]) == set(INVARIANTS)
            assert not any(profile["invariants"].values()), profile["invariants"]
            assert set(profile["cloud_calls"]) == {"list", "create", "delete", "replace"}
            assert set(profile["route_latency_seconds"]) == {"p50", "p99", "max"}
            assert set(profile["node_ready_seconds"]) == {"p50", "p99", "max", "after_route_max"}
            assert all(isinstance(v, int) for v in profile["cloud_calls"].values())
            assert isinstance(profile["converge_seconds"], float)
            assert isinstance(profile["peak_rss_bytes"], int)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "ListRoutes calls" in capsys.readouterr().out


def test_one_scenario_writes_one_object(tmp_path) -> None:
    """With one scenario, --json holds one object, not a list."""
    out = tmp_path / "sim.json"
    assert (
        main(
            [
                "simulate",
                "--scenario",
                "idle",
                "--nodes",
                "5",
                "--duration",
                "1m",
                "--profiles",
                "routectl",
                "--jobs",
                "1",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    data = json.loads(out.read_text())
    assert data["scenario"] == "idle"
    assert list(data["profiles"]) == ["routectl"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--profiles", "nope"], "--profiles"),
        (["--nodes", "0"], "--nodes"),
        (["--duration", "fast"], "--duration"),
        (["--scenario", "chaos-monkey"], "--scenario"),
        # A profile that does not allocate cannot run a node IPAM scenario (nor the reverse);
        # the pool must be a power of two that fits in 10.0.0.0/8.
        (["--scenario", "ipam-join", "--profiles", "routectl"], "--profiles"),
        (["--scenario", "idle", "--profiles", "routectl-ipam"], "--profiles"),
        (["--scenario", "ipam-churn", "--profiles", "kcm+nope"], "--profiles"),
        (["--scenario", "ipam-join", "--ipam-pool-blocks", "3"], "--ipam-pool-blocks"),
        (["--scenario", "ipam-join", "--nodes", "40000"], "--ipam-pool-blocks"),
    ],
)
def test_bad_simulate_flags_exit_2(args, needle, capsys) -> None:
    """Bad simulate flags exit 2 with one line naming the flag."""
    with pytest.raises(SystemExit) as info:
        main(["simulate", *args])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert needle in err


@pytest.mark.slow
def test_whole_table_cloud_scale_up_is_a_few_batches() -> None:
    """Against a whole-table cloud, routectl writes 200 new routes in a few batch writes."""
    cloud = CloudModel(list_latency=0.2, write_latency=1.0, qps=1.0, burst=10, whole_table=True)
    ours = run_job(
        Job(scenario="scale-up", profile="routectl", nodes=200, duration=600.0, cloud=cloud)
    )
    assert ours.converge_seconds >= 0
    assert ours.wrongful_deletes == 0
    assert ours.batched_writes == ours.cloud_calls["create"] <= 10


def chaos(seed: int, *, nodes: int = 30, minutes: int = 30) -> Job:
    """A short chaos soak: faults for about twenty minutes, then the quiet period."""
    return Job(
        scenario="chaos",
        profile="routectl",
        nodes=nodes,
        duration=minutes * 60.0,
        seed=seed,
        cloud=CLOUD,
        controller_flags=("--route-resync-period=5m",),
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.slow
def test_a_small_chaos_sweep_keeps_every_invariant(seed: int) -> None:
    """Under churn, Kubernetes and cloud faults and leader kills, no invariant is broken and
    the cloud matches the cluster after the last fault, for every seed of the sweep."""
    result = run_job(chaos(seed))
    assert len(result.faults) >= 4, result.faults
    assert result.invariants == dict.fromkeys(INVARIANTS, 0), (result.invariants, result.faults)
    # Memory does not keep growing: the last two thirds of the soak add little.
    assert result.late_rss_growth_bytes < 32 * 2**20, result.late_rss_growth_bytes


@pytest.mark.slow
def test_a_seed_fixes_the_fault_timeline() -> None:
    """The same seed injects the same faults at the same times; another seed does not."""
    assert timeline(7, start=0.0, until=7200.0) == timeline(7, start=0.0, until=7200.0)
    assert timeline(7, start=0.0, until=7200.0) != timeline(8, start=0.0, until=7200.0)
    first, again = run_job(chaos(5, nodes=10, minutes=20)), run_job(chaos(5, nodes=10, minutes=20))
    assert first.faults
    assert first.faults == again.faults


def test_one_command_sweeps_many_seeds(tmp_path, capsys) -> None:
    """``--seeds N`` runs N seeds and reports each invariant's total and breaking seeds."""
    out = tmp_path / "sweep.json"
    args = ["--scenario", "chaos", "--profiles", "routectl", "--nodes", "5", "--duration", "12m"]
    args += ["--seed", "11", "--seeds", "2", "--jobs", "1", "--json", str(out)]
    args += ["--controller-flags=--route-resync-period=2m"]
    assert main(["simulate", *args]) == 0
    sweep = json.loads(out.read_text())
    assert sweep["seeds"] == [11, 12]
    assert sweep["totals"] == {"chaos/routectl": dict.fromkeys(INVARIANTS, 0)}
    assert [run["seed"] for run in sweep["runs"]["chaos/routectl"]] == [11, 12]
    assert "2 seeds (11..12)" in capsys.readouterr().out


MEASURED = ("cpu_seconds", "peak_rss_bytes")
"""Real CPU time and memory: measured, so never the same twice."""


def test_same_seed_gives_the_same_numbers_for_every_profile(tmp_path) -> None:
    """Two runs with one seed write the same JSON, CPU and memory aside. A scale-up under
    a budget the upstream profiles overrun holds many calls back at once until one instant,
    so it shows any tie among simultaneous timers broken differently from run to run."""
    outputs = []
    for run in ("first", "again"):
        out = tmp_path / f"{run}.json"
        args = ["--scenario", "scale-up", "--nodes", "100", "--duration", "5m", "--jobs", "1"]
        args += ["--profiles", "upstream-watch,upstream-periodic", "--json", str(out)]
        assert main(["simulate", *args, "--no-plot"]) == 0
        data = json.loads(out.read_text())
        for profile in data["profiles"].values():
            for name in MEASURED:
                profile.pop(name)
        outputs.append(data)
    first, again = outputs
    assert first["profiles"]["upstream-periodic"]["throttled"] > 0  # calls were held back
    assert first == again


def test_a_leader_killed_right_after_a_burst_leaves_no_burst_to_its_successor() -> None:
    """Bursts of twice the cloud's burst join at once and the leader is restarted or killed
    while their creates go out; the successor (whose bucket starts as if drained when its
    predecessor last could spend) never overruns the cloud's budget, and every Node is
    routed. The cloud's burst takes longer to refill (40 s) than a Lease lasts (15 s)."""
    job = Job(
        scenario="burst-failover",
        profile="routectl",
        nodes=10,
        duration=20 * 60.0,
        seed=3,
        cloud=CloudModel(list_latency=0.2, write_latency=1.0, qps=0.5, burst=20),
        controller_flags=("--route-resync-period=5m",),
    )
    result = run_job(job)
    assert any("leader restarted" in f for f in result.faults), result.faults
    assert any("leader killed" in f for f in result.faults), result.faults
    assert result.replicas_started >= 5
    assert result.invariants == dict.fromkeys(INVARIANTS, 0), (result.invariants, result.faults)


def test_the_longest_jobs_start_first() -> None:
    """Run side by side, the jobs start longest first (a periodic profile, a larger size)."""
    jobs = [
        Job(scenario="idle", profile=p, nodes=n, duration=60.0)
        for n in (100, 5000)
        for p in ("routectl", "upstream-watch", "upstream-periodic", "kcm+upstream-periodic")
    ]
    first = sorted(jobs, key=lambda j: -_expected_cost(j))[:2]
    assert {(j.nodes, j.profile) for j in first} == {
        (5000, "upstream-periodic"),
        (5000, "kcm+upstream-periodic"),
    }

"""The command line: flags, one-line errors with exit code 2, providers listing."""

from __future__ import annotations

import pytest

from routectl.cli.main import build_parser, main, settings_from_args

REQUIRED = ["--cluster-cidr=10.244.0.0/16", "--provider=fake", "--provider-option=demo=true"]


def parse(*args: str):
    return settings_from_args(build_parser().parse_args(["run", *REQUIRED, *args]))


def test_defaults_match_upstream_and_design() -> None:
    """Defaults: watch mode, 10 s period, cluster name kubernetes, 200 concurrent calls."""
    s = parse()
    assert s.watch_mode
    assert s.route_reconciliation_period == 10.0
    assert s.cluster_name == "kubernetes"
    assert s.max_concurrent_route_operations == 200
    assert s.leader_elect
    assert (
        s.leader_elect_lease_duration,
        s.leader_elect_renew_deadline,
        s.leader_elect_retry_period,
    ) == (15.0, 10.0, 2.0)
    assert s.configure_cloud_routes


def test_go_style_flags() -> None:
    """Booleans take =false, durations take Go syntax, options repeat, the gate switches mode."""
    s = parse(
        "--leader-elect=false",
        "--route-resync-period=1h30m",
        "--cloud-call-timeout=500ms",
        "--provider-option=qps=1",
        "--provider-option",
        "burst=5",
        "--feature-gates=CloudControllerManagerWatchBasedRoutesReconciliation=false",
        "--configure-cloud-routes=false",
        "--allow-mass-delete",
    )
    assert not s.leader_elect
    assert s.route_resync_period == 5400.0
    assert s.cloud_call_timeout == 0.5
    assert dict(s.provider_options) == {"demo": "true", "qps": "1", "burst": "5"}
    assert not s.watch_mode
    assert not s.configure_cloud_routes
    assert s.allow_mass_delete


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        pytest.param(["run", "--provider=fake"], "--cluster-cidr", id="missing-cidr"),
        pytest.param(["run", *REQUIRED, "--cloud-qps=fast"], "--cloud-qps", id="bad-float"),
        pytest.param(
            ["run", *REQUIRED, "--route-resync-period=10"],
            "--route-resync-period",
            id="bad-duration",
        ),
        pytest.param(["run", *REQUIRED, "--leader-elect=maybe"], "--leader-elect", id="bad-bool"),
        pytest.param(["run", *REQUIRED, "--no-such-flag"], "--no-such-flag", id="unknown-flag"),
        pytest.param(
            ["run", "--cluster-cidr=10.0.0.0/8,10.1.0.0/16", "--provider=fake"],
            "dual stack",
            id="two-v4",
        ),
        pytest.param(
            ["run", *REQUIRED, "--feature-gates=Nope=true"],
            "unrecognized feature gate",
            id="unknown-gate",
        ),
        pytest.param(
            ["run", *REQUIRED, "--mass-delete-threshold=2"],
            "--mass-delete-threshold",
            id="threshold-range",
        ),
        pytest.param(
            ["run", *REQUIRED, "--leader-elect-renew-deadline=20s"],
            "--leader-elect-lease-duration",
            id="lease-timings",
        ),
        pytest.param(
            ["run", *REQUIRED, "--provider-option=novalue"], "--provider-option", id="bad-option"
        ),
        pytest.param(
            ["run", *REQUIRED, "--metrics-bind-address=nowhere"],
            "--metrics-bind-address",
            id="bad-address",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(args, needle, capsys) -> None:
    """Every invalid flag or value exits 2 with one line that names it."""
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert needle in err


def test_unknown_provider_lists_installed(capsys, tmp_path) -> None:
    """A wrong --provider fails at start-up with the installed names."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        '{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"http://127.0.0.1:1"}}],"users":[{"name":"u","user":{}}],"contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],"current-context":"x"}'
    )
    with pytest.raises(SystemExit) as info:
        main(
            [
                "plan",
                "--cluster-cidr=10.244.0.0/16",
                "--provider=nope",
                f"--kubeconfig={kubeconfig}",
            ]
        )
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "no provider 'nope'; installed:" in err
    assert "fake" in err


def test_bad_kubeconfig_exits_2(capsys, tmp_path) -> None:
    """An unreadable kubeconfig is a start-up error naming the flag."""
    with pytest.raises(SystemExit) as info:
        main(["plan", *REQUIRED, f"--kubeconfig={tmp_path / 'missing'}"])
    assert info.value.code == 2
    assert "--kubeconfig" in capsys.readouterr().err


def test_providers_lists_fake(capsys) -> None:
    """`routectl providers` lists installed plugins with their distribution and version."""
    assert main(["providers"]) == 0
    out = capsys.readouterr().out
    assert "fake" in out
    assert "routectl" in out

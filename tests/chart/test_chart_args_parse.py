"""The container args the chart renders are ones ``routectl run`` accepts, and mean what they say.

The parse test imports routectl's own CLI parser (``routectl.cli.build_parser``), so a flag the
chart renders but the binary does not know fails here instead of in a crash-looping pod.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

import helm_python
import pytest

Manifest = dict[str, Any]
REQUIRED = {
    "clusterCIDRs": ["10.244.0.0/16"],
    "provider": {"name": "fake", "options": {"demo": "true"}},
    "image": {"repository": "registry.example.com/routectl"},
}
GATE = "CloudControllerManagerWatchBasedRoutesReconciliation"
WATCH_GATE = f"--feature-gates={GATE}="


def _args(manifests: list[Manifest]) -> list[str]:
    """The args of the Deployment's container."""
    (deployment,) = (m for m in manifests if m["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "command" not in container, "the image's ENTRYPOINT (routectl) must be kept"
    args: list[str] = container["args"]
    return args


def test_container_args_parse_with_routectls_cli(manifests: list[Manifest]) -> None:
    """``routectl run`` with the rendered args parses with routectl's own argparse parser."""
    from routectl.cli.main import build_parser  # noqa: PLC0415 - the CLI lands separately; fail here only

    args = _args(manifests)
    assert args[0] == "run"
    try:
        build_parser().parse_args(["run", *args[1:]])
    except SystemExit as exc:  # argparse exits 2 on an unknown flag or a bad value
        pytest.fail(f"routectl run refused the chart's args (exit {exc.code}): {args[1:]}")


def test_container_args_make_valid_settings(manifests: list[Manifest]) -> None:
    """The parsed args also pass routectl's own cross-flag checks (CIDRs, gates, lease timings)."""
    from routectl.cli.main import build_parser, settings_from_args  # noqa: PLC0415 - see above
    from routectl.errors import ConfigError  # noqa: PLC0415

    parsed = build_parser().parse_args(_args(manifests))
    try:
        settings_from_args(parsed)
    except ConfigError as exc:
        pytest.fail(f"routectl would refuse to start: {exc}")


def test_notes_plan_command_parses(
    render_files: Callable[[dict[str, Any]], dict[str, str]],
) -> None:
    """The ``routectl plan ...`` line NOTES.txt tells the user to run parses with the CLI."""
    from routectl.cli.main import build_parser  # noqa: PLC0415 - see above

    values = {
        "clusterCIDRs": ["10.244.0.0/16", "fd00::/56"],
        "provider": {
            "name": "hcloud",
            "options": {"network": "k8s"},
            "credentials": {
                "existingSecret": "hcloud",
                "mode": "file",
                "file": {"options": {"token-file": "token"}},
            },
        },
        "image": {"repository": "registry.example.com/routectl"},
    }
    (notes,) = (t for p, t in render_files(values).items() if p.endswith("NOTES.txt"))
    (line,) = (line for line in notes.splitlines() if "routectl plan" in line)
    argv = shlex.split(line.split("-- routectl ", 1)[1])
    assert argv[0] == "plan"
    assert "--provider-option=token-file=/etc/routectl/secrets/token" in argv
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"routectl plan refused the NOTES.txt args (exit {exc.code}): {argv}")


def test_every_flag_is_given_once_in_go_style(manifests: list[Manifest]) -> None:
    """Every rendered flag is ``--name=value`` and no flag but --provider-option repeats."""
    flags = _args(manifests)[1:]
    assert all(f.startswith("--") and "=" in f for f in flags), flags
    names = [f.split("=", 1)[0] for f in flags if not f.startswith("--provider-option=")]
    assert len(names) == len(set(names)), names


def test_watch_mode_turns_the_feature_gate_on(render: Callable[..., list[Manifest]]) -> None:
    """``mode: watch`` sets the watch-based routes gate to true and no reconciliation period."""
    args = _args(render({**REQUIRED, "mode": "watch"}))
    assert f"{WATCH_GATE}true" in args
    assert not [a for a in args if a.startswith("--route-reconciliation-period")]


def test_periodic_mode_turns_the_gate_off_and_sets_the_period(
    render: Callable[..., list[Manifest]],
) -> None:
    """``mode: periodic`` sets the gate to false and passes the reconciliation period."""
    args = _args(render({**REQUIRED, "mode": "periodic", "reconciliationPeriod": "45s"}))
    assert f"{WATCH_GATE}false" in args
    assert "--route-reconciliation-period=45s" in args


def test_only_the_values_set_are_rendered_as_flags(render: Callable[..., list[Manifest]]) -> None:
    """With only the required values, the chart passes what its objects depend on (cluster
    CIDRs, provider, serving port, the Lease it grants) and no tunable: routectl's defaults
    stay routectl's, so a default changed in a newer routectl reaches an upgraded release."""
    args = _args(render(REQUIRED))
    assert args == [
        "run",
        "--cluster-cidr=10.244.0.0/16",
        "--provider=fake",
        "--provider-option=demo=true",
        "--leader-elect-resource-name=routectl",
        "--leader-elect-resource-namespace=kube-system",
        "--secure-port=10290",
        "--bind-address=0.0.0.0",
        "--metrics-bind-address=",
    ]


@pytest.mark.parametrize(
    ("values", "flag"),
    [
        pytest.param({"cloud": {"qps": 0}}, "--cloud-qps=0", id="zero-qps"),
        pytest.param({"retryFailedSyncs": False}, "--retry-failed-syncs=false", id="false"),
        pytest.param({"massDelete": {"allow": False}}, "--allow-mass-delete=false", id="false-2"),
        pytest.param({"logging": {"verbosity": 0}}, "--v=0", id="zero-verbosity"),
        pytest.param({"minSyncInterval": "0"}, "--min-sync-interval=0", id="zero-duration"),
        pytest.param(
            {"nodeIPAM": {"nodeCIDRMaskSize": 0}}, "--node-cidr-mask-size=0", id="zero-int"
        ),
        pytest.param({"leaderElection": {"enabled": True}}, "--leader-elect=true", id="true"),
    ],
)
def test_a_value_set_to_zero_or_false_is_still_rendered(
    render: Callable[..., list[Manifest]], values: dict[str, Any], flag: str
) -> None:
    """Set is set: 0 and false are values the operator chose, not "unset"."""
    assert flag in _args(render({**REQUIRED, **values}))


def test_feature_gates_go_into_one_flag_with_the_modes_gate(
    render: Callable[..., list[Manifest]],
) -> None:
    """featureGates and mode make one --feature-gates flag, gates in name order."""
    args = _args(
        render(
            {
                **REQUIRED,
                "mode": "periodic",
                "featureGates": {"CloudControllerManagerWebhook": False},
            }
        )
    )
    assert f"--feature-gates={GATE}=false,CloudControllerManagerWebhook=false" in args
    args = _args(render({**REQUIRED, "featureGates": {GATE: False}}))
    assert f"--feature-gates={GATE}=false" in args


def test_a_gate_contradicting_the_mode_fails_the_render(
    render: Callable[..., list[Manifest]],
) -> None:
    """mode: watch with the watch gate set to false is refused, naming both."""
    with pytest.raises(
        helm_python.HelmRenderError, match=f"featureGates.{GATE} is false but mode is watch"
    ):
        render({**REQUIRED, "mode": "watch", "featureGates": {GATE: False}})


def test_feature_gates_in_extra_args_point_at_the_value(
    render: Callable[..., list[Manifest]],
) -> None:
    """--feature-gates in extraArgs is refused with a message naming featureGates."""
    with pytest.raises(helm_python.HelmRenderError, match="set featureGates"):
        render({**REQUIRED, "extraArgs": ["--feature-gates=Foo=true"]})


def test_values_map_onto_their_flags(render: Callable[..., list[Manifest]]) -> None:
    """Each value reaches its documented flag with the value unchanged."""
    values = {
        "clusterName": "prod",
        "clusterCIDRs": ["10.244.0.0/16", "fd00:10:244::/56"],
        "provider": {"name": "hcloud", "options": {"network": "k8s", "zone": "eu-central"}},
        "cloud": {
            "qps": 0.5,
            "burst": 7,
            "maxConcurrentRouteOperations": 3,
            "callTimeout": "1m",
            "maxAttempts": 6,
        },
        "resyncPeriod": "2h",
        "syncBatchWindow": "500ms",
        "minSyncInterval": "10s",
        "routeListingMaxAge": "0",
        "retryFailedSyncs": False,
        "batchWrites": False,
        "batchWriteInterval": "30s",
        "massDelete": {"threshold": 0.25, "allow": True},
        "logging": {"format": "json", "verbosity": 3},
        "gracefulShutdownTimeout": "20s",
        "metrics": {"port": 9100, "secure": False, "bindAddress": "::"},
        "kubeApi": {"qps": 50, "burst": 100},
        "extraArgs": ["--configure-cloud-routes=false"],
        "image": {"repository": "registry.example.com/routectl"},
    }
    args = _args(render(values))
    expected = [
        "--cluster-name=prod",
        "--cluster-cidr=10.244.0.0/16,fd00:10:244::/56",
        "--provider=hcloud",
        "--provider-option=network=k8s",
        "--provider-option=zone=eu-central",
        "--cloud-qps=0.5",
        "--cloud-burst=7",
        "--max-concurrent-route-operations=3",
        "--cloud-call-timeout=1m",
        "--cloud-max-attempts=6",
        "--route-resync-period=2h",
        "--route-sync-batch-window=500ms",
        "--min-sync-interval=10s",
        "--route-listing-max-age=0",
        "--retry-failed-syncs=false",
        "--batch-writes=false",
        "--batch-write-interval=30s",
        "--mass-delete-threshold=0.25",
        "--allow-mass-delete=true",
        "--log-format=json",
        "--v=3",
        "--graceful-shutdown-timeout=20s",
        "--metrics-bind-address=[::]:9100",
        "--secure-port=0",
        "--kube-api-qps=50",
        "--kube-api-burst=100",
        "--configure-cloud-routes=false",
    ]
    assert [a for a in expected if a not in args] == []


def test_leader_election_off_passes_only_the_switch(render: Callable[..., list[Manifest]]) -> None:
    """With leader election off only ``--leader-elect=false`` is passed, no lease settings."""
    args = _args(render({**REQUIRED, "replicaCount": 1, "leaderElection": {"enabled": False}}))
    assert "--leader-elect=false" in args
    assert [a for a in args if a.startswith("--leader-elect-")] == []


def test_large_integers_render_without_exponents(render: Callable[..., list[Manifest]]) -> None:
    """Integer values render as plain digits, not the ``1e+06`` Go prints for big floats."""
    values = {**REQUIRED, "cloud": {"burst": 1_000_000, "maxConcurrentRouteOperations": 2_000_000}}
    args = _args(render(values))
    assert "--cloud-burst=1000000" in args
    assert "--max-concurrent-route-operations=2000000" in args

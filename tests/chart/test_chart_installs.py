"""Three realistic installs render with the real Helm engine into valid objects that work
together: AWS with IRSA and a cloud config from a ConfigMap, Hetzner Cloud with its token from
a Secret on the host's network, OpenStack with cloud.conf from a Secret, a serving certificate
and a ServiceMonitor that verifies it.

Each is a ``ci/*-values.yaml`` scenario, so the scenario tests (strict validation against the
Kubernetes schemas, ``helm lint --strict``, RBAC) run on them too; here each install's own
promises are checked, and its container args are parsed by routectl's own command line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import helm_python
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from routectl.cli.flags import parse_run_flags

Manifest = dict[str, Any]
Render = Callable[[dict[str, Any]], list[Manifest]]
CHART_DIR = Path(__file__).resolve().parents[2] / "charts" / "routectl"
INSTALLS = ("aws-irsa", "hcloud-hostnetwork", "openstack-secure")


def install(render: Render, name: str) -> dict[str, list[Manifest]]:
    """The install's objects by kind, each validated strictly against Kubernetes' schemas."""
    values = yaml.safe_load((CHART_DIR / "ci" / f"{name}-values.yaml").read_text())
    by_kind: dict[str, list[Manifest]] = {}
    for manifest in render(values):
        if manifest["apiVersion"] != "monitoring.coreos.com/v1":
            kubernetes_validate.validate(
                manifest, kubernetes_validate.latest_version(), strict=True
            )
        by_kind.setdefault(manifest["kind"], []).append(manifest)
    return by_kind


def pod_of(objects: dict[str, list[Manifest]]) -> dict[str, Any]:
    """The Deployment's pod spec."""
    (deployment,) = objects["Deployment"]
    spec: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return spec


def args_of(pod: dict[str, Any]) -> list[str]:
    """``routectl run``'s arguments."""
    (container,) = pod["containers"]
    assert container["args"][0] == "run"
    args: list[str] = container["args"][1:]
    return args


def mounted_file(pod: dict[str, Any], path: str) -> tuple[dict[str, Any], str]:
    """The volume a file path lies in, and the path inside the volume."""
    (container,) = pod["containers"]
    (mount,) = [m for m in container["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert mount.get("readOnly") is True
    return volume, path.removeprefix(mount["mountPath"] + "/")


@pytest.mark.parametrize("name", INSTALLS)
def test_the_install_is_a_scenario_and_its_args_start_routectl(render: Render, name: str) -> None:
    """Each install is one of the chart's scenarios, and routectl's parser takes its args."""
    assert (CHART_DIR / "ci" / f"{name}-values.yaml").is_file()
    settings = parse_run_flags(args_of(pod_of(install(render, name))))
    assert settings.provider == name.split("-", maxsplit=1)[0]


def test_aws_with_irsa_and_a_cloud_config_from_a_config_map(render: Render) -> None:
    """No credentials Secret: the ServiceAccount carries the IAM role; the cloud config comes
    from a ConfigMap mounted read-only where --cloud-config points."""
    objects = install(render, "aws-irsa")
    (account,) = objects["ServiceAccount"]
    assert account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith("arn:aws:")
    pod = pod_of(objects)
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    (container,) = pod["containers"]
    assert not [
        e for e in container["env"] if "valueFrom" in e and "secretKeyRef" in e["valueFrom"]
    ]
    (flag,) = [a for a in args_of(pod) if a.startswith("--cloud-config=")]
    volume, key = mounted_file(pod, flag.split("=", 1)[1])
    assert volume["configMap"]["name"] == "aws-cloud-config"
    assert key == "cloud.conf"
    assert container["image"].endswith(".amazonaws.com/routectl:0.1.0-aws")
    assert "Secret" not in objects


def test_hcloud_with_its_token_from_a_secret_on_the_hosts_network(render: Render) -> None:
    """HCLOUD_TOKEN comes from the CCM's Secret; host networking with cluster DNS
    (ClusterFirstWithHostNet); the watch gate is rendered from featureGates."""
    pod = pod_of(install(render, "hcloud-hostnetwork"))
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["HCLOUD_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "hcloud", "key": "token"}
    assert (pod["hostNetwork"], pod["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")
    args = args_of(pod)
    assert "--feature-gates=CloudControllerManagerWatchBasedRoutesReconciliation=true" in args
    assert "--provider-option=network=k8s-network" in args
    assert "--cloud-qps=0.2" in args
    assert not [a for a in args if a.startswith("--route-resync-period")]  # routectl's default


def test_openstack_with_cloud_conf_from_a_secret_and_a_verified_service_monitor(
    render: Render,
) -> None:
    """cloud.conf is mounted from a Secret where --cloud-config points; the application
    credential comes from the same Secret; routectl serves /metrics with cert-manager's
    certificate, and the ServiceMonitor verifies it (CA and server name, no skipping) and
    authenticates with the scraper's token through `authorization`."""
    objects = install(render, "openstack-secure")
    pod = pod_of(objects)
    args = args_of(pod)
    (flag,) = [a for a in args if a.startswith("--cloud-config=")]
    volume, key = mounted_file(pod, flag.split("=", 1)[1])
    assert volume["secret"]["secretName"] == "openstack-cloud-config"
    assert key == "cloud.conf"
    (container,) = pod["containers"]
    env = {
        e["name"]: e["valueFrom"]["secretKeyRef"]["name"]
        for e in container.get("env", [])
        if "valueFrom" in e and "secretKeyRef" in e["valueFrom"]
    }
    assert env == {
        "OS_APPLICATION_CREDENTIAL_ID": "openstack-cloud-config",
        "OS_APPLICATION_CREDENTIAL_SECRET": "openstack-cloud-config",
    }
    # The cloud.conf the values' comment shows: tests/chart/test_chart_cloud_configs.py.
    assert "--provider-option=node-cidrs=10.0.0.0/24" in args

    cert, key = mounted_file(pod, "/etc/routectl/tls/tls.crt")
    assert cert["secret"]["secretName"] == "routectl-metrics-tls"
    assert "--tls-cert-file=/etc/routectl/tls/tls.crt" in args
    assert "--tls-private-key-file=/etc/routectl/tls/tls.key" in args
    assert "--secure-port=10290" in args

    (monitor,) = objects["ServiceMonitor"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert "bearerTokenFile" not in endpoint
    assert "bearerTokenSecret" not in endpoint
    assert endpoint["tlsConfig"] == {
        "ca": {"secret": {"name": "routectl-metrics-tls", "key": "ca.crt"}},
        "serverName": "routectl-metrics.kube-system.svc",
    }
    (service,) = objects["Service"]
    assert endpoint["tlsConfig"]["serverName"].startswith(service["metadata"]["name"] + ".")
    credentials = endpoint["authorization"]["credentials"]
    assert endpoint["authorization"]["type"] == "Bearer"
    (token,) = [s for s in objects["Secret"] if s["metadata"]["name"] == credentials["name"]]
    assert token["type"] == "kubernetes.io/service-account-token"
    assert "data" not in token  # Kubernetes fills the token in
    scraper = token["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    assert scraper in {a["metadata"]["name"] for a in objects["ServiceAccount"]}
    (binding,) = [b for b in objects["ClusterRoleBinding"] if b["subjects"][0]["name"] == scraper]
    (reader,) = [
        r for r in objects["ClusterRole"] if r["metadata"]["name"] == binding["roleRef"]["name"]
    ]
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_a_self_signed_certificate_is_the_only_case_that_skips_verification(
    render: Render,
) -> None:
    """Without a serving certificate routectl's own self-signed one cannot be verified:
    insecureSkipVerify then, and only then; an operator's token Secret replaces the chart's."""
    values = yaml.safe_load((CHART_DIR / "ci" / "openstack-secure-values.yaml").read_text())
    values["metrics"]["tls"] = {}
    values["metrics"]["serviceMonitor"]["authorization"] = {"existingSecret": "prom-token"}
    objects: dict[str, list[Manifest]] = {}
    for manifest in render(values):
        objects.setdefault(manifest["kind"], []).append(manifest)
    (monitor,) = objects["ServiceMonitor"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}
    assert endpoint["authorization"]["credentials"] == {"name": "prom-token", "key": "token"}
    assert "Secret" not in objects  # the operator's token: the chart makes none
    assert not [a for a in args_of(pod_of(objects)) if a.startswith("--tls-")]


def test_a_serving_certificate_without_https_is_refused(render: Render) -> None:
    """A certificate Secret with plain HTTP would be silently unused: rendering says so."""
    values = yaml.safe_load((CHART_DIR / "ci" / "openstack-secure-values.yaml").read_text())
    values["metrics"]["secure"] = False
    values["metrics"]["serviceMonitor"]["enabled"] = False
    with pytest.raises(helm_python.HelmRenderError, match=r"metrics\.secure is false"):
        render(values)

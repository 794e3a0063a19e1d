"""The Deployment: hardened, schedulable before nodes are initialised, HA by default."""

from __future__ import annotations

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


def _pod(deployment: Manifest) -> dict[str, Any]:
    """The Deployment's pod spec."""
    spec: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return spec


def _only(manifests: list[Manifest], kind: str) -> Manifest:
    """The one object of ``kind``."""
    (found,) = (m for m in manifests if m["kind"] == kind)
    return found


def test_pod_security_context_is_restricted(deployment: Manifest) -> None:
    """The pod runs as a non-root numeric UID with the RuntimeDefault seccomp profile."""
    context = _pod(deployment)["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["runAsUser"] > 0
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}


def test_container_security_context_is_locked_down(container: dict[str, Any]) -> None:
    """The container: non-root, read-only root, no escalation, all capabilities dropped."""
    context = container["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context.get("privileged", False) is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}


def test_tmp_is_an_empty_dir_for_the_read_only_root(
    deployment: Manifest, container: dict[str, Any]
) -> None:
    """The temp directory is a writable emptyDir, since the root filesystem is read-only."""
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in _pod(deployment)["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]  # noqa: S108 - a mount path, not a temp file


def test_tolerates_control_plane_and_uninitialized_nodes(deployment: Manifest) -> None:
    """The pods schedule on control-plane nodes and on nodes the CCM has not initialised yet."""
    tolerated = {(t["key"], t.get("effect")) for t in _pod(deployment)["tolerations"]}
    assert ("node-role.kubernetes.io/control-plane", "NoSchedule") in tolerated
    assert ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule") in tolerated
    assert ("node.kubernetes.io/network-unavailable", "NoSchedule") in tolerated


def test_is_system_cluster_critical(deployment: Manifest) -> None:
    """The pods have the system-cluster-critical priority class."""
    assert _pod(deployment)["priorityClassName"] == "system-cluster-critical"


def test_probes_hit_healthz_and_readyz_on_the_metrics_port(container: dict[str, Any]) -> None:
    """Liveness checks /healthz and readiness /readyz, both on the port /metrics is served on,
    over HTTPS when it is served securely (the probes' paths need no token)."""
    (port,) = container["ports"]
    assert port["name"] == "metrics"
    secure = f"--secure-port={port['containerPort']}" in container["args"]
    if not secure:
        assert f"--metrics-bind-address=0.0.0.0:{port['containerPort']}" in container["args"]
    scheme = {"scheme": "HTTPS"} if secure else {}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"} | scheme
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"} | scheme


def test_has_resource_requests_and_a_memory_limit(container: dict[str, Any]) -> None:
    """The container requests CPU and memory and has a memory limit."""
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    assert "memory" in container["resources"]["limits"]


def test_pod_knows_its_name_and_namespace(container: dict[str, Any]) -> None:
    """POD_NAME and POD_NAMESPACE come from the downward API."""
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}) for e in container["env"]}
    assert env["POD_NAME"]["fieldPath"] == "metadata.name"
    assert env["POD_NAMESPACE"]["fieldPath"] == "metadata.namespace"


def test_defaults_are_two_replicas_with_leader_election_anti_affinity_and_pdb(
    render: Callable[..., list[Manifest]],
) -> None:
    """By default: 2 replicas, leader election on, preferred anti-affinity and a PDB."""
    manifests = render(REQUIRED)
    deployment = _only(manifests, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    (container,) = _pod(deployment)["containers"]
    assert "--leader-elect-resource-name=routectl" in container["args"]  # on: the default
    assert not [a for a in container["args"] if a.startswith("--leader-elect=")]
    anti = _pod(deployment)["affinity"]["podAntiAffinity"]
    (term,) = anti["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert (
        term["podAffinityTerm"]["labelSelector"]["matchLabels"]
        == deployment["spec"]["selector"]["matchLabels"]
    )
    pdb = _only(manifests, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"] == deployment["spec"]["selector"]


def test_hard_anti_affinity_requires_separate_nodes(render: Callable[..., list[Manifest]]) -> None:
    """``podAntiAffinity: hard`` requires replicas on different nodes."""
    deployment = _only(render({**REQUIRED, "podAntiAffinity": "hard"}), "Deployment")
    anti = _pod(deployment)["affinity"]["podAntiAffinity"]
    (term,) = anti["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"


def test_single_replica_has_no_pdb(render: Callable[..., list[Manifest]]) -> None:
    """With one replica no PodDisruptionBudget is made (it could only block drains)."""
    manifests = render({**REQUIRED, "replicaCount": 1})
    assert "PodDisruptionBudget" not in {m["kind"] for m in manifests}


def test_env_credentials_come_from_the_existing_secret(
    render: Callable[..., list[Manifest]],
) -> None:
    """mode=env maps each Secret key to its environment variable by secretKeyRef."""
    values = {
        **REQUIRED,
        "provider": {
            "name": "aws",
            "credentials": {
                "existingSecret": "aws-creds",
                "mode": "env",
                "env": {"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"},
            },
        },
    }
    (container,) = _pod(_only(render(values), "Deployment"))["containers"]
    env = {e["name"]: e.get("valueFrom", {}) for e in container["env"]}
    assert env["AWS_ACCESS_KEY_ID"] == {"secretKeyRef": {"name": "aws-creds", "key": "id"}}
    assert env["AWS_SECRET_ACCESS_KEY"] == {"secretKeyRef": {"name": "aws-creds", "key": "secret"}}
    assert not [a for a in container["args"] if "secret" in a.lower()]


def test_file_credentials_are_mounted_read_only_and_passed_by_path(
    render: Callable[..., list[Manifest]],
) -> None:
    """mode=file mounts the Secret read-only and passes the file's path, never its content."""
    values = {
        **REQUIRED,
        "provider": {
            "name": "hcloud",
            "credentials": {
                "existingSecret": "hcloud",
                "mode": "file",
                "file": {
                    "options": {"token-file": "token"},
                    "env": {"HCLOUD_TOKEN_FILE": "token"},
                },
            },
        },
    }
    pod = _pod(_only(render(values), "Deployment"))
    (container,) = pod["containers"]
    assert "--provider-option=token-file=/etc/routectl/secrets/token" in container["args"]
    (mount,) = (m for m in container["volumeMounts"] if m["mountPath"] == "/etc/routectl/secrets")
    assert mount["readOnly"] is True
    (volume,) = (v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["secretName"] == "hcloud"
    assert volume["secret"]["defaultMode"] == 0o440
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"]
    mounted_file = "/etc/routectl/secrets/token"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["HCLOUD_TOKEN_FILE"] == mounted_file


def test_no_credentials_means_no_secret_references(render: Callable[..., list[Manifest]]) -> None:
    """Without existingSecret (IRSA, instance profiles) nothing refers to a Secret."""
    pod = _pod(_only(render(REQUIRED), "Deployment"))
    (container,) = pod["containers"]
    assert all("secretKeyRef" not in e.get("valueFrom", {}) for e in container["env"])
    assert all("secret" not in v for v in pod["volumes"])


def test_service_account_annotations_for_irsa(render: Callable[..., list[Manifest]]) -> None:
    """ServiceAccount annotations (AWS IRSA role) reach the ServiceAccount the pod uses."""
    role = "arn:aws:iam::123456789012:role/routectl"
    manifests = render(
        {**REQUIRED, "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": role}}}
    )
    account = _only(manifests, "ServiceAccount")
    assert account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == role
    deployment = _only(manifests, "Deployment")
    assert _pod(deployment)["serviceAccountName"] == account["metadata"]["name"]


def test_image_defaults_to_the_chart_app_version(
    render: Callable[..., list[Manifest]], chart: helm_python.Chart
) -> None:
    """With no image.tag the image is tagged with the chart's appVersion."""
    (container,) = _pod(_only(render(REQUIRED), "Deployment"))["containers"]
    assert container["image"] == f"registry.example.com/routectl:{chart.metadata['appVersion']}"


def test_the_image_repository_is_required_and_the_error_says_how_to_build_one(
    render: Callable[..., list[Manifest]],
) -> None:
    """Nothing publishes routectl's image: without image.repository rendering fails with the
    one command that builds and pushes it."""
    values = {k: v for k, v in REQUIRED.items() if k != "image"}
    with pytest.raises(helm_python.HelmRenderError) as failed:
        render(values)
    message = str(failed.value)
    assert "image.repository is required" in message
    assert "docker buildx build --build-arg PROVIDERS=" in message
    assert "--push" in message


@pytest.mark.parametrize(
    ("host_network", "policy"),
    [(True, "ClusterFirstWithHostNet"), (False, "ClusterFirst")],
)
def test_dns_policy_fits_the_networking_mode(
    render: Callable[..., list[Manifest]], host_network: bool, policy: str
) -> None:
    """Cluster DNS either way: ClusterFirstWithHostNet on the host's network, ClusterFirst on
    the pod network; an explicit dnsPolicy wins."""
    pod = _pod(_only(render({**REQUIRED, "hostNetwork": host_network}), "Deployment"))
    assert (pod["hostNetwork"], pod["dnsPolicy"]) == (host_network, policy)
    pod = _pod(_only(render({**REQUIRED, "dnsPolicy": "Default"}), "Deployment"))
    assert pod["dnsPolicy"] == "Default"


def test_tolerates_nodes_that_are_not_ready_or_not_initialised(
    render: Callable[..., list[Manifest]],
) -> None:
    """A controller that makes Nodes ready runs on Nodes that are not (either taint effect),
    on Nodes the CCM has not initialised and on Nodes without routes; extra tolerations add."""
    extra = {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}
    pod = _pod(_only(render({**REQUIRED, "tolerations": [extra]}), "Deployment"))
    by_key = {t["key"]: t for t in pod["tolerations"]}
    assert by_key["node.kubernetes.io/not-ready"] == {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
    }
    assert by_key["node.cloudprovider.kubernetes.io/uninitialized"]["operator"] == "Exists"
    assert by_key["node.kubernetes.io/network-unavailable"]["operator"] == "Exists"
    assert by_key["dedicated"] == extra


def test_extra_volumes_mounts_and_environment_reach_the_pod(
    render: Callable[..., list[Manifest]],
) -> None:
    """extraVolumes/extraVolumeMounts add to the chart's own; extraEnv takes secretKeyRef and
    extraEnvFrom takes whole Secrets and ConfigMaps."""
    secret_env = {"name": "OS_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "os", "key": "pw"}}}
    values = {
        **REQUIRED,
        "extraVolumes": [{"name": "cloud-config", "configMap": {"name": "cloud-config"}}],
        "extraVolumeMounts": [
            {"name": "cloud-config", "mountPath": "/etc/kubernetes/cloud-config", "readOnly": True}
        ],
        "extraEnv": [secret_env],
        "extraEnvFrom": [{"secretRef": {"name": "hcloud"}}, {"configMapRef": {"name": "env"}}],
    }
    pod = _pod(_only(render(values), "Deployment"))
    (container,) = pod["containers"]
    assert {"name": "cloud-config", "configMap": {"name": "cloud-config"}} in pod["volumes"]
    assert "tmp" in {v["name"] for v in pod["volumes"]}
    assert {
        "name": "cloud-config",
        "mountPath": "/etc/kubernetes/cloud-config",
        "readOnly": True,
    } in container["volumeMounts"]
    assert secret_env in container["env"]
    assert container["envFrom"] == [
        {"secretRef": {"name": "hcloud"}},
        {"configMapRef": {"name": "env"}},
    ]


def test_a_cloud_config_is_mounted_from_a_secret(render: Callable[..., list[Manifest]]) -> None:
    """extraVolumes/extraVolumeMounts mount the CCM's cloud config; extraArgs names it."""
    manifests = render(
        {
            **REQUIRED,
            "extraVolumes": [{"name": "cloud-config", "secret": {"secretName": "aws-cloud"}}],
            "extraVolumeMounts": [
                {"name": "cloud-config", "mountPath": "/etc/kubernetes/cloud", "readOnly": True}
            ],
            "extraArgs": ["--cloud-config=/etc/kubernetes/cloud/cloud.conf"],
        }
    )
    pod = _pod(_only(manifests, "Deployment"))
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["cloud-config"] == {"name": "cloud-config", "secret": {"secretName": "aws-cloud"}}  # fmt: skip
    (container,) = pod["containers"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["cloud-config"]["mountPath"] == "/etc/kubernetes/cloud"
    assert "tmp" in mounts  # the chart's own mounts stay
    assert "--cloud-config=/etc/kubernetes/cloud/cloud.conf" in container["args"]

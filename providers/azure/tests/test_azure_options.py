"""The ``azure`` provider's options: the Azure CCM's azure.json as it is, and clear errors.

A CCM's azure.json read through ``--cloud-config`` configures the provider unchanged (keys
that do not concern routes are accepted); each problem is one ConfigError line naming the
option; credentials are chosen in the CCM's order, and never echoed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from routectl_azure import AzureProvider
from routectl_azure.options import parse_options
from routectl_azure.testing import CLIENT_ID, SECRET, SUBSCRIPTION, TENANT

from routectl.cli.dropin import with_cloud_config
from routectl.cli.flags import parse_run_flags
from routectl.errors import ConfigError

BASE = {"subscriptionId": SUBSCRIPTION, "resourceGroup": "mc_rg", "routeTableName": "rt"}
CREDENTIALS = {"aadClientId": CLIENT_ID, "aadClientSecret": SECRET, "tenantId": TENANT}

# The shape of an AKS-style azure.json (cloud-provider-azure's docs/cloud-provider-config):
# route keys, credential keys and many that do not concern routes.
CCM_FILE = {
    "cloud": "AzurePublicCloud",
    "tenantId": TENANT,
    "subscriptionId": SUBSCRIPTION,
    "aadClientId": CLIENT_ID,
    "aadClientSecret": SECRET,
    "resourceGroup": "MC_rg_cluster_westeurope",
    "location": "westeurope",
    "vmType": "vmss",
    "subnetName": "aks-subnet",
    "securityGroupName": "aks-agentpool-nsg",
    "vnetName": "aks-vnet",
    "vnetResourceGroup": "",
    "routeTableName": "aks-agentpool-routetable",
    "primaryAvailabilitySetName": "",
    "primaryScaleSetName": "aks-nodepool1-vmss",
    "cloudProviderBackoff": True,
    "cloudProviderBackoffRetries": 6,
    "cloudProviderBackoffDuration": 5,
    "cloudProviderRateLimit": True,
    "cloudProviderRateLimitQPS": 10,
    "cloudProviderRateLimitBucket": 100,
    "useManagedIdentityExtension": False,
    "userAssignedIdentityID": "",
    "useInstanceMetadata": True,
    "loadBalancerSku": "Standard",
    "disableOutboundSNAT": False,
    "excludeMasterFromStandardLB": True,
    "providerVaultName": "",
    "maximumLoadBalancerRuleCount": 250,
    "providerKeyName": "k8s",
    "providerKeyVersion": "",
}


def test_the_ccms_own_azure_json_configures_the_provider(tmp_path: Path) -> None:
    """--cloud-config=azure.json: the route and credential keys are read, the rest ignored."""
    ccm = {k: v for k, v in CCM_FILE.items() if not k.startswith("provider")}
    path = tmp_path / "azure.json"
    path.write_text(json.dumps(ccm, indent=2))
    settings = with_cloud_config(
        parse_run_flags(
            ["--cluster-cidr=10.244.0.0/16", "--provider=azure", f"--cloud-config={path}"]
        )
    )
    options = parse_options(settings.provider_options, environ={})
    assert options.route_table == "aks-agentpool-routetable"
    assert options.route_table_group == options.node_group == "MC_rg_cluster_westeurope"
    assert options.location == "westeurope"
    assert options.credentials.kind == "client-secret"
    assert options.batch_writes


def test_keys_the_ccm_does_not_know_are_refused() -> None:
    """A key neither the CCM nor routectl knows (the legacy provider* keys): one line."""
    with pytest.raises(ConfigError, match=r"unknown option\(s\) providerKeyName") as caught:
        parse_options({**BASE, **CREDENTIALS, "providerKeyName": "k8s"}, environ={})
    assert str(caught.value).startswith("--provider-option: provider azure: ")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param(
            {**BASE, "routeTableName": ""}, "missing required option routeTableName", id="no-table"
        ),
        pytest.param(
            {k: v for k, v in BASE.items() if k != "resourceGroup"},
            "missing required option resourceGroup",
            id="no-group",
        ),
        pytest.param(
            {**BASE, "subscriptionId": "prod"},
            "subscriptionId='prod' must be a subscription id",
            id="bad-subscription",
        ),
        pytest.param({**BASE, "routeTableName": "a/b"}, "routeTableName='a/b'", id="bad-table"),
        pytest.param(
            {**BASE, "cloud": "AzureGermanCloud"},
            "cloud='AzureGermanCloud' is not one of",
            id="bad-cloud",
        ),
        pytest.param(
            {**BASE, "cloud": "AzureStackCloud"},
            "AzureStackCloud needs resourceManagerEndpoint",
            id="stack",
        ),
        pytest.param(
            {**BASE, "resourceManagerEndpoint": "management"},
            "resourceManagerEndpoint must be",
            id="bad-endpoint",
        ),
        pytest.param(
            {**BASE, "batch-writes": "maybe"},
            "batch-writes='maybe' must be true or false",
            id="bad-bool",
        ),
        pytest.param({**BASE, "cache-seconds": "-1"}, "cache-seconds", id="bad-cache"),
        pytest.param({**BASE, "zone": "1"}, "unknown option(s) zone", id="unknown"),
        pytest.param({**BASE, "route-limit": "5000"}, "route-limit='5000' must be", id="limit"),
        pytest.param(
            {**BASE, "networkResourceSubscriptionID": "11111111-2222-3333-4444-555555555555"},
            "networkResourceSubscriptionID (network resources in another subscription",
            id="cross-subscription",
        ),
    ],
)
def test_bad_options_fail_clearly(options: dict[str, str], message: str) -> None:
    """Each problem is one ConfigError line naming the option."""
    with pytest.raises(ConfigError) as caught:
        parse_options({**CREDENTIALS, **options}, environ={})
    text = str(caught.value)
    assert text.startswith("--provider-option: provider azure: ")
    assert message in text
    assert "\n" not in text
    assert SECRET not in text


def test_missing_credentials_say_what_to_set() -> None:
    """No credential at all: the line lists the CCM's ways to give one."""
    with pytest.raises(ConfigError, match="no credentials: set useManagedIdentityExtension"):
        AzureProvider(cluster_name="c", options=BASE)


@pytest.mark.parametrize(
    ("options", "environ", "kind"),
    [
        pytest.param({**CREDENTIALS}, {}, "client-secret", id="secret"),
        pytest.param(
            {"tenantId": TENANT, "aadClientId": CLIENT_ID},
            {"AZURE_CLIENT_SECRET": "s"},
            "client-secret",
            id="secret-env",
        ),
        pytest.param(
            {**CREDENTIALS, "useManagedIdentityExtension": "true"},
            {},
            "managed-identity",
            id="managed-wins",
        ),
        pytest.param(
            {**CREDENTIALS, "useManagedIdentityExtension": "true"},
            {"AZURE_FEDERATED_TOKEN_FILE": "/var/run/secrets/azure/tokens/azure-identity-token"},
            "workload-identity",
            id="workload-first",
        ),
        pytest.param(
            {"tenantId": TENANT, "aadClientId": CLIENT_ID, "aadClientCertPath": "/etc/cert.pfx"},
            {},
            "client-certificate",
            id="certificate",
        ),
    ],
)
def test_credentials_are_chosen_in_the_ccms_order(
    options: dict[str, str], environ: dict[str, str], kind: str
) -> None:
    """Workload identity, managed identity, client secret, certificate (pkg/azclient/auth.go)."""
    assert parse_options({**BASE, **options}, environ=environ).credentials.kind == kind


def test_a_user_assigned_identity_is_used() -> None:
    """userAssignedIdentityID picks the managed identity by its client id."""
    options = {**BASE, "useManagedIdentityExtension": "true", "userAssignedIdentityID": "abc"}
    credentials = parse_options(options, environ={}).credentials
    assert (credentials.kind, credentials.client_id) == ("managed-identity", "abc")


def test_workload_identity_without_its_pieces_fails_clearly() -> None:
    """useFederatedWorkloadIdentityExtension without a token file: one line, named."""
    options = {**BASE, "aadClientId": CLIENT_ID, "useFederatedWorkloadIdentityExtension": "true"}
    with pytest.raises(ConfigError, match="workload identity needs"):
        parse_options(options, environ={"AZURE_TENANT_ID": TENANT})

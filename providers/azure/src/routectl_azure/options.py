"""The ``azure`` provider's options, validated up front: the Azure CCM's own ``azure.json``.

The options are the keys of the Azure cloud-controller-manager's config file (``azure.json``,
read by ``--cloud-config``, whose members routectl passes on as provider options), with the
same names (``routeTableName``, ``resourceGroup``, ``aadClientId``...), plus a few of
routectl's own in kebab-case (``batch-writes``, ``cache-seconds``, ``find-blackholes``,
``polling-interval``, ``ca-bundle``). The keys of ``azure.json`` that do not concern routes
(load balancers, caches, the CCM's own rate limits) are accepted and ignored, so the CCM's
file works unchanged; any other key is refused, listing the known ones.

Credentials are chosen as the CCM chooses them (``pkg/azclient/auth.go``): workload
identity (``AZURE_FEDERATED_TOKEN_FILE`` or ``useFederatedWorkloadIdentityExtension``),
then managed identity (``useManagedIdentityExtension``), then a client secret
(``AZURE_CLIENT_SECRET`` or ``aadClientSecret``), then a client certificate
(``aadClientCertPath``); ``AZURE_CLIENT_ID`` overrides ``aadClientId`` as in the CCM.
Secrets are never echoed. Every problem is one :class:`~routectl.errors.ConfigError` line
that names the option. Pure: the environment is passed in; no file is read here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from routectl.errors import ConfigError
from routectl.plugin_options import is_http_url, option_error, refuse_unknown, seconds_option

PROVIDER = "azure"
ROUTE_LIMIT = 400
"""Routes per route table: Azure's documented limit (``route-limit`` changes it, up to
:data:`MAX_ROUTE_LIMIT`, where a subscription has the higher limit of 2026)."""
MAX_ROUTE_LIMIT = 1000

ROUTE_KEYS = (
    "subscriptionId",
    "resourceGroup",
    "routeTableName",
    "routeTableResourceGroup",
    "location",
)
AUTH_KEYS = (
    "cloud",
    "resourceManagerEndpoint",
    "tenantId",
    "aadClientId",
    "aadClientSecret",
    "aadClientCertPath",
    "aadClientCertPassword",
    "useManagedIdentityExtension",
    "userAssignedIdentityID",
    "aadFederatedTokenFile",
    "useFederatedWorkloadIdentityExtension",
)
CROSS_KEYS = ("networkResourceSubscriptionID", "networkResourceTenantID")
"""Network resources in another subscription or tenant: read, and refused unless the same."""
OWN_KEYS = (
    "batch-writes",
    "ca-bundle",
    "cache-seconds",
    "find-blackholes",
    "polling-interval",
    "route-limit",
)
IGNORED_KEYS = (
    # pkg/provider/config (azure.go, azure_cache.go) and pkg/azclient (arm_conf.go,
    # auth_conf.go, ratelimit): keys of the CCM's file that do not concern routes.
    "aadMSIDataPlaneIdentityPath",
    "auxiliaryTokenProvider",
    "availabilitySetsCacheTTLInSeconds",
    "cloudConfigType",
    "cloudProviderBackoff",
    "cloudProviderBackoffDuration",
    "cloudProviderBackoffExponent",
    "cloudProviderBackoffJitter",
    "cloudProviderBackoffRetries",
    "cloudProviderRateLimit",
    "cloudProviderRateLimitBucket",
    "cloudProviderRateLimitBucketWrite",
    "cloudProviderRateLimitQPS",
    "cloudProviderRateLimitQPSWrite",
    "clusterServiceLoadBalancerHealthProbeMode",
    "clusterServiceSharedLoadBalancerHealthProbePath",
    "clusterServiceSharedLoadBalancerHealthProbePort",
    "disableAPICallCache",
    "disableAvailabilitySetNodes",
    "disableAzureStackCloud",
    "disableOutboundSNAT",
    "enableIPTagMutationForExistingPublicIP",
    "enableMigrateToIPBasedBackendPoolAPI",
    "enableMinimumRetryAfter",
    "enableVmssFlexNodes",
    "excludeMasterFromStandardLB",
    "extendedLocationName",
    "extendedLocationType",
    "listVmssVirtualMachinesWithoutInstanceView",
    "loadBalancerBackendPoolConfigurationType",
    "loadBalancerBackendPoolUpdateIntervalInSeconds",
    "loadBalancerCacheTTLInSeconds",
    "loadBalancerName",
    "loadBalancerResourceGroup",
    "loadBalancerSku",
    "maximumLoadBalancerRuleCount",
    "multipleStandardLoadBalancerConfigurations",
    "nodeInstanceNotFoundGracePeriodInSeconds",
    "nonVmssUniformNodesCacheTTLInSeconds",
    "nsgCacheTTLInSeconds",
    "plsCacheTTLInSeconds",
    "preConfiguredBackendPoolLoadBalancerTypes",
    "primaryAvailabilitySetName",
    "primaryScaleSetName",
    "privateLinkServiceResourceGroup",
    "publicIPCacheTTLInSeconds",
    "putVMSSVMBatchSize",
    "routeTableCacheTTLInSeconds",
    "routeUpdateIntervalInSeconds",
    "routeUpdateWaitingInSeconds",
    "securityGroupName",
    "securityGroupResourceGroup",
    "serviceGatewayEnabled",
    "subnetName",
    "systemTags",
    "tags",
    "tagsMap",
    "useInstanceMetadata",
    "userAgent",
    "vmCacheTTLInSeconds",
    "vmType",
    "vmssCacheTTLInSeconds",
    "vmssFlexCacheTTLInSeconds",
    "vmssFlexVMCacheTTLInSeconds",
    "vmssVirtualMachinesCacheTTLInSeconds",
    "vnetName",
    "vnetResourceGroup",
)
KNOWN_OPTIONS = (*ROUTE_KEYS, *AUTH_KEYS, *CROSS_KEYS, *OWN_KEYS)
CLOUDS = ("AzurePublicCloud", "AzureChinaCloud", "AzureUSGovernmentCloud", "AzureStackCloud")
DEFAULT_CACHE_SECONDS = 30.0
DEFAULT_POLLING_INTERVAL = 2.0
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}$")  # route table names: 1-80 characters
_GROUP = re.compile(r"^[-\w._()]{1,90}$")  # resource group names
_UUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Credentials:
    """How to get a token for ARM: which kind, and what it needs (secrets never printed)."""

    kind: str
    """``workload-identity``, ``managed-identity``, ``client-secret`` or ``client-certificate``."""
    tenant_id: str = ""
    client_id: str = ""
    client_secret: str = dataclasses.field(default="", repr=False)
    certificate_path: str = ""
    certificate_password: str = dataclasses.field(default="", repr=False)
    token_file: str = ""
    authority: str = ""
    """``AZURE_AUTHORITY_HOST`` (set by the workload identity webhook), else the cloud's."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AzureOptions:
    """What the ``azure`` provider was configured with."""

    subscription_id: str
    route_table_group: str
    """``routeTableResourceGroup``, else ``resourceGroup`` (as the CCM defaults it)."""
    route_table: str
    node_group: str
    """``resourceGroup``: where the Nodes' network interfaces are (blackhole detection)."""
    location: str = ""
    """Where a missing route table is created (the CCM creates it too)."""
    cloud: str = "AzurePublicCloud"
    endpoint: str = ""
    """``resourceManagerEndpoint``: ARM's URL, when not the cloud's default."""
    batch_writes: bool = True
    find_blackholes: bool = True
    cache_seconds: float = DEFAULT_CACHE_SECONDS
    polling_interval: float = DEFAULT_POLLING_INTERVAL
    ca_bundle: str = ""
    route_limit: int = ROUTE_LIMIT
    """Routes a table may hold: creates past it fail terminally, naming it."""
    credentials: Credentials = dataclasses.field(repr=False)


def _fail(message: str) -> ConfigError:
    return option_error(PROVIDER, message)


def _bool(options: Mapping[str, str], key: str, *, default: bool) -> bool:
    text = options.get(key, "").strip().lower()
    if not text:
        return default
    if text in {"true", "1", "yes"}:
        return True
    if text in {"false", "0", "no"}:
        return False
    raise _fail(f"{key}={options[key]!r} must be true or false")


def _credentials(options: Mapping[str, str], environ: Mapping[str, str]) -> Credentials:
    """The CCM's order: workload identity, managed identity, client secret, certificate."""
    tenant = (environ.get("AZURE_TENANT_ID") or options.get("tenantId", "")).strip()
    client = (environ.get("AZURE_CLIENT_ID") or options.get("aadClientId", "")).strip()
    token_file = environ.get("AZURE_FEDERATED_TOKEN_FILE", "").strip()
    federated = bool(token_file) or _bool(
        options, "useFederatedWorkloadIdentityExtension", default=False
    )
    token_file = token_file or options.get("aadFederatedTokenFile", "").strip()
    if federated:
        if not (tenant and client and token_file):
            raise _fail(
                "workload identity needs tenantId (or AZURE_TENANT_ID), aadClientId (or "
                "AZURE_CLIENT_ID) and aadFederatedTokenFile (or AZURE_FEDERATED_TOKEN_FILE)"
            )
        return Credentials(
            kind="workload-identity", tenant_id=tenant, client_id=client, token_file=token_file
        )
    if _bool(options, "useManagedIdentityExtension", default=False):
        identity = options.get("userAssignedIdentityID", "").strip()
        return Credentials(kind="managed-identity", client_id=identity)
    secret = environ.get("AZURE_CLIENT_SECRET") or options.get("aadClientSecret", "")
    certificate = options.get("aadClientCertPath", "").strip()
    if secret or certificate:
        if not (tenant and client):
            raise _fail(
                "a service principal needs tenantId (or AZURE_TENANT_ID) and aadClientId "
                "(or AZURE_CLIENT_ID)"
            )
        if secret:
            return Credentials(
                kind="client-secret", tenant_id=tenant, client_id=client, client_secret=secret
            )
        return Credentials(
            kind="client-certificate",
            tenant_id=tenant,
            client_id=client,
            certificate_path=certificate,
            certificate_password=options.get("aadClientCertPassword", ""),
        )
    raise _fail(
        "no credentials: set useManagedIdentityExtension=true, or aadClientId with "
        "aadClientSecret (or aadClientCertPath) and tenantId, or workload identity "
        "(AZURE_FEDERATED_TOKEN_FILE)"
    )


def _route_limit(options: Mapping[str, str]) -> int:
    text = options.get("route-limit", "").strip()
    if not text:
        return ROUTE_LIMIT
    if not text.isdigit() or not 1 <= int(text) <= MAX_ROUTE_LIMIT:
        raise _fail(f"route-limit={text!r} must be a whole number from 1 to {MAX_ROUTE_LIMIT}")
    return int(text)


def _required(options: Mapping[str, str], key: str, what: str) -> str:
    value = options.get(key, "").strip()
    if not value:
        raise _fail(f"missing required option {key} ({what}; a key of the CCM's azure.json)")
    return value


def parse_options(
    options: Mapping[str, str], *, environ: Mapping[str, str], need_credentials: bool = True
) -> AzureOptions:
    """Validate ``options`` (with ``environ`` for the credential variables)."""
    refuse_unknown(
        PROVIDER, {k: v for k, v in options.items() if k not in IGNORED_KEYS}, KNOWN_OPTIONS
    )
    subscription = _required(options, "subscriptionId", "the subscription of the route table")
    if not _UUID.match(subscription):
        raise _fail(f"subscriptionId={subscription!r} must be a subscription id (a UUID)")
    for key, same in (
        ("networkResourceSubscriptionID", subscription),
        ("networkResourceTenantID", ""),
    ):
        value = options.get(key, "").strip()
        if (
            value
            and value.lower() != same.lower()
            and not (
                key == "networkResourceTenantID" and value == options.get("tenantId", "").strip()
            )
        ):
            raise _fail(
                f"{key} (network resources in another subscription or tenant) is not supported "
                "yet: the route table must be in subscriptionId, with tenantId's credential"
            )
    node_group = _required(options, "resourceGroup", "the resource group of the Nodes")
    table_group = options.get("routeTableResourceGroup", "").strip() or node_group
    for key, value in (("resourceGroup", node_group), ("routeTableResourceGroup", table_group)):
        if not _GROUP.match(value):
            raise _fail(f"{key}={value!r} is not a resource group name")
    table = _required(options, "routeTableName", "the route table the CCM writes")
    if not _NAME.match(table):
        raise _fail(f"routeTableName={table!r} is not a route table name (1-80 characters)")
    cloud = options.get("cloud", "").strip() or "AzurePublicCloud"
    by_lower = {c.lower(): c for c in CLOUDS}
    if cloud.lower() not in by_lower:
        raise _fail(f"cloud={cloud!r} is not one of {', '.join(CLOUDS)}")
    cloud = by_lower[cloud.lower()]
    endpoint = options.get("resourceManagerEndpoint", "").strip().rstrip("/")
    if endpoint and not is_http_url(endpoint):
        raise _fail("resourceManagerEndpoint must be the https URL of Azure Resource Manager")
    if cloud == "AzureStackCloud" and not endpoint:
        raise _fail("cloud=AzureStackCloud needs resourceManagerEndpoint")
    credentials = (
        dataclasses.replace(
            _credentials(options, environ),
            authority=environ.get("AZURE_AUTHORITY_HOST", "").strip(),
        )
        if need_credentials
        else Credentials(kind="injected")
    )
    return AzureOptions(
        subscription_id=subscription,
        route_table_group=table_group,
        route_table=table,
        node_group=node_group,
        location=options.get("location", "").strip(),
        cloud=cloud,
        endpoint=endpoint,
        batch_writes=_bool(options, "batch-writes", default=True),
        find_blackholes=_bool(options, "find-blackholes", default=True),
        cache_seconds=seconds_option(PROVIDER, options, "cache-seconds", DEFAULT_CACHE_SECONDS),
        polling_interval=seconds_option(
            PROVIDER, options, "polling-interval", DEFAULT_POLLING_INTERVAL
        ),
        ca_bundle=options.get("ca-bundle", "").strip(),
        route_limit=_route_limit(options),
        credentials=credentials,
    )

"""The Azure boundary: azure-mgmt-network's async client over one paced transport, errors mapped.

Promises:

* every HTTP request the SDK sends (each GET and PUT, each poll of a long-running operation,
  each page, and each token request of the credential) first spends the request budget
  routectl handed the provider: both pipelines send through :class:`PacedTransport`, which
  awaits ``budget.spend()`` before handing the request to azure-core's aiohttp transport;
* each call is made once: the SDK's retry policy is off (``retry_total=0``), routectl's gate
  retries; pollers follow ``Azure-AsyncOperation``/``Location`` with ``asyncio.sleep``
  between polls (the interval ARM's ``Retry-After`` asks, else ``polling-interval``), so a
  write lasts at most routectl's per-call timeout, which cancels it;
* ARM's ``x-ms-ratelimit-remaining-subscription-reads``/``-writes`` (and the resource
  variants) of the last answer are kept in :attr:`RateLimits.remaining` and logged at -v4;
* every SDK, credential or transport exception leaves as an error of routectl's tree,
  chained: 429 (and a 503 with ``Retry-After``) is throttling with ARM's hint; 401/403 and
  credentials that cannot be had are terminal; a 412 is transient (the table changed under
  a write); other 4xx are terminal; 5xx, lost connections and failed operations are
  transient. Messages carry ARM's error code and message, never a token or secret.
"""

from __future__ import annotations

import dataclasses
import logging
import urllib.parse
from collections.abc import Mapping
from typing import Any

from azure.core import AzureClouds
from azure.core.credentials_async import AsyncTokenCredential
from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.core.pipeline.transport import AioHttpTransport, AsyncHttpTransport
from azure.core.rest import AsyncHttpResponse, HttpRequest
from azure.identity import AzureAuthorityHosts
from azure.identity.aio import (
    CertificateCredential,
    ClientSecretCredential,
    ManagedIdentityCredential,
    WorkloadIdentityCredential,
)
from azure.mgmt.core.tools import get_arm_endpoints
from azure.mgmt.network.aio import NetworkManagementClient

from routectl.errors import ProviderError, ProviderTerminalError, ProviderThrottledError
from routectl.provider import RequestBudget
from routectl.ratelimit import parse_retry_after
from routectl_azure.options import AzureOptions, Credentials

_log = logging.getLogger(__name__)
HTTP_UNAUTHORIZED, HTTP_FORBIDDEN, HTTP_NOT_FOUND = 401, 403, 404
HTTP_PRECONDITION_FAILED, HTTP_TOO_MANY, HTTP_SERVER_ERROR, HTTP_UNAVAILABLE = 412, 429, 500, 503
RATE_LIMIT_PREFIX = "x-ms-ratelimit-remaining-"
_CLOUDS = {
    "AzurePublicCloud": (AzureClouds.AZURE_PUBLIC_CLOUD, AzureAuthorityHosts.AZURE_PUBLIC_CLOUD),
    "AzureChinaCloud": (AzureClouds.AZURE_CHINA_CLOUD, AzureAuthorityHosts.AZURE_CHINA),
    "AzureUSGovernmentCloud": (
        AzureClouds.AZURE_US_GOVERNMENT,
        AzureAuthorityHosts.AZURE_GOVERNMENT,
    ),
    "AzureStackCloud": (AzureClouds.AZURE_PUBLIC_CLOUD, AzureAuthorityHosts.AZURE_PUBLIC_CLOUD),
}


@dataclasses.dataclass(slots=True)
class RateLimits:
    """ARM's ``x-ms-ratelimit-remaining-*`` headers of the last answers, by header suffix
    (``subscription-reads``, ``subscription-writes``, ``resource``...)."""

    remaining: dict[str, int] = dataclasses.field(default_factory=dict)

    def record(self, headers: Mapping[str, str]) -> None:
        """Keep the values an answer carried, and log them at -v4."""
        seen: dict[str, int] = {}
        for name, value in headers.items():
            key = name.lower()
            if key.startswith(RATE_LIMIT_PREFIX):
                try:
                    seen[key.removeprefix(RATE_LIMIT_PREFIX)] = int(
                        value.split(",")[0].split(";")[0]
                    )
                except ValueError:
                    continue
        if seen:
            self.remaining.update(seen)
            _log.debug(
                "ARM rate limits remaining", extra={"ratelimits": dict(sorted(seen.items()))}
            )


class PacedTransport(AsyncHttpTransport[Any, Any]):
    """azure-core's aiohttp transport, with the budget spent before each request is sent."""

    def __init__(self, budget: RequestBudget | None, limits: RateLimits, **kwargs: Any) -> None:
        self._inner = AioHttpTransport(**kwargs)
        self._budget = budget
        self._limits = limits

    async def send(self, request: Any, **kwargs: Any) -> Any:
        """Spend, send, note the rate-limit headers."""
        if self._budget is not None:
            path = urllib.parse.urlsplit(str(request.url)).path
            await self._budget.spend(f"{request.method} {_operation(path)}")
        response = await self._inner.send(request, **kwargs)
        self._limits.record(response.headers)
        return response

    async def open(self) -> None:
        """Open the aiohttp session."""
        await self._inner.open()

    async def close(self) -> None:
        """Close the aiohttp session."""
        await self._inner.close()

    async def __aenter__(self) -> PacedTransport:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *args: object) -> None:
        await self._inner.__aexit__(*args)

    async def sleep(self, duration: float) -> None:
        """The pollers' wait between polls: the event loop's sleep."""
        await self._inner.sleep(duration)


def _operation(path: str) -> str:
    """A request's path without ids, for the budget's per-operation counts."""
    parts = path.strip("/").split("/")
    kinds = [p for i, p in enumerate(parts) if i % 2 == 0 and p.lower() != "subscriptions"]
    return "/".join(kinds[-3:]) or path


def credential_for(
    options: AzureOptions, budget: RequestBudget | None, limits: RateLimits
) -> AsyncTokenCredential:
    """The azure-identity async credential the options ask for, paced like ARM's requests."""
    credentials: Credentials = options.credentials
    authority = credentials.authority or _CLOUDS[options.cloud][1]
    common: dict[str, Any] = {
        "transport": PacedTransport(budget, limits, **_tls(options)),
        "authority": authority,
        "retry_total": 0,
    }
    if credentials.kind == "workload-identity":
        return WorkloadIdentityCredential(
            tenant_id=credentials.tenant_id,
            client_id=credentials.client_id,
            token_file_path=credentials.token_file,
            **common,
        )
    if credentials.kind == "managed-identity":
        del common["authority"]
        return ManagedIdentityCredential(client_id=credentials.client_id or None, **common)
    if credentials.kind == "client-certificate":
        return CertificateCredential(
            credentials.tenant_id,
            credentials.client_id,
            credentials.certificate_path,
            password=credentials.certificate_password or None,
            **common,
        )
    return ClientSecretCredential(
        credentials.tenant_id, credentials.client_id, credentials.client_secret, **common
    )


def _tls(options: AzureOptions) -> dict[str, Any]:
    return {"connection_verify": options.ca_bundle} if options.ca_bundle else {}


def arm_url(options: AzureOptions) -> str:
    """ARM's URL: ``resourceManagerEndpoint``, else the cloud's."""
    endpoints = get_arm_endpoints(_CLOUDS[options.cloud][0])
    return options.endpoint or str(endpoints["resource_manager"]).rstrip("/")


def network_client(
    options: AzureOptions,
    credential: AsyncTokenCredential,
    budget: RequestBudget | None,
    limits: RateLimits,
) -> NetworkManagementClient:
    """The network client: one paced transport, no SDK retries, ARM's endpoint for the cloud."""
    cloud, _ = _CLOUDS[options.cloud]
    endpoints = get_arm_endpoints(cloud)
    base_url = arm_url(options)
    scopes = endpoints["credential_scopes"]
    if options.endpoint and options.cloud == "AzureStackCloud":
        scopes = [f"{options.endpoint}/.default"]
    return NetworkManagementClient(
        credential,
        options.subscription_id,
        base_url=base_url,
        cloud_setting=cloud,
        credential_scopes=scopes,
        transport=PacedTransport(budget, limits, **_tls(options)),
        retry_total=0,
        polling_interval=options.polling_interval,
        logging_enable=False,
    )


async def send_raw(client: NetworkManagementClient, method: str, url: str) -> Any:
    """A GET the network SDK has no operation for (the Compute scale sets listing), through
    the same pipeline (auth, budget, no retries); its JSON body."""
    response: AsyncHttpResponse = await client.send_request(HttpRequest(method, url))
    await response.read()
    if response.status_code >= 400:  # noqa: PLR2004
        raise HttpResponseError(response=response)
    return response.json()


def map_error(operation: str, exc: AzureError) -> ProviderError:
    """The routectl error for an exception of azure-core, azure-identity or the SDK."""
    if isinstance(exc, ClientAuthenticationError) and _from_the_credential(exc):
        return ProviderTerminalError(
            f"Azure {operation}: no token for ARM ({type(exc).__name__}): check the "
            "credential options (aadClientId, tenantId, useManagedIdentityExtension...)"
        )
    if isinstance(exc, HttpResponseError) and exc.status_code:
        return _map_answer(operation, exc)
    if isinstance(exc, ServiceRequestError | ServiceResponseError):
        return ProviderError(f"Azure {operation}: {type(exc).__name__} (no answer)")
    return ProviderError(f"Azure {operation}: {type(exc).__name__}")


def _from_the_credential(exc: ClientAuthenticationError) -> bool:
    """Whether the credential failed (no answer, or Entra ID's), rather than ARM refusing."""
    request = getattr(exc.response, "request", None)
    return exc.status_code is None or "/oauth2/" in str(getattr(request, "url", ""))


def _map_answer(operation: str, exc: HttpResponseError) -> ProviderError:
    status = int(exc.status_code or 0)
    code = getattr(exc.error, "code", None) or ""
    message = getattr(exc.error, "message", None) or exc.reason or ""
    detail = f"Azure {operation}: HTTP {status} {code}: {str(message).strip()[:300]}".rstrip(": ")
    response: Any = exc.response
    headers: Mapping[str, str] = response.headers if response is not None else {}
    hint = retry_after(headers)
    if status == HTTP_TOO_MANY or (status == HTTP_UNAVAILABLE and hint is not None):
        return ProviderThrottledError(
            f"{detail} (ARM throttled the subscription's requests)",
            retry_after=hint if hint and hint > 0 else 1.0,
        )
    if status in {HTTP_UNAUTHORIZED, HTTP_FORBIDDEN}:
        return ProviderTerminalError(
            f"{detail} (check the credential and its role: the README lists the permissions)"
        )
    if status == HTTP_PRECONDITION_FAILED or status >= HTTP_SERVER_ERROR:
        return ProviderError(detail)
    return ProviderTerminalError(detail)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``Retry-After`` (delta-seconds, or an HTTP date less the answer's
    ``Date``), or None when there is none or it cannot be read."""
    return parse_retry_after(headers.get("Retry-After"), date=headers.get("Date"))

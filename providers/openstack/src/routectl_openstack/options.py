"""The ``openstack`` provider's options (``--provider-option key=value``), validated up front.

Every problem is a :class:`~routectl.errors.ConfigError` with one line naming the option.
Credentials come from the environment variables the OpenStack CLI reads (``OS_AUTH_URL``,
``OS_USERNAME``/``OS_PASSWORD`` with ``OS_PROJECT_NAME``, or ``OS_APPLICATION_CREDENTIAL_ID``/
``_SECRET``); they are never echoed.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Mapping

from routectl.errors import ConfigError
from routectl.plugin_options import is_http_url, option_error, refuse_unknown, seconds_option

PROVIDER = "openstack"
KNOWN_OPTIONS = ("auth-url", "cache-seconds", "node-cidrs", "region", "router-id")
DEFAULT_CACHE_SECONDS = 30.0

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Credentials:
    """What Keystone needs, from ``OS_*`` variables (password or application credential)."""

    auth_url: str
    username: str = ""
    password: str = dataclasses.field(default="", repr=False)
    project_name: str = ""
    project_id: str = ""
    user_domain_name: str = "Default"
    project_domain_name: str = "Default"
    application_credential_id: str = ""
    application_credential_secret: str = dataclasses.field(default="", repr=False)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class OpenStackOptions:
    """What the ``openstack`` provider was configured with."""

    router_id: str
    """The Neutron router whose ``routes`` carry the pod routes."""
    node_cidrs: tuple[Network, ...]
    """The subnets the Nodes' addresses are in: a route is this cluster's only if its next
    hop lies in one of them (a shared router's other routes are never touched)."""
    region: str = ""
    cache_seconds: float = DEFAULT_CACHE_SECONDS
    """Servers (next hop -> Node) are listed again at most this often."""
    credentials: Credentials = dataclasses.field(repr=False)


def _fail(message: str) -> ConfigError:
    return option_error(PROVIDER, message)


def _cidrs(text: str) -> tuple[Network, ...]:
    try:
        found = tuple(
            ipaddress.ip_network(part.strip()) for part in text.split(",") if part.strip()
        )
    except ValueError:
        raise _fail(f"node-cidrs={text!r} must be CIDRs such as 10.0.0.0/24,fd00::/64") from None
    if not found:
        raise _fail("missing required option node-cidrs (the Nodes' subnets, e.g. 10.0.0.0/24)")
    return found


def _credentials(auth_url: str, environ: Mapping[str, str]) -> Credentials:
    credentials = Credentials(
        auth_url=auth_url,
        username=environ.get("OS_USERNAME", ""),
        password=environ.get("OS_PASSWORD", ""),
        project_name=environ.get("OS_PROJECT_NAME", ""),
        project_id=environ.get("OS_PROJECT_ID", ""),
        user_domain_name=environ.get("OS_USER_DOMAIN_NAME", "Default"),
        project_domain_name=environ.get("OS_PROJECT_DOMAIN_NAME", "Default"),
        application_credential_id=environ.get("OS_APPLICATION_CREDENTIAL_ID", ""),
        application_credential_secret=environ.get("OS_APPLICATION_CREDENTIAL_SECRET", ""),
    )
    by_password = credentials.username and credentials.password
    by_application = (
        credentials.application_credential_id and credentials.application_credential_secret
    )
    if not (by_password or by_application):
        raise _fail(
            "no credentials: set OS_USERNAME and OS_PASSWORD (with OS_PROJECT_NAME), or "
            "OS_APPLICATION_CREDENTIAL_ID and OS_APPLICATION_CREDENTIAL_SECRET"
        )
    return credentials


def parse_options(options: Mapping[str, str], *, environ: Mapping[str, str]) -> OpenStackOptions:
    """Validate ``options`` (falling back to ``environ``) into :class:`OpenStackOptions`."""
    refuse_unknown(PROVIDER, options, KNOWN_OPTIONS)
    router_id = options.get("router-id", "").strip()
    if not router_id:
        raise _fail("missing required option router-id (the Neutron router's id)")
    auth_url = (options.get("auth-url") or environ.get("OS_AUTH_URL", "")).strip()
    if not is_http_url(auth_url):
        # The URL is not echoed: it may carry user information.
        raise _fail("auth-url (or OS_AUTH_URL) must be the http(s) URL of Keystone's v3 API")
    cache_seconds = seconds_option(PROVIDER, options, "cache-seconds", DEFAULT_CACHE_SECONDS)
    return OpenStackOptions(
        router_id=router_id,
        node_cidrs=_cidrs(options.get("node-cidrs", "")),
        region=(options.get("region") or environ.get("OS_REGION_NAME", "")).strip(),
        cache_seconds=cache_seconds,
        credentials=_credentials(auth_url, environ),
    )

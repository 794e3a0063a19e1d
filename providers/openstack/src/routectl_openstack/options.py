"""The ``openstack`` provider's options (``--provider-option key=value``), validated up front.

Every problem is a :class:`~routectl.errors.ConfigError` with one line naming the option.
Credentials come from options (``username``, ``password``, ``project-name``, ...: what a
cloud-provider-openstack ``cloud.conf`` gives in ``[Global]``), else from the environment
variables the OpenStack CLI reads (``OS_AUTH_URL``, ``OS_USERNAME``/``OS_PASSWORD`` with
``OS_PROJECT_NAME``, or ``OS_APPLICATION_CREDENTIAL_ID``/``_SECRET``); they are never
echoed.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Mapping

from routectl.errors import ConfigError
from routectl.plugin_options import is_http_url, option_error, refuse_unknown, seconds_option

PROVIDER = "openstack"
CREDENTIAL_OPTIONS = {
    "username": "OS_USERNAME",
    "password": "OS_PASSWORD",
    "project-name": "OS_PROJECT_NAME",
    "project-id": "OS_PROJECT_ID",
    "user-domain-name": "OS_USER_DOMAIN_NAME",
    "project-domain-name": "OS_PROJECT_DOMAIN_NAME",
    "application-credential-id": "OS_APPLICATION_CREDENTIAL_ID",
    "application-credential-secret": "OS_APPLICATION_CREDENTIAL_SECRET",
}
"""Credentials given as options (a cloud.conf's ``[Global]``), each else its variable."""
KNOWN_OPTIONS = tuple(
    sorted(("auth-url", "cache-seconds", "node-cidrs", "region", "router-id", *CREDENTIAL_OPTIONS))
)
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


def _credentials(
    auth_url: str, options: Mapping[str, str], environ: Mapping[str, str]
) -> Credentials:
    def get(option: str, default: str = "") -> str:
        return options.get(option) or environ.get(CREDENTIAL_OPTIONS[option], default)

    credentials = Credentials(
        auth_url=auth_url,
        username=get("username"),
        password=get("password"),
        project_name=get("project-name"),
        project_id=get("project-id"),
        user_domain_name=get("user-domain-name", "Default"),
        project_domain_name=get("project-domain-name", "Default"),
        application_credential_id=get("application-credential-id"),
        application_credential_secret=get("application-credential-secret"),
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
        credentials=_credentials(auth_url, options, environ),
    )

"""The ``openstack`` provider's options (``--provider-option key=value``), validated up front.

Every problem is a :class:`~routectl.errors.ConfigError` with one line naming the option.
Credentials come from options (``username``, ``password``, ``project-name``, ...: what a
cloud-provider-openstack ``cloud.conf`` gives in ``[Global]``), then, with ``use-clouds``,
from the clouds.yaml entry named by ``cloud`` (as cloud-provider-openstack's ``ReadClouds``:
the file's values fill only what the options leave empty), else from the environment
variables the OpenStack CLI reads (``OS_AUTH_URL``, ``OS_USERNAME``/``OS_PASSWORD`` with
``OS_PROJECT_NAME``, or ``OS_APPLICATION_CREDENTIAL_ID``/``_SECRET``); they are never
echoed. TLS (``ca-file``, ``tls-insecure``, ``cert-file``/``key-file``) and the catalog
``interface`` are checked here too: a CA file that cannot be read is refused at start-up,
as the CCM refuses it when it builds its client.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import ssl
from collections.abc import Mapping
from pathlib import Path

import openstack.config.loader
import openstack.exceptions

from routectl.errors import ConfigError
from routectl.plugin_options import is_http_url, option_error, refuse_unknown, seconds_option

PROVIDER = "openstack"
CREDENTIAL_OPTIONS = {
    "user-id": "OS_USER_ID",
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
CONNECTION_OPTIONS = (
    "ca-file", "tls-insecure", "cert-file", "key-file", "interface",
    "use-clouds", "clouds-file", "cloud",
)  # fmt: skip
"""How to reach the cloud: TLS, the catalog interface, a clouds.yaml entry."""
KNOWN_OPTIONS = tuple(
    sorted(
        (
            "auth-url", "cache-seconds", "node-cidrs", "region", "router-id",
            *CREDENTIAL_OPTIONS, *CONNECTION_OPTIONS,
        )
    )
)  # fmt: skip
INTERFACES = ("public", "internal", "admin")
"""gophercloud's availabilities, the values ``os-endpoint-type`` may take in the CCM."""
_CLOUDS_AUTH = {
    "auth_url": "auth-url",
    "user_id": "user-id",
    "username": "username",
    "password": "password",
    "project_id": "project-id",
    "project_name": "project-name",
    "user_domain_name": "user-domain-name",
    "project_domain_name": "project-domain-name",
    "application_credential_id": "application-credential-id",
    "application_credential_secret": "application-credential-secret",
}
"""A clouds.yaml entry's ``auth`` keys that fill options (``ReadClouds``'s list)."""
_CLOUDS_TOP = {
    "region_name": "region",
    "interface": "interface",
    "cacert": "ca-file",
    "cert": "cert-file",
    "key": "key-file",
}
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})
DEFAULT_CACHE_SECONDS = 30.0

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Credentials:
    """What Keystone needs, from ``OS_*`` variables (password or application credential)."""

    auth_url: str
    user_id: str = ""
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
    verify: bool | str = True
    """``requests``' verify: True, False (``tls-insecure``) or the ``ca-file`` path."""
    cert: tuple[str, str] | None = None
    """The TLS client certificate and key files (``cert-file``, ``key-file``)."""
    interface: str = "public"
    """Which catalog endpoints to call (``os-endpoint-type``)."""


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
        user_id=get("user-id"),
        username=get("username"),
        password=get("password"),
        project_name=get("project-name"),
        project_id=get("project-id"),
        user_domain_name=get("user-domain-name", "Default"),
        project_domain_name=get("project-domain-name", "Default"),
        application_credential_id=get("application-credential-id"),
        application_credential_secret=get("application-credential-secret"),
    )
    by_password = (credentials.username or credentials.user_id) and credentials.password
    by_application = (
        credentials.application_credential_id and credentials.application_credential_secret
    )
    if not (by_password or by_application):
        given = sorted(k for k in CREDENTIAL_OPTIONS if options.get(k))
        if given:  # the cloud config has credentials, only incomplete ones
            raise _fail(
                f"incomplete credentials: {', '.join(given)} given; Keystone needs a password "
                "with username or user-id, or application-credential-id with "
                "application-credential-secret"
            )
        raise _fail(
            "no credentials: set OS_USERNAME and OS_PASSWORD (with OS_PROJECT_NAME), or "
            "OS_APPLICATION_CREDENTIAL_ID and OS_APPLICATION_CREDENTIAL_SECRET"
        )
    return credentials


def _flag(options: Mapping[str, str], name: str) -> bool:
    value = options.get(name, "false").strip().lower()
    if value not in _TRUE | _FALSE:
        raise _fail(f"{name}={value!r} must be true or false")
    return value in _TRUE


def _from_clouds_yaml(options: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The options a clouds.yaml entry gives (``use-clouds``), as the CCM's ``ReadClouds``."""
    path = options.get("clouds-file") or environ.get("OS_CLIENT_CONFIG_FILE", "")
    name = options.get("cloud") or environ.get("OS_CLOUD", "")
    if not name:
        raise _fail("use-clouds=true needs cloud (or OS_CLOUD): the clouds.yaml entry to use")
    if path and not Path(path).is_file():
        raise _fail(f"clouds-file {path!r} cannot be read (use-clouds=true)")
    try:
        config = openstack.config.loader.OpenStackConfig(
            config_files=[path] if path else None,
            vendor_files=[],
            secure_files=[],
            load_envvars=False,
        )
        entry = config.get_one(cloud=name).config
    except openstack.exceptions.SDKException as exc:
        shown = path or "clouds.yaml"
        raise _fail(f"use-clouds=true: {shown}: {str(exc).splitlines()[0][:200]}") from None
    found = {opt: entry.get(key) for key, opt in _CLOUDS_TOP.items()}
    auth = entry.get("auth") or {}
    found |= {opt: auth.get(key) for key, opt in _CLOUDS_AUTH.items()}
    for option in ("user-domain-name", "project-domain-name"):  # gophercloud: both, unless given
        found[option] = found[option] or auth.get("domain_name")
    return {opt: str(value) for opt, value in found.items() if isinstance(value, str) and value}


def _tls(options: Mapping[str, str]) -> tuple[bool | str, tuple[str, str] | None]:
    """``requests``' verify and cert, the CA file checked as the CCM's ``cert.NewPool``."""
    ca_file = options.get("ca-file", "").strip()
    if ca_file:
        try:
            ssl.create_default_context(cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise _fail(
                f"ca-file {ca_file!r}: not a readable PEM certificate file ({exc})"
            ) from None
    cert, key = options.get("cert-file", "").strip(), options.get("key-file", "").strip()
    if bool(cert) != bool(key):
        raise _fail("cert-file and key-file go together (the TLS client certificate and key)")
    for name, path in (("cert-file", cert), ("key-file", key)):
        if path and not Path(path).is_file():
            raise _fail(f"{name} {path!r} cannot be read")
    # The CCM: InsecureSkipVerify = tls-insecure == "true"; it wins over ca-file.
    insecure = options.get("tls-insecure", "false").strip()
    if insecure not in {"true", "false"}:
        raise _fail(f"tls-insecure={insecure!r} must be true or false")
    verify: bool | str = False if insecure == "true" else (ca_file or True)
    return verify, (cert, key) if cert else None


def _interface(options: Mapping[str, str]) -> str:
    interface = options.get("interface", "").strip() or "public"
    if interface not in INTERFACES:
        raise _fail(
            f"interface={interface!r} (os-endpoint-type, or a clouds.yaml entry's interface) "
            f"must be one of {', '.join(INTERFACES)}, the values cloud-provider-openstack accepts"
        )
    return interface


def parse_options(options: Mapping[str, str], *, environ: Mapping[str, str]) -> OpenStackOptions:
    """Validate ``options`` (falling back to clouds.yaml with ``use-clouds``, then to
    ``environ``) into :class:`OpenStackOptions`."""
    refuse_unknown(PROVIDER, options, KNOWN_OPTIONS)
    if _flag(options, "use-clouds"):
        given = {key: value for key, value in options.items() if value.strip()}
        options = _from_clouds_yaml(options, environ) | given
    router_id = options.get("router-id", "").strip()
    if not router_id:
        raise _fail("missing required option router-id (the Neutron router's id)")
    auth_url = (options.get("auth-url") or environ.get("OS_AUTH_URL", "")).strip()
    if not is_http_url(auth_url):
        # The URL is not echoed: it may carry user information.
        raise _fail("auth-url (or OS_AUTH_URL) must be the http(s) URL of Keystone's v3 API")
    cache_seconds = seconds_option(PROVIDER, options, "cache-seconds", DEFAULT_CACHE_SECONDS)
    verify, cert = _tls(options)
    return OpenStackOptions(
        router_id=router_id,
        node_cidrs=_cidrs(options.get("node-cidrs", "")),
        region=(options.get("region") or environ.get("OS_REGION_NAME", "")).strip(),
        cache_seconds=cache_seconds,
        credentials=_credentials(auth_url, options, environ),
        verify=verify,
        cert=cert,
        interface=_interface(options),
    )

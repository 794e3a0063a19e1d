"""The ``hcloud`` provider's options (``--provider-option key=value``), validated up front.

Every problem is a :class:`~routectl.errors.ConfigError` with a one-line message naming the
option. The API token is never part of a message: it comes from ``HCLOUD_TOKEN`` or from the
file named by ``token-file`` (a mounted Secret, re-read whenever it changes). As in
hcloud-cloud-controller-manager's environment, ``HCLOUD_NETWORK``, ``HCLOUD_ENDPOINT`` and
``HCLOUD_TOKEN_FILE`` stand in for the options ``network``, ``endpoint`` and ``token-file``;
:func:`environment_notes` says which of hcloud-ccm's other variables are ignored.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path

from routectl.errors import ConfigError
from routectl.plugin_options import is_http_url, option_error, refuse_unknown, seconds_option

PROVIDER = "hcloud"
DEFAULT_ENDPOINT = "https://api.hetzner.cloud/v1"
DEFAULT_SERVER_CACHE_SECONDS = 30.0
DEFAULT_ACTION_POLL_SECONDS = 1.0
KNOWN_OPTIONS = (
    "action-poll-seconds",
    "endpoint",
    "network",
    "server-cache-seconds",
    "token-file",
)

_NETWORK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HcloudOptions:
    """What the ``hcloud`` provider was configured with (never the token itself)."""

    network: str
    """The network's id (digits) or name."""
    endpoint: str = DEFAULT_ENDPOINT
    token_file: Path | None = None
    """Read the token from this file (re-read when it changes); else ``HCLOUD_TOKEN``."""
    server_cache_seconds: float = DEFAULT_SERVER_CACHE_SECONDS
    """``GET /servers`` is sent at most this often (hccm #482/#675: never once per unknown
    route)."""
    action_poll_seconds: float = DEFAULT_ACTION_POLL_SECONDS
    """Seconds between two looks at a running action."""

    @property
    def network_id(self) -> int | None:
        """The network's id, if it was given as one."""
        return int(self.network) if self.network.isdigit() else None


def _fail(message: str) -> ConfigError:
    return option_error(PROVIDER, message)


ENVIRONMENT_OPTIONS = {
    "HCLOUD_NETWORK": "network",
    "HCLOUD_ENDPOINT": "endpoint",
    "HCLOUD_TOKEN_FILE": "token-file",
}
"""hcloud-ccm's variables that are options here (an option given wins)."""
IGNORED_VARIABLES = {
    "HCLOUD_DEBUG": "routectl logs its calls at -v 4",
    "HCLOUD_NETWORK_ROUTES_ENABLED": "the CCM's switch for its own route controller; "
    "routectl's is --configure-cloud-routes",
    "HCLOUD_NETWORK_DISABLE_ATTACHED_CHECK": "routectl does not check the attachment",
    "HCLOUD_METRICS_ENABLED": "routectl serves its metrics on --metrics-bind-address",
    "HCLOUD_METRICS_ADDRESS": "routectl serves its metrics on --metrics-bind-address",
    "HCLOUD_INSTANCES_ADDRESS_FAMILY": "the cloud-node controller's",
    "HCLOUD_INSTANCES_ZONE_LABEL_ENABLED": "the cloud-node controller's",
    "HCLOUD_SERVER_CACHE_MODE": "routectl caches servers for server-cache-seconds",
    "HCLOUD_SERVER_CACHE_MAX_AGE": "routectl caches servers for server-cache-seconds",
    "ROBOT_ENABLED": "Robot servers have no routes in a cloud network",
    "ROBOT_USER": "Robot servers have no routes in a cloud network",
    "ROBOT_PASSWORD": "Robot servers have no routes in a cloud network",
    "ROBOT_CACHE_TIMEOUT": "Robot servers have no routes in a cloud network",
    "ROBOT_RATE_LIMIT_WAIT_TIME": "Robot servers have no routes in a cloud network",
    "ROBOT_FORWARD_INTERNAL_IPS": "Robot servers have no routes in a cloud network",
}
"""hcloud-ccm's variables that do not concern routes, and why (said once at start-up)."""
_LOAD_BALANCERS = "HCLOUD_LOAD_BALANCERS_"


def _from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    return {
        option: environ[variable].strip()
        for variable, option in ENVIRONMENT_OPTIONS.items()
        if environ.get(variable, "").strip()
    }


def environment_notes(environ: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """hcloud-ccm's variables set in ``environ``: (ignored ones, each with the reason;
    unknown ``HCLOUD_*`` ones, a warning each, as a typo must not pass unseen)."""
    ignored, unknown = [], []
    for name in sorted(environ):
        if name in IGNORED_VARIABLES:
            ignored.append(f"Ignoring {name}: {IGNORED_VARIABLES[name]}")
        elif name.startswith(_LOAD_BALANCERS):
            ignored.append(f"Ignoring {name}: the service controller's")
        elif name.startswith("HCLOUD_") and name not in {"HCLOUD_TOKEN", *ENVIRONMENT_OPTIONS}:
            unknown.append(f"Unknown variable {name}: hcloud-cloud-controller-manager has none")
    return ignored, unknown


def read_token_file(path: Path) -> str:
    """The token in ``path`` (surrounding whitespace removed); ``OSError`` if unreadable."""
    return path.read_text(encoding="utf-8").strip()


def parse_options(options: Mapping[str, str], *, environ: Mapping[str, str]) -> HcloudOptions:
    """Validate ``options`` into :class:`HcloudOptions`; a token must be available."""
    refuse_unknown(PROVIDER, options, KNOWN_OPTIONS)
    options = {**_from_environment(environ), **options}
    network = options.get("network", "").strip()
    if not network:
        raise _fail("missing required option network (the network's id or name)")
    if not (network.isdigit() or _NETWORK_NAME.match(network)):
        raise _fail(f"network={network!r} is neither a network id nor a network name")
    endpoint = options.get("endpoint", DEFAULT_ENDPOINT).strip().rstrip("/")
    if not is_http_url(endpoint):
        raise _fail("endpoint must be an http:// or https:// URL")
    token_file: Path | None = None
    if "token-file" in options:
        token_file = Path(options["token-file"])
        try:
            token = read_token_file(token_file)
        except OSError as exc:
            raise _fail(f"token-file {token_file}: cannot read it ({exc.strerror})") from None
        if not token:
            raise _fail(f"token-file {token_file} is empty")
    elif not environ.get("HCLOUD_TOKEN", "").strip():
        raise _fail("no API token: set HCLOUD_TOKEN or the option token-file")
    return HcloudOptions(
        network=network,
        endpoint=endpoint,
        token_file=token_file,
        server_cache_seconds=seconds_option(
            PROVIDER, options, "server-cache-seconds", DEFAULT_SERVER_CACHE_SECONDS
        ),
        action_poll_seconds=seconds_option(
            PROVIDER, options, "action-poll-seconds", DEFAULT_ACTION_POLL_SECONDS, minimum=0.01
        ),
    )

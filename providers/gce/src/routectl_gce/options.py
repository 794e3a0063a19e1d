"""The ``gce`` provider's options: the GCE CCM's ``gce.conf`` keys, validated up front.

The keys are those of cloud-provider-gcp's ``ConfigGlobal`` (``providers/gce/gce.go``), read
from ``--provider-option key=value``, from routectl's ``--cloud-config`` (``key = value``
lines) or from the plugin's own ``cloud-config=<path>`` option, which reads the CCM's file
as gcfg reads it (the ``[global]`` section; names case-insensitive; ``"quoted"`` values with
``\\"``, ``\\\\``, ``\\n``, ``\\t`` escapes; ``;``/``#`` comments; a name alone is ``true``;
``node-tags`` and ``alpha-features`` may repeat). A key given in the file and as an option is
an error. Keys the CCM reads for other controllers (firewalls, load balancers) are accepted
and do not change routes.

Every problem is a :class:`~routectl.errors.ConfigError` with one line naming the key. Pure
but for reading the ``cloud-config`` file.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path

from routectl.errors import ConfigError
from routectl.plugin_options import is_http_url, option_error, refuse_unknown, seconds_option

PROVIDER = "gce"
GCE_CONF_KEYS = (
    "alpha-features",
    "api-endpoint",
    "container-api-endpoint",
    "local-zone",
    "multizone",
    "network-name",
    "network-project-id",
    "node-instance-prefix",
    "node-tags",
    "project-id",
    "regional",
    "secondary-range-name",
    "stack-type",
    "subnetwork-name",
    "token-body",
    "token-url",
)
"""``ConfigGlobal``'s gcfg names, cloud-provider-gcp@4e245312 ``providers/gce/gce.go``."""
OWN_KEYS = ("cloud-config", "threads", "wait-seconds")
KNOWN_OPTIONS = tuple(sorted(GCE_CONF_KEYS + OWN_KEYS))
MULTI_VALUED = frozenset({"node-tags", "alpha-features"})
DEFAULT_ENDPOINT = "https://compute.googleapis.com"
API_PATH = "/compute/v1/"
DEFAULT_THREADS = 16
DEFAULT_WAIT_SECONDS = 20.0
NETWORK_URL = "https://www.googleapis.com/compute/v1/projects/{project}/global/networks/{name}"
# Project ids are lower-case words; numeric project numbers are accepted too (gce.go).
PROJECT = re.compile(r"[a-z][-a-z0-9.:]{4,61}[a-z0-9]|[0-9]{1,20}")
RESOURCE_NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
NETWORK_PATH = re.compile(r"(?:.*/)?projects/([^/]+)/global/networks/([^/]+)")
NIL = "nil"  # token-url: "use application default credentials"
TRUE, FALSE = {"true", "yes", "on", "1", ""}, {"false", "no", "off", "0"}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GceOptions:
    """What the ``gce`` provider was configured with."""

    project_id: str
    """The project of the Nodes' instances; empty: the credentials' project."""
    network_project_id: str
    """The project of the network and its routes (XPN host project); empty: ``project_id``."""
    network_name: str
    """The network's name, or empty when ``network_url`` names it."""
    network_url: str
    """A full network URL from ``network-name``, else empty (built from the project)."""
    local_zone: str = ""
    multizone: bool = False
    regional: bool = False
    endpoint: str = DEFAULT_ENDPOINT
    """The Compute API's scheme, host and port (``api-endpoint`` less ``/compute/v1/``)."""
    token_url: str = ""
    token_body: str = dataclasses.field(default="", repr=False)
    node_tags: tuple[str, ...] = ()
    threads: int = DEFAULT_THREADS
    wait_seconds: float = DEFAULT_WAIT_SECONDS
    """How long one ``globalOperations.wait`` request is waited for before another is sent."""

    @property
    def zonal(self) -> bool:
        """Instances are looked up in ``local-zone`` alone (the CCM's single-zone mode)."""
        return bool(self.local_zone) and not (self.multizone or self.regional)

    def network(self, project: str) -> str:
        """The network's URL, its project defaulting to ``project``."""
        if self.network_url:
            return self.network_url
        return NETWORK_URL.format(
            project=self.network_project_id or project, name=self.network_name
        )


def _fail(message: str) -> ConfigError:
    return option_error(PROVIDER, message)


def unquote(value: str, *, where: str) -> str:
    """A gcfg value: surrounding blanks dropped, ``"..."`` parts unescaped, comments cut."""
    out: list[str] = []
    quoted = False
    chars = iter(value.strip())
    for char in chars:
        if char == "\\":
            escaped = next(chars, "")
            if escaped not in {"\\", '"', "n", "t"}:
                raise _fail(f"{where}: invalid escape \\{escaped} in {value!r}")
            out.append({"n": "\n", "t": "\t"}.get(escaped, escaped))
        elif char == '"':
            quoted = not quoted
        elif char in ";#" and not quoted:
            break
        else:
            out.append(char)
    if quoted:
        raise _fail(f"{where}: unterminated quote in {value!r}")
    return "".join(out).strip() if not value.strip().startswith('"') else "".join(out)


def _section(line: str, *, where: str) -> str:
    header = re.fullmatch(r"\[\s*([A-Za-z][-.A-Za-z0-9]*)\s*\]\s*([;#].*)?", line)
    if header is None:
        raise _fail(f"{where}: invalid section header {line!r}")
    if header.group(1).lower() != "global":
        raise _fail(f"{where}: unknown section [{header.group(1)}]; gce.conf has [global]")
    return "global"


def read_gce_conf(text: str, *, path: str) -> dict[str, list[str]]:
    """The ``[global]`` section of a gce.conf, as gcfg reads it: name -> values."""
    found: dict[str, list[str]] = {}
    section = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        where = f"cloud-config {path}:{number}"
        if not line or line[0] in ";#":
            continue
        if line.startswith("["):
            section = _section(line, where=where)
            continue
        if section != "global":
            raise _fail(f"{where}: {line!r} is outside the [global] section")
        name, sep, value = line.partition("=")
        key = name.strip().lower()
        if not re.fullmatch(r"[a-z][-a-z0-9]*", key):
            raise _fail(f"{where}: invalid name {name.strip()!r}")
        if key not in GCE_CONF_KEYS:
            raise _fail(f"{where}: unknown key {key!r}; gce.conf keys: {', '.join(GCE_CONF_KEYS)}")
        text_value = unquote(value, where=where) if sep else "true"
        if key in MULTI_VALUED:
            values = found.setdefault(key, [])
            if text_value:
                values.append(text_value)
            else:
                values.clear()  # gcfg: a blank value resets a multi-valued variable
        elif key in found:
            raise _fail(f"{where}: {key!r} is given twice")
        else:
            found[key] = [text_value]
    return found


def _flag(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key, "false").strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise _fail(f"{key}={options[key]!r} must be true or false")


def _endpoint(text: str) -> str:
    """``api-endpoint`` as the SDK wants it: scheme://host[:port], without the API's path."""
    if not text:
        return DEFAULT_ENDPOINT
    base = text.rstrip("/") + "/"
    for suffix in (API_PATH, "/"):
        if base.endswith(suffix):
            base = base[: -len(suffix)] or base
            break
    if not is_http_url(base) or base.count("/") != 2:  # noqa: PLR2004 -- scheme://host only
        # The URL is not echoed: it may carry user information.
        raise _fail(
            "api-endpoint must be an http(s) URL of the Compute API, optionally ending in "
            f"{API_PATH} (other API versions are not supported)"
        )
    return base


def _network(options: Mapping[str, str]) -> tuple[str, str]:
    """(name, url) from ``network-name``: a name, or a URL or path with a project."""
    text = options.get("network-name", "").strip()
    if not text:
        raise _fail(
            "missing network-name (the VPC network of the Nodes; the GCE CCM asks the metadata "
            "server when gce.conf has none, routectl needs it set)"
        )
    if "/" in text:
        match = NETWORK_PATH.fullmatch(text)
        if match is None:
            raise _fail(
                f"network-name={text!r}: a network URL must end in "
                "projects/PROJECT/global/networks/NAME"
            )
        return match.group(2), NETWORK_URL.format(project=match.group(1), name=match.group(2))
    if not RESOURCE_NAME.fullmatch(text):
        raise _fail(f"network-name={text!r} is not a network name (lower-case, digits, '-')")
    return text, ""


def _project(options: Mapping[str, str], key: str) -> str:
    project = options.get(key, "").strip()
    if project and not PROJECT.fullmatch(project):
        raise _fail(f"{key}={project!r} is not a project id or number")
    return project


def merged(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` (names lower-cased, values unquoted as gcfg would) with the keys of the
    ``cloud-config`` file they name, if any; a key in both is an error."""
    given = {
        key.lower(): unquote(value, where=f"option {key}")
        if key.lower() != "cloud-config"
        else value
        for key, value in options.items()
    }
    refuse_unknown(PROVIDER, given, KNOWN_OPTIONS)
    path = given.pop("cloud-config", "").strip()
    if not path:
        return given
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        detail = getattr(exc, "strerror", None) or str(exc)
        raise _fail(f"cloud-config {path}: cannot read: {detail}") from None
    from_file = read_gce_conf(text, path=path)
    both = sorted(set(from_file) & set(given))
    if both:
        raise _fail(
            f"cloud-config {path}: {', '.join(both)} also given as an option; give each once"
        )
    return {**given, **{key: ",".join(values) for key, values in from_file.items()}}


def parse_options(options: Mapping[str, str]) -> GceOptions:
    """Validate ``options`` (and the file ``cloud-config`` names) into :class:`GceOptions`."""
    given = merged(options)
    name, url = _network(given)
    token_url = given.get("token-url", "").strip()
    if token_url and token_url != NIL and not is_http_url(token_url):
        raise _fail("token-url must be an http(s) URL, or nil for application default credentials")
    local_zone = given.get("local-zone", "").strip()
    if local_zone and not RESOURCE_NAME.fullmatch(local_zone):
        raise _fail(f"local-zone={local_zone!r} is not a zone name such as us-central1-b")
    threads_text = given.get("threads", str(DEFAULT_THREADS))
    if not threads_text.isdigit() or not 1 <= int(threads_text) <= 256:  # noqa: PLR2004
        raise _fail(f"threads={threads_text!r} must be a whole number from 1 to 256")
    return GceOptions(
        project_id=_project(given, "project-id"),
        network_project_id=_project(given, "network-project-id"),
        network_name=name,
        network_url=url,
        local_zone=local_zone,
        multizone=_flag(given, "multizone"),
        regional=_flag(given, "regional"),
        endpoint=_endpoint(given.get("api-endpoint", "").strip()),
        token_url="" if token_url == NIL else token_url,
        token_body=given.get("token-body", ""),
        node_tags=tuple(t.strip() for t in given.get("node-tags", "").split(",") if t.strip()),
        threads=int(threads_text),
        wait_seconds=seconds_option(
            PROVIDER, given, "wait-seconds", DEFAULT_WAIT_SECONDS, minimum=1.0
        ),
    )

"""A ``--cloud-config`` file read as the cloud's own CCM reads it, turned into provider options.

cloud-provider-aws and cloud-provider-openstack read their file with gcfg
(``gcfg.FatalOnly(gcfg.ReadInto(...))``): INI-like sections (``[Global]``,
``[ServiceOverride "1"]``), ``name = value`` lines, ``;`` and ``#`` comments, double-quoted
values with ``\\"``, ``\\\\``, ``\\n``, ``\\t`` escapes, a trailing ``\\`` continuing a line,
section and variable names case-insensitive (a ``-`` matching ``_``). A malformed line is
fatal there and here; an unknown section or variable is not (FatalOnly drops gcfg's
"extra data" warnings) and is a warning here, so a typo does not pass unseen.

:func:`translate` maps the entries of the file to the plugin's options by the dialect of
the provider's CCM (:data:`DIALECTS`):

* a key that concerns routes becomes the option that does what it does in that CCM
  (AWS ``RouteTableID`` pins the table, ``KubernetesClusterID``/``Tag`` the cluster's tag,
  ``VPC``, ``Region`` or the region of ``Zone``, ``RoleARN``, an ``ec2``
  ``ServiceOverride``'s ``URL``;
  OpenStack ``[Global]`` auth, region, TLS (``ca-file``, ``tls-insecure``, client
  certificate), endpoint interface, clouds.yaml (``use-clouds``), ``[Route] router-id``);
* a key that concerns routes but that the plugin cannot honour (OpenStack trusts, domain
  ids) is a ConfigError: starting without it would fail every call;
* other keys that CCM knows are accepted and named once (:attr:`Translated.ignored`);
* for a provider with no dialect (``fake``, third-party plugins) every ``key = value`` is a
  provider option and sections are only headings, as before
  (:func:`routectl.config.ccm.parse_cloud_config`).

Pure: no I/O, no logging.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence

from routectl.config.ccm import parse_cloud_config
from routectl.errors import ConfigError

__all__ = ["DIALECTS", "Entry", "Translated", "read_gcfg", "translate"]

_SECTION = re.compile(r'^\[\s*([A-Za-z][A-Za-z0-9_.-]*)\s*(?:"((?:[^"\\]|\\.)*)")?\s*\]$')
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One ``name = value`` of the file, where it stands."""

    section: str
    """Lower case, as gcfg matches it."""
    subsection: str | None
    name: str
    """Lower case, ``-`` as ``_``, as gcfg matches it."""
    value: str
    line: int
    spelled: str
    """``[Section] Name`` as the file spells it, for messages."""


def _value(raw: str, where: str) -> str:
    """gcfg's value: comments cut outside quotes, quotes removed, escapes read, trimmed."""
    out: list[str] = []
    quoted = False
    i = 0
    pending_space = ""
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            if i + 1 >= len(raw) or raw[i + 1] not in _ESCAPES:
                raise ConfigError(f"{where}: invalid escape sequence in {raw.strip()!r}")
            out.append(pending_space + _ESCAPES[raw[i + 1]])
            pending_space = ""
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif not quoted and c in ";#":
            break
        elif not quoted and c.isspace():
            pending_space += c if out else ""
        else:
            out.append(pending_space + c)
            pending_space = ""
        i += 1
    if quoted:
        raise ConfigError(f"{where}: unterminated quoted value {raw.strip()!r}")
    return "".join(out)


def read_gcfg(text: str, *, path: str) -> list[Entry]:
    """The entries of a gcfg file; a malformed line is a ConfigError naming it."""
    entries: list[Entry] = []
    section: tuple[str, str | None, str] | None = None
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        start = number + 1
        raw = lines[number]
        number += 1
        while raw.rstrip().endswith("\\") and not raw.rstrip().endswith("\\\\"):
            raw = raw.rstrip()[:-1] + (lines[number] if number < len(lines) else "")
            number += 1
        where = f"--cloud-config {path}:{start}"
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("["):
            match = _SECTION.match(line.split(";")[0].split("#")[0].strip())
            if match is None:
                raise ConfigError(f"{where}: invalid section header {line!r}")
            name, sub = match.group(1), match.group(2)
            shown = f'[{name} "{sub}"]' if sub is not None else f"[{name}]"
            section = (name.lower(), sub, shown)
            continue
        if section is None:
            raise ConfigError(f"{where}: {line!r} comes before any [section]")
        key, sep, rest = line.partition("=")
        key = key.strip()
        if not _NAME.match(key):
            raise ConfigError(f"{where}: expected name = value, got {line!r}")
        value = _value(rest, where) if sep else "true"  # a bare name is a true boolean
        entries.append(
            Entry(
                section=section[0],
                subsection=section[1],
                name=key.lower().replace("-", "_"),
                value=value,
                line=start,
                spelled=f"{section[2]} {key}",
            )
        )
    return entries


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Translated:
    """What a file says for routectl: provider options, and the lines to log once."""

    options: dict[str, str]
    ignored: list[str] = dataclasses.field(default_factory=list)
    """``Ignoring [Section] Key: why`` (INFO)."""
    unknown: list[str] = dataclasses.field(default_factory=list)
    """Keys the CCM does not know (WARNING)."""


Mapper = Callable[[Sequence[Entry], str], Translated]


def _unknown(e: Entry, path: str, ccm: str) -> str:
    return f"Unknown key {e.spelled} in --cloud-config {path}:{e.line}: {ccm} has no such key"


def _last(entries: Sequence[Entry]) -> dict[tuple[str, str | None, str], Entry]:
    """gcfg's rule for a single-valued variable: the last assignment wins."""
    return {(e.section, e.subsection, e.name): e for e in entries}


_AWS_OPTIONS = {
    "region": "region",
    "vpc": "vpc-id",
    "routetableid": "route-table-id",
}
_AWS_IGNORED = {
    "subnetid": "the service controller's (load-balancer subnets)",
    "disablesecuritygroupingress": "the service controller's",
    "elbsecuritygroup": "the service controller's",
    "clusterserviceloadbalancerhealthprobemode": "the service controller's",
    "clusterservicesharedloadbalancerhealthprobeport": "the service controller's",
    "clusterservicesharedloadbalancerhealthprobepath": "the service controller's",
    "nlbsecuritygroupmode": "the service controller's",
    "nodeipfamilies": "the cloud-node controller's",
    "supportedtopologyinstancetypepattern": "the cloud-node controller's",
    "sourcearn": "routectl's AssumeRole carries no source ARN",
}
_AWS_OVERRIDE_KEYS = frozenset(
    {"service", "region", "url", "signingregion", "signingmethod", "signingname"}
)
_AZ = re.compile(r"^(([a-zA-Z]+-)+\d+)")


def _aws(entries: Sequence[Entry], path: str) -> Translated:
    """cloud-provider-aws's ``pkg/providers/v1/config`` (``[Global]``, ``[ServiceOverride]``)."""
    options: dict[str, str] = {}
    ignored: list[str] = []
    unknown: list[str] = []
    last = _last(entries)
    overrides: dict[str, dict[str, Entry]] = {}
    for (section, sub, name), e in last.items():
        if section == "serviceoverride" and sub is not None and name in _AWS_OVERRIDE_KEYS:
            overrides.setdefault(sub, {})[name] = e
        elif section != "global":
            unknown.append(_unknown(e, path, "cloud-provider-aws"))
        elif name in _AWS_OPTIONS:
            options[_AWS_OPTIONS[name]] = e.value.strip()
        elif name in _AWS_IGNORED:
            ignored.append(f"Ignoring {e.spelled}: {_AWS_IGNORED[name]}")
        elif name not in {"zone", "kubernetesclustertag", "kubernetesclusterid", "rolearn"}:
            unknown.append(_unknown(e, path, "cloud-provider-aws"))
    g = {name: e.value.strip() for (section, _, name), e in last.items() if section == "global"}
    options.update(_aws_derived(g, path))
    for number, fields in sorted(overrides.items()):
        service = fields.get("service")
        what = f'[ServiceOverride "{number}"]'
        region = fields["region"].value.strip() if "region" in fields else ""
        if service is None or service.value.strip().lower() != "ec2":
            ignored.append(f"Ignoring {what}: routectl calls EC2 only")
        elif region and options.get("region") and region != options["region"]:
            # cloud-provider-aws uses an override only for the region its clients are for.
            ignored.append(
                f"Ignoring {what}: it is for {region}, routectl calls {options['region']}"
            )
        elif "url" in fields:
            options["endpoint-url"] = fields["url"].value.strip()
    return Translated(options=options, ignored=ignored, unknown=unknown)


def _aws_derived(g: Mapping[str, str], path: str) -> dict[str, str]:
    """The options ``[Global]``'s RoleARN, Zone and cluster tags make."""
    options: dict[str, str] = {}
    if g.get("rolearn"):
        options["role-arn"] = g["rolearn"]
    if not g.get("region") and g.get("zone"):
        match = _AZ.match(g["zone"])
        if match is None:
            raise ConfigError(
                f"--cloud-config {path}: [Global] Zone {g['zone']!r} is not an AWS zone"
            )
        options["region"] = match.group(1)
    legacy, new = g.get("kubernetesclustertag", ""), g.get("kubernetesclusterid", "")
    if legacy and new and legacy != new:
        raise ConfigError(
            f"--cloud-config {path}: clusterID tags did not match: {new!r} vs {legacy!r}"
        )
    if legacy or new:
        options["cluster-id"] = legacy or new
    return options


_OPENSTACK_GLOBAL = {
    "auth_url": "auth-url",
    "region": "region",
    "user_id": "user-id",
    "username": "username",
    "password": "password",
    "tenant_id": "project-id",
    "tenant_name": "project-name",
    "user_domain_name": "user-domain-name",
    "tenant_domain_name": "project-domain-name",
    "application_credential_id": "application-credential-id",
    "application_credential_secret": "application-credential-secret",
    "ca_file": "ca-file",
    "tls_insecure": "tls-insecure",
    "cert_file": "cert-file",
    "key_file": "key-file",
    "os_endpoint_type": "interface",
    "use_clouds": "use-clouds",
    "clouds_file": "clouds-file",
    "cloud": "cloud",
}
"""``[Global]`` keys of cloud-provider-openstack's ``AuthOpts`` and the plugin option that
does what the key does there."""
_OPENSTACK_GLOBAL_REFUSED = {
    "trust_id": "Keystone trusts",
    "trustee_id": "Keystone trusts",
    "trustee_password": "Keystone trusts",
    "domain_id": "domain ids (give domain-name)",
    "user_domain_id": "domain ids (give user-domain-name)",
    "tenant_domain_id": "domain ids (give tenant-domain-name)",
    "application_credential_name": (
        "application credentials by name (give application-credential-id)"
    ),
}
"""Keys routectl's openstack plugin cannot honour: refused at start-up, since going on
without them would fail every call to the cloud."""
_OPENSTACK_SECTIONS = {
    "loadbalancer": "the service controller's",
    "loadbalancerclass": "the service controller's",
    "metadata": "the cloud-node controller's",
    "networking": "the cloud-node controller's",
    "blockstorage": "volumes are not routectl's",
}


def _openstack(entries: Sequence[Entry], path: str) -> Translated:
    """cloud-provider-openstack's ``cloud.conf`` (``[Global]`` auth, ``[Route]``, the rest)."""
    options: dict[str, str] = {}
    ignored: list[str] = []
    unknown: list[str] = []
    domain = ""
    for (section, _, name), e in _last(entries).items():
        if section == "global" and name in _OPENSTACK_GLOBAL:
            options[_OPENSTACK_GLOBAL[name]] = e.value.strip()
        elif section == "global" and name == "domain_name":
            domain = e.value.strip()
        elif section == "global" and name in _OPENSTACK_GLOBAL_REFUSED:
            raise ConfigError(
                f"--cloud-config {path}:{e.line}: {e.spelled} is not supported: routectl's "
                f"openstack provider does not authenticate with "
                f"{_OPENSTACK_GLOBAL_REFUSED[name]}"
            )
        elif section == "route" and name == "router_id":
            options["router-id"] = e.value.strip()
        elif section in _OPENSTACK_SECTIONS:
            ignored.append(f"Ignoring {e.spelled}: {_OPENSTACK_SECTIONS[section]}")
        else:
            unknown.append(_unknown(e, path, "cloud-provider-openstack"))
    if domain:  # gophercloud: the domain of both the user and the project, unless given
        options.setdefault("user-domain-name", domain)
        options.setdefault("project-domain-name", domain)
    return Translated(options=options, ignored=ignored, unknown=unknown)


DIALECTS: Mapping[str, Mapper] = {"aws": _aws, "openstack": _openstack}
"""How each provider's CCM reads its cloud config."""


def translate(provider: str, text: str, *, path: str) -> Translated:
    """The provider options and notes of a ``--cloud-config`` file for ``provider``."""
    if provider not in DIALECTS:
        return Translated(options=parse_cloud_config(text, path=path))
    read = DIALECTS[provider](read_gcfg(text, path=path), path)
    kept = {key: value for key, value in read.options.items() if value}  # empty: not set
    return dataclasses.replace(read, options=kept)

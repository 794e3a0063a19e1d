"""Field validation rules shared by the kinds: names, pod CIDRs and taints.

Promises: each function returns ``field.Error``-style :class:`~.status.FieldError` values
with kube-apiserver's paths and texts (``IsDNS1123Subdomain``, ``ValidatePathSegmentName``,
``ValidateNode``'s pod CIDR and taint rules); an empty list means valid. Nothing is raised.
"""

from __future__ import annotations

import functools
import ipaddress
import re

from routectl_sim.apiserver.status import FieldError, JsonObj

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_MAX_NAME_LENGTH = 253
_MAX_POD_CIDRS = 2
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_CIDR_DETAIL = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def dns_subdomain_errors(name: str, field: str = "metadata.name") -> list[FieldError]:
    """``IsDNS1123Subdomain`` as field errors."""
    errors = []
    if len(name) > _MAX_NAME_LENGTH:
        errors.append(
            FieldError(
                field=field,
                type="Invalid",
                value=name,
                detail="must be no more than 253 characters",
            )
        )
    if not _DNS_SUBDOMAIN.fullmatch(name):
        errors.append(
            FieldError(field=field, type="Invalid", value=name, detail=_DNS_SUBDOMAIN_MESSAGE)
        )
    return errors


def path_segment_errors(name: str, field: str = "metadata.name") -> list[FieldError]:
    """``ValidatePathSegmentName`` as field errors."""
    if name in (".", ".."):
        return [FieldError(field=field, type="Invalid", value=name, detail=f"may not be '{name}'")]
    return [
        FieldError(field=field, type="Invalid", value=name, detail=f"may not contain '{bad}'")
        for bad in ("/", "%")
        if bad in name
    ]


@functools.lru_cache(maxsize=1 << 17)
def _cidr_family(cidr: str) -> int | None:
    """The IP version of ``cidr`` as Go's ParseCIDR reads it, or ``None`` if it cannot
    (cached: every update of a Node validates its unchanged pod CIDRs again)."""
    if "/" not in cidr:  # Go's ParseCIDR needs a prefix; ip_network reads a /32
        return None
    try:
        return ipaddress.ip_network(cidr, strict=False).version
    except ValueError:
        return None


def pod_cidr_errors(cidrs: list[str]) -> list[FieldError]:
    """``ValidateNode``'s pod CIDR rules: valid CIDRs, at most one per IP family."""
    errors, families = [], []
    for index, cidr in enumerate(cidrs):
        family = _cidr_family(cidr)
        if family is None:
            errors.append(
                FieldError(
                    field=f"spec.podCIDRs[{index}]", type="Invalid", value=cidr, detail=_CIDR_DETAIL
                )
            )
        else:
            families.append(family)
    if (
        not errors
        and len(cidrs) > 1
        and (len(cidrs) > _MAX_POD_CIDRS or len(set(families)) < len(cidrs))
    ):
        errors.append(
            FieldError(
                field="spec.podCIDRs",
                type="Invalid",
                value=cidrs,
                detail="may specify no more than one CIDR for each IP family",
            )
        )
    return errors


def taint_errors(taints: list[JsonObj]) -> list[FieldError]:
    """``validateNodeTaints``: a key, a known effect, no duplicate key+effect."""
    errors, seen = [], set()
    for index, taint in enumerate(taints):
        path = f"spec.taints[{index}]"
        if not taint.get("key"):
            errors.append(
                FieldError(
                    field=f"{path}.key",
                    type="Invalid",
                    value="",
                    detail="name part must be non-empty",
                )
            )
        effect = taint.get("effect", "")
        if not effect:
            errors.append(FieldError(field=f"{path}.effect", type="Required"))
        elif effect not in _TAINT_EFFECTS:
            errors.append(
                FieldError(
                    field=f"{path}.effect",
                    type="NotSupported",
                    value=effect,
                    supported=_TAINT_EFFECTS,
                )
            )
        identity = (taint.get("key"), effect)
        if identity in seen:
            errors.append(FieldError(field=path, type="Duplicate", value=taint))
        seen.add(identity)
    return errors

"""CIDR parsing the way Kubernetes parses it.

Kubernetes parses CIDRs "sloppily" (``k8s.io/utils/net.ParseCIDRSloppy``): IPv4 octets may
carry leading zeros, read as decimal, and host bits are masked away (``10.0.0.1/8`` is
``10.0.0.0/8``). A prefix length is required. ``canonical`` gives the one spelling two
equivalent CIDRs share, so routes are compared by meaning rather than by spelling.
Pure: no I/O.
"""

from __future__ import annotations

import functools
import ipaddress
import re

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_IPV4_WITH_ZEROS = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_PREFIX = re.compile(r"^\d{1,3}$")


def parse_cidr(text: str) -> Network:
    """Parse ``text`` as Go's sloppy ``ParseCIDR`` does; ``ValueError`` names the input."""
    address, slash, prefix = text.partition("/")
    if not slash or not _PREFIX.match(prefix) or "%" in address:
        raise ValueError(f"invalid CIDR address: {text}")
    if _IPV4_WITH_ZEROS.match(address):
        address = ".".join(str(int(octet)) for octet in address.split("."))
    try:
        return ipaddress.ip_network(f"{address}/{int(prefix)}", strict=False)
    except ValueError:
        raise ValueError(f"invalid CIDR address: {text}") from None


@functools.lru_cache(maxsize=1 << 17)
def canonical(text: str) -> str:
    """Return the canonical spelling of the CIDR ``text``, or ``text`` itself if unparsable.

    Cached: planning compares the same few thousand spellings over and over.
    """
    try:
        return str(parse_cidr(text))
    except ValueError:
        return text


@functools.lru_cache(maxsize=1 << 17)
def network_or_none(text: str) -> Network | None:
    """:func:`parse_cidr`, or None when ``text`` does not parse (cached, like canonical)."""
    try:
        return parse_cidr(text)
    except ValueError:
        return None

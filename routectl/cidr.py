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
_IPV4_BITS = 32
_OCTET = 255


def parse_cidr(text: str) -> Network:
    """Parse ``text`` as Go's sloppy ``ParseCIDR`` does; ``ValueError`` names the input."""
    address, slash, prefix = text.partition("/")
    if not slash or not _PREFIX.match(prefix) or "%" in address:
        raise ValueError(f"invalid CIDR address: {text}")
    if _IPV4_WITH_ZEROS.match(address):
        octets = [int(octet) for octet in address.split(".")]
        bits = int(prefix)
        if bits <= _IPV4_BITS and max(octets) <= _OCTET:
            # The common case, built from its number: a third of ipaddress's text parse.
            value = (octets[0] << 24) | (octets[1] << 16) | (octets[2] << 8) | octets[3]
            return ipaddress.IPv4Network((value, bits), strict=False)
        address = ".".join(map(str, octets))  # out of range: ipaddress says why
    try:
        return ipaddress.ip_network(f"{address}/{int(prefix)}", strict=False)
    except ValueError:
        raise ValueError(f"invalid CIDR address: {text}") from None


@functools.lru_cache(maxsize=1 << 17)
def canonical(text: str) -> str:
    """Return the canonical spelling of the CIDR ``text``, or ``text`` itself if unparsable.

    Cached: planning compares the same few thousand spellings over and over (each spelling
    is parsed once, for both caches).
    """
    network = network_or_none(text)
    return text if network is None else str(network)


@functools.lru_cache(maxsize=1 << 17)
def network_or_none(text: str) -> Network | None:
    """:func:`parse_cidr`, or None when ``text`` does not parse (cached, like canonical)."""
    try:
        return parse_cidr(text)
    except ValueError:
        return None


def within(inner: Network, outer: Network) -> bool:
    """``inner.subnet_of(outer)`` (False across IP versions), from the numbers alone: no
    address objects are built, which matters when a plan checks every Node of a large
    cluster."""
    if inner.version != outer.version or inner.prefixlen < outer.prefixlen:
        return False
    shift = outer.max_prefixlen - outer.prefixlen
    return int(inner.network_address) >> shift == int(outer.network_address) >> shift

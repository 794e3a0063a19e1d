"""CIDR parsing the way Kubernetes parses it.

Kubernetes parses CIDRs "sloppily" (``k8s.io/utils/net.ParseCIDRSloppy``): IPv4 octets may
carry leading zeros, read as decimal, and host bits are masked away (``10.0.0.1/8`` is
``10.0.0.0/8``). A prefix length is required. ``canonical`` gives the one spelling two
equivalent CIDRs share, so routes are compared by meaning rather than by spelling.

A large cluster's plan reads every pod CIDR and every listed route several times: the
hot paths work on :data:`Span` numbers (:func:`span`, cached, built for IPv4 without an
``ipaddress`` object) and :class:`Clusters` (the cluster CIDRs as numbers, made once), and
:func:`canonical` spells an IPv4 CIDR from its numbers; each agrees with ``ipaddress``
(property-tested). Pure: no I/O.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_IPV4_WITH_ZEROS = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_PREFIX = re.compile(r"^\d{1,3}$")
_IPV4_CIDR = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\n?/(\d{1,3})\n?\Z")
_IPV4_BITS = 32
_IPV6_BITS = 128
_OCTET = 255
_IPV4_ALL = (1 << _IPV4_BITS) - 1

Span = tuple[int, int, int]
"""A parsed CIDR as numbers: (IP version, first address, prefix length), host bits masked."""


def parse_cidr(text: str) -> Network:
    """Parse ``text`` as Go's sloppy ``ParseCIDR`` does; ``ValueError`` names the input."""
    numbers = _ipv4_numbers(text)
    if numbers is not None:
        # The common case, built from its number: a third of ipaddress's text parse.
        return ipaddress.IPv4Network(numbers, strict=False)
    return _parse_slowly(text)


def _ipv4_numbers(text: str) -> tuple[int, int] | None:
    """(address, prefix length) of a well-formed sloppy IPv4 CIDR, host bits kept; None for
    anything else (which :func:`_parse_slowly` takes or refuses). One match reads what
    :func:`_parse_slowly`'s two patterns read (each ``$`` allows a final newline)."""
    found = _IPV4_CIDR.match(text)
    if found is None:
        return None
    a, b, c, d, bits = map(int, found.groups())
    if bits > _IPV4_BITS or a > _OCTET or b > _OCTET or c > _OCTET or d > _OCTET:
        return None
    return (a << 24) | (b << 16) | (c << 8) | d, bits


def _parse_slowly(text: str) -> Network:
    """:func:`parse_cidr` by ipaddress's text parser (IPv6, and IPv4 it refuses)."""
    address, slash, prefix = text.partition("/")
    if not slash or not _PREFIX.match(prefix) or "%" in address:
        raise ValueError(f"invalid CIDR address: {text}")
    if _IPV4_WITH_ZEROS.match(address):
        address = ".".join(str(int(octet)) for octet in address.split("."))  # ipaddress says why
    try:
        return ipaddress.ip_network(f"{address}/{int(prefix)}", strict=False)
    except ValueError:
        raise ValueError(f"invalid CIDR address: {text}") from None


@functools.lru_cache(maxsize=1 << 17)
def span(text: str) -> Span | None:
    """The :data:`Span` of the CIDR ``text`` (as :func:`parse_cidr` reads it), or None when
    it does not parse (cached: a plan asks for the same spellings over and over)."""
    numbers = _ipv4_numbers(text)
    if numbers is not None:
        value, bits = numbers
        return 4, value & (_IPV4_ALL ^ (_IPV4_ALL >> bits)), bits
    try:
        network = _parse_slowly(text)
    except ValueError:
        return None
    return network_span(network)


def network_span(network: Network) -> Span:
    """The :data:`Span` of ``network``."""
    return network.version, int(network.network_address), network.prefixlen


def span_end(found: Span) -> int:
    """The last address of ``found``."""
    version, start, bits = found
    return start | ((1 << ((_IPV4_BITS if version == 4 else _IPV6_BITS) - bits)) - 1)  # noqa: PLR2004


class Clusters:
    """CIDRs (the cluster CIDRs) as numbers, made once, to ask of many CIDRs whether they
    lie inside one of them (``inner.subnet_of(outer)``, never across IP versions)."""

    __slots__ = ("_outer",)

    def __init__(self, networks: Iterable[Network]) -> None:
        self._outer = tuple(
            (n.version, n.prefixlen, n.max_prefixlen - n.prefixlen, int(n.network_address))
            for n in networks
        )

    def hold(self, inner: Span) -> bool:
        """Whether ``inner`` lies inside one of them."""
        version, start, bits = inner
        for outer_version, outer_bits, shift, outer_start in self._outer:
            if (
                version == outer_version
                and bits >= outer_bits
                and start >> shift == outer_start >> shift
            ):
                return True
        return False

    def hold_text(self, text: str) -> bool:
        """Whether the CIDR ``text`` parses and lies inside one of them."""
        found = span(text)
        return found is not None and self.hold(found)


@functools.lru_cache(maxsize=1 << 17)
def canonical(text: str) -> str:
    """Return the canonical spelling of the CIDR ``text``, or ``text`` itself if unparsable.

    Cached: planning compares the same few thousand spellings over and over. An IPv4 CIDR
    is spelled from its :func:`span`, without an ``ipaddress`` object; a spelling that is
    canonical already is returned itself (no second copy of the string is kept).
    """
    found = span(text)
    if found is None:
        return text
    version, start, bits = found
    if version == 4:  # noqa: PLR2004
        spelled = f"{start >> 24}.{(start >> 16) & 255}.{(start >> 8) & 255}.{start & 255}/{bits}"
    else:
        spelled = str(ipaddress.IPv6Network((start, bits)))
    return text if spelled == text else spelled


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

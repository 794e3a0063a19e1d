"""The CCM's flag syntaxes that routectl had no use for before: TLS names, pflag's slices.

Each parser reads a flag's text as the cloud-controller-manager v1.36 (pflag, and
component-base's ``cli/flag``) reads it, and refuses what it refuses, in its words:

* :data:`CIPHER_SUITES`: ``--tls-cipher-suites``: Go's ``crypto/tls`` suite names (its
  secure and insecure lists, plus the two legacy ChaCha20 names), ``Cipher suite X not
  supported or doesn't exist`` otherwise; :data:`OPENSSL_CIPHERS` maps the TLS 1.2 ones to
  OpenSSL's names (Go does not configure TLS 1.3 suites, nor does Python);
* :data:`CURVES`: ``--tls-curve-preferences``, an int32 slice of Go ``tls.CurveID`` values,
  checked as ``TLSCurvePreferences`` checks them (range, duplicates, known to Go);
  :data:`OPENSSL_GROUPS` names each for OpenSSL;
* :data:`GO_TLS_VERSIONS`: ``--tls-min-version``'s names (``unknown tls version``);
* :data:`NAMED_CERT_KEY`: ``certfile,keyfile[:name,...]``; :data:`QUANTITY`: a
  ``resource.Quantity``; :data:`VMODULE`: klog's ``pattern=N,...``; :data:`INT32`,
  :data:`IP`: pflag's ``int32`` and ``ip``.

Pure: no I/O, no logging.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TypeVar

from routectl.config.option import Syntax
from routectl.config.syntax import parse_int

__all__ = [
    "CIPHER_SUITES", "CURVES", "GO_TLS_VERSIONS", "INT32", "IP", "NAMED_CERT_KEY",
    "OPENSSL_CIPHERS", "OPENSSL_GROUPS", "QUANTITY", "VMODULE", "maybe",
]  # fmt: skip

T = TypeVar("T")

OPENSSL_CIPHERS: dict[str, str] = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
}
"""Go's TLS 1.0-1.2 suite names (``tls.CipherSuites()``, ``tls.InsecureCipherSuites()`` and
component-base's legacy names) and OpenSSL's names for them."""
TLS13_SUITES = frozenset(
    {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
)
"""Accepted by name; neither Go nor Python lets TLS 1.3 suites be chosen."""
OPENSSL_GROUPS: dict[int, str] = {
    23: "prime256v1",
    24: "secp384r1",
    25: "secp521r1",
    29: "X25519",
    4588: "X25519MLKEM768",
}
"""The ``tls.CurveID`` values Go knows (CurveP256, P384, P521, X25519, X25519MLKEM768)."""
GO_TLS_VERSIONS = ("VersionTLS10", "VersionTLS11", "VersionTLS12", "VersionTLS13")
MAX_UINT16 = 2**16 - 1
INT32_RANGE = (-(2**31), 2**31 - 1)


def _list(text: str) -> list[str]:
    """pflag's stringSlice: comma-separated (an empty text is no item)."""
    return [p.strip() for p in text.split(",")] if text.strip() else []


def parse_cipher_suites(text: str) -> tuple[str, ...]:
    """``--tls-cipher-suites`` as component-base's ``TLSCipherSuites`` reads it."""
    names = tuple(_list(text))
    for name in names:
        if name not in OPENSSL_CIPHERS and name not in TLS13_SUITES:
            raise ValueError(f"Cipher suite {name} not supported or doesn't exist")
    return names


def parse_int32(text: str) -> int:
    """pflag's int32: a base-10 integer within int32."""
    value = parse_int(text)
    low, high = INT32_RANGE
    if not low <= value <= high:
        raise ValueError(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def parse_curves(text: str) -> tuple[int, ...]:
    """``--tls-curve-preferences`` as component-base's ``TLSCurvePreferences`` checks it."""
    seen: list[int] = []
    for part in _list(text):
        curve = parse_int32(part)
        if curve <= 0 or curve > MAX_UINT16:
            raise ValueError(f"curve preference {curve} is out of range (must be 1-{MAX_UINT16})")
        if curve in seen:
            raise ValueError(f"duplicate curve preference {curve}")
        if curve not in OPENSSL_GROUPS:
            raise ValueError(f"curve preference {curve} is not supported by the current Go version")
        seen.append(curve)
    return tuple(seen)


def parse_named_cert_key(text: str) -> str:
    """``certfile,keyfile[:name,...]``, as ``NamedCertKey.Set`` reads it (kept as text)."""
    keycert, sep, names = text.partition(":")
    if sep and not names.strip():
        raise ValueError("empty names list is not allowed")
    if len(keycert.split(",")) != 2:  # noqa: PLR2004 -- a certificate and a key
        raise ValueError("expected comma separated certificate and key file paths")
    return text


_QUANTITY = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE])?$")


def parse_quantity(text: str) -> str:
    """A ``resource.Quantity`` (``0``, ``64Ki``, ``1M``, ``1e3``), kept as text."""
    if not _QUANTITY.match(text.strip()):
        raise ValueError(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    return text


def parse_vmodule(text: str) -> str:
    """klog's ``pattern=N,...`` (N a non-negative integer), kept as text."""
    for part in _list(text):
        pattern, sep, level = part.partition("=")
        if not sep or not pattern or not level.isdigit():
            raise ValueError("syntax error: expect comma-separated list of filename=N")
    return text


def parse_ip(text: str) -> str:
    """pflag's ip: an IPv4 or IPv6 address."""
    try:
        ipaddress.ip_address(text.strip())
    except ValueError:
        raise ValueError(f"failed to parse IP: {text!r}") from None
    return text.strip()


def parse_tls_version(text: str) -> str:
    """A ``--tls-min-version`` name (empty: Go's default, TLS 1.2)."""
    if text and text not in GO_TLS_VERSIONS:
        raise ValueError(f"unknown tls version {text!r}")
    return text or "VersionTLS12"


def maybe(syntax: Syntax[T], metavar: str | None = None) -> Syntax[T | None]:
    """``syntax`` for an optional (ignored) flag: an empty text is None, "not set"."""
    return Syntax(
        metavar=metavar or syntax.metavar,
        parse=lambda text: syntax.parse(text) if text.strip() else None,
        show=lambda v: "" if v is None else syntax.show(v),
        bare=syntax.bare,
        slice=syntax.slice,
    )


CIPHER_SUITES: Syntax[tuple[str, ...]] = Syntax(
    metavar="NAME,...", parse=parse_cipher_suites, show=",".join, slice=True
)
CURVES: Syntax[tuple[int, ...]] = Syntax(
    metavar="ID,...", parse=parse_curves, show=lambda v: ",".join(map(str, v)), slice=True
)
INT32: Syntax[int] = Syntax(metavar="INT", parse=parse_int32, show=str)
IP: Syntax[str] = Syntax(metavar="IP", parse=parse_ip, show=str)
NAMED_CERT_KEY: Syntax[str] = Syntax(
    metavar="CERT,KEY[:NAME,...]", parse=parse_named_cert_key, show=str
)
QUANTITY: Syntax[str] = Syntax(metavar="QUANTITY", parse=parse_quantity, show=str)
VMODULE: Syntax[str] = Syntax(metavar="PATTERN=N,...", parse=parse_vmodule, show=str)
TLS_VERSION: Syntax[str] = Syntax(metavar="VERSION", parse=parse_tls_version, show=str)

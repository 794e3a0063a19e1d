"""The options of serving (/metrics, /healthz, /readyz), logging and shutdown.

Promises: plain HTTP and the CCM's secure serving (HTTPS with delegated authentication and
authorization) are declared with the CCM's flag names and defaults, except that routectl's
own port is off unless asked for. Pure: no I/O.
"""

from __future__ import annotations

import re

from routectl.config.ccm_syntax import CIPHER_SUITES, CURVES, GO_TLS_VERSIONS, TLS_VERSION
from routectl.config.groups import SECURE, SERVING
from routectl.config.option import (
    DURATION,
    OPTIONAL_STRING,
    Check,
    Syntax,
    at_least,
    host_port,
    matches,
    one_of,
    option,
    settings_dataclass,
    within,
)

__all__ = ["IP_ADDRESS", "PATHS", "PORT", "TLS_VERSIONS", "ServingOptions", "host_port_or_off"]

TLS_VERSIONS = GO_TLS_VERSIONS
PORT = within(0, 65535)
_IP = re.compile(r"^(\d{1,3}(\.\d{1,3}){3}|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$")
IP_ADDRESS = matches(_IP, reason="must be an IP address", refuses=("", "localhost", "1.2.3"))


def _paths(text: str) -> tuple[str, ...]:
    paths = tuple(filter(None, (p.strip() for p in text.split(","))))
    if not all(p.startswith("/") for p in paths):
        raise ValueError(f"expected absolute paths such as /healthz, got {text!r}")
    return paths


PATHS: Syntax[tuple[str, ...]] = Syntax(metavar="PATH,...", parse=_paths, show=",".join, slice=True)


PLAIN_DEFAULT = "0.0.0.0:10290"
BIND_ADDRESS: Syntax[str | None] = Syntax(
    metavar="HOST:PORT", parse=str, show=lambda v: PLAIN_DEFAULT if v is None else v
)
"""``--metrics-bind-address``: the text as given (empty is "off"); None when not given."""


def host_port_or_off() -> Check[str | None]:
    """``host:port``, or empty for "not served" (None: not given)."""
    plain = host_port()
    return Check(
        reason="must be host:port, or empty to serve no plain HTTP",
        ok=lambda v: v is None or v == "" or plain.ok(v),
        refuses=plain.refuses,
    )


@settings_dataclass
class ServingOptions:
    """What routectl serves, how it logs, how long it may take to stop."""

    # One option is a few lines of a table: one argument per line would hide the table.
    # fmt: off
    metrics_bind_address: str | None = option(
        default=None, syntax=BIND_ADDRESS, check=host_port_or_off(), group=SERVING,
        help=f"/metrics, /healthz and /readyz over plain HTTP; default {PLAIN_DEFAULT}, but none "
        "when --secure-port is set; empty: off",
    )
    """None: not given. With ``--secure-port`` only an explicit address serves plain HTTP
    beside HTTPS (:attr:`plain_address`)."""
    log_format: str = option(
        default="text", check=one_of("text", "json"), group=SERVING, aliases=("--logging-format",),
        help="log line format: klog's text or JSON",
    )
    verbosity: int = option(
        default=0, flag="--v", aliases=("-v",), metavar="LEVEL", group=SERVING,
        help="log verbosity, as klog's: 4 and above log at debug level",
    )
    bind_address: str = option(
        default="0.0.0.0", check=IP_ADDRESS, metavar="IP", group=SECURE,  # noqa: S104
        help="the address --secure-port listens on",
    )
    secure_port: int = option(
        default=0, check=PORT, metavar="PORT", group=SECURE,
        help="serve /metrics, /healthz, /readyz over HTTPS here, with delegated authn/z; 0: off",
    )
    tls_cert_file: str | None = option(
        default=None, syntax=OPTIONAL_STRING, metavar="PATH", group=SECURE,
        help="the serving certificate (PEM); self-signed when absent",
    )
    tls_private_key_file: str | None = option(
        default=None, syntax=OPTIONAL_STRING, metavar="PATH", group=SECURE,
        help="the serving certificate's key (PEM)",
    )
    cert_dir: str | None = option(
        default=None, syntax=OPTIONAL_STRING, metavar="DIR", group=SECURE,
        help="where the self-signed certificate is written (default: a temporary directory)",
    )
    tls_min_version: str = option(
        default="VersionTLS12", syntax=TLS_VERSION, check=one_of(*TLS_VERSIONS), group=SECURE,
        help="the lowest TLS version served (empty: VersionTLS12, Go's default)",
    )
    tls_cipher_suites: tuple[str, ...] = option(
        default=(), syntax=CIPHER_SUITES, group=SECURE,
        help="TLS 1.2 cipher suites of the secure port, Go's names (TLS 1.3's are fixed); "
        "empty: OpenSSL's defaults",
    )
    tls_curve_preferences: tuple[int, ...] = option(
        default=(), syntax=CURVES, group=SECURE,
        help="Go tls.CurveID values (23 P-256, 24 P-384, 25 P-521, 29 X25519); the secure "
        "port offers the first one OpenSSL knows (Python's ssl sets one group)",
    )
    authentication_kubeconfig: str | None = option(
        default=None, syntax=OPTIONAL_STRING, metavar="PATH", group=SECURE,
        help="kubeconfig for TokenReviews (default: --kubeconfig, or in-cluster)",
    )
    authentication_token_webhook_cache_ttl: float = option(
        default=10.0, syntax=DURATION, check=at_least(0.0), group=SECURE,
        help="how long a TokenReview's answer is cached",
    )
    authorization_kubeconfig: str | None = option(
        default=None, syntax=OPTIONAL_STRING, metavar="PATH", group=SECURE,
        help="kubeconfig for SubjectAccessReviews (default: --kubeconfig, or in-cluster)",
    )
    authorization_always_allow_paths: tuple[str, ...] = option(
        default=("/healthz", "/readyz", "/livez"), syntax=PATHS, group=SECURE,
        help="paths served without authentication or authorization",
    )
    authorization_webhook_cache_authorized_ttl: float = option(
        default=10.0, syntax=DURATION, check=at_least(0.0), group=SECURE,
        help="how long an allowing SubjectAccessReview is cached",
    )
    authorization_webhook_cache_unauthorized_ttl: float = option(
        default=10.0, syntax=DURATION, check=at_least(0.0), group=SECURE,
        help="how long a denying SubjectAccessReview is cached",
    )
    graceful_shutdown_timeout: float = option(
        default=30.0, syntax=DURATION, check=at_least(0.0), group=SERVING,
        help="on SIGTERM, how long the sync in flight may take to finish",
    )
    # fmt: on

    @property
    def plain_address(self) -> str:
        """Where plain HTTP is served ("" for nowhere): ``--metrics-bind-address`` as given,
        else :data:`PLAIN_DEFAULT` unless ``--secure-port`` serves HTTPS (serving as asked:
        an operator who chose the secure port gets no open port beside it)."""
        if self.metrics_bind_address is not None:
            return self.metrics_bind_address
        return "" if self.secure_port else PLAIN_DEFAULT

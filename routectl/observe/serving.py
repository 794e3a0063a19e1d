"""Serving like the CCM: HTTPS with delegated authentication and authorization.

With ``--secure-port``, ``/metrics``, ``/healthz``, ``/readyz`` and ``/livez`` are served over
HTTPS on ``--bind-address``, as the cloud-controller-manager serves them:

* the certificate is ``--tls-cert-file``/``--tls-private-key-file``, or a self-signed one
  made at start-up (``<host>@<unix time>``, valid for the host's names and addresses),
  written to ``--cert-dir`` or a temporary directory: ECDSA P-256 (made in a millisecond),
  or RSA-2048 as client-go makes it when ``--tls-cipher-suites`` names an RSA suite for
  TLS 1.2 (an ECDSA certificate could serve none of those); ``--tls-min-version`` is
  honoured (as far as OpenSSL's security level allows TLS 1.0 and 1.1),
  ``--tls-cipher-suites`` chooses the TLS 1.2 suites (Go's names, OpenSSL's suites), and a
  ``--tls-cert-file`` whose key can serve none of them (an ECDSA key with RSA suites only)
  is refused at start-up unless TLS 1.2 is off; ``--tls-curve-preferences``
  the key-exchange group (the first one OpenSSL knows: Python's ssl sets one group);
  HTTP/1.1 only, so HTTP/2 is always off (``--disable-http2-serving``'s true);
* a request's bearer token is authenticated by a TokenReview, and the user (or
  ``system:anonymous`` without a token) is authorized by a SubjectAccessReview for the
  path and the verb (``get``), both against the API server and both cached (answers for
  ``--authentication-token-webhook-cache-ttl``, allowing and denying decisions for
  ``--authorization-webhook-cache-authorized-ttl`` and ``-unauthorized-ttl``);
* paths of ``--authorization-always-allow-paths`` (the probes, by default) are served to
  anyone, without a review;
* an unknown token is 401 ``Unauthorized``; a user without the right is 403
  ``forbidden: User "u" cannot get path "/metrics"``; a review the API server could not
  answer is never cached (401 when authenticating, 500 when authorizing) and is logged.

Time is the running loop's clock; tokens are cached by their SHA-256, never kept as text.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import hashlib
import ipaddress
import logging
import shutil
import socket
import ssl
import tempfile
import warnings
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web

from routectl.config.ccm_syntax import OPENSSL_CIPHERS, OPENSSL_GROUPS
from routectl.errors import ConfigError, KubeError

logger = logging.getLogger("routectl.serving")
ANONYMOUS = {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
TLS_VERSIONS = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ReviewApi(Protocol):
    """The two reviews delegated authn/authz asks the API server for."""

    async def review_token(self, token: str) -> dict[str, Any]: ...

    async def review_access(self, spec: dict[str, Any]) -> dict[str, Any]: ...


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AuthSettings:
    """How long reviews are cached, and which paths need none."""

    token_ttl: float = 10.0
    allowed_ttl: float = 10.0
    denied_ttl: float = 10.0
    always_allow: tuple[str, ...] = ("/healthz", "/readyz", "/livez")


class _Cache:
    """Answers kept until a deadline on the loop's clock."""

    def __init__(self) -> None:
        self._entries: dict[object, tuple[float, Any]] = {}

    def get(self, key: object) -> Any:
        now = asyncio.get_running_loop().time()
        found = self._entries.get(key)
        if found is None or found[0] <= now:
            self._entries.pop(key, None)
            return None
        return found[1]

    def put(self, key: object, value: Any, ttl: float) -> None:
        if ttl > 0:
            self._entries[key] = (asyncio.get_running_loop().time() + ttl, value)


class DelegatedAuth:
    """Authenticates tokens and authorizes requests through the API server, with caches."""

    def __init__(self, api: ReviewApi, settings: AuthSettings) -> None:
        self._api = api
        self.settings = settings
        self._users = _Cache()
        self._decisions = _Cache()

    async def user(self, token: str | None) -> dict[str, Any] | None:
        """The user a bearer token stands for (anonymous without one); None: unknown token."""
        if token is None:
            return ANONYMOUS
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._users.get(key)
        if cached is not None:
            return cached or None
        status = await self._api.review_token(token)
        user = status.get("user") if status.get("authenticated") else None
        found = user if isinstance(user, dict) and user.get("username") else None
        self._users.put(key, found or {}, self.settings.token_ttl)
        return found

    async def allowed(self, user: dict[str, Any], *, verb: str, path: str) -> bool:
        """Whether ``user`` may ``verb`` the non-resource ``path``."""
        groups = tuple(user.get("groups") or ())
        key = (user.get("username"), groups, verb, path)
        cached = self._decisions.get(key)
        if cached is not None:
            return bool(cached)
        spec = {
            "user": user.get("username", ""),
            "groups": list(groups),
            "uid": user.get("uid", ""),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.get("extra"):
            spec["extra"] = user["extra"]
        decision = bool((await self._api.review_access(spec)).get("allowed"))
        ttl = self.settings.allowed_ttl if decision else self.settings.denied_ttl
        self._decisions.put(key, decision, ttl)
        return decision

    def middleware(self) -> Any:
        """The aiohttp middleware that lets only authorized requests through."""

        @web.middleware
        async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
            if request.path in self.settings.always_allow:
                return await handler(request)
            try:
                user = await self.user(_bearer(request.headers.get("Authorization", "")))
            except KubeError as exc:
                logger.warning("Could not authenticate a request to %s: %s", request.path, exc)
                user = None
            if user is None:
                return web.Response(status=401, text="Unauthorized\n")
            verb = "get" if request.method in {"GET", "HEAD"} else request.method.lower()
            try:
                ok = await self.allowed(user, verb=verb, path=request.path)
            except KubeError as exc:
                logger.warning("Could not authorize a request to %s: %s", request.path, exc)
                return web.Response(status=500, text="Internal Server Error: authorization\n")
            if not ok:
                who = user.get("username", "")
                text = f'forbidden: User "{who}" cannot {verb} path "{request.path}"\n'
                return web.Response(status=403, text=text)
            return await handler(request)

        return check


def _bearer(header: str) -> str | None:
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def tls_context(
    *,
    cert_file: str | None,
    key_file: str | None,
    cert_dir: str | None,
    min_version: str,
    bind_address: str,
    cipher_suites: Sequence[str] = (),
    curves: Sequence[int] = (),
) -> ssl.SSLContext:
    """The server's TLS context: the given pair, or a self-signed one made now."""
    scratch: Path | None = None
    tls12 = TLS_VERSIONS[min_version] < ssl.TLSVersion.TLSv1_3
    suites = [n for n in cipher_suites if n in OPENSSL_CIPHERS] if tls12 else []
    given = cert_file is not None and key_file is not None
    if cert_file is None or key_file is None:
        rsa_key = any(_suite_key(n) == "RSA" for n in suites)
        cert_file, key_file = self_signed(
            cert_dir=cert_dir, bind_address=bind_address, rsa_key=rsa_key
        )
        if cert_dir is None:  # made in a temporary directory: gone once loaded
            scratch = Path(cert_file).parent
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with warnings.catch_warnings():  # TLS 1.0 and 1.1 are deprecated in Python, not refused
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = TLS_VERSIONS[min_version]
    context.set_alpn_protocols(["http/1.1"])
    _choose_suites(context, cipher_suites)
    _choose_group(context, curves)
    try:
        context.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"--tls-cert-file {cert_file}, --tls-private-key-file {key_file}: cannot load: {exc}"
        ) from None
    finally:
        if scratch is not None:  # the key lives in the context only: no file is left behind
            shutil.rmtree(scratch, ignore_errors=True)
    if given and suites:
        _check_key_fits_suites(cert_file, suites)
    return context


def _suite_key(name: str) -> str:
    """The key a TLS 1.2 suite's certificate must have: ``ECDSA`` or ``RSA``."""
    return "ECDSA" if "_ECDSA_" in name else "RSA"


def _check_key_fits_suites(cert_file: str, suites: Sequence[str]) -> None:
    """A certificate whose key can serve none of the TLS 1.2 suites is a ConfigError: every
    TLS 1.2 handshake would fail, and nothing would say why."""
    from cryptography import x509  # noqa: PLC0415 -- only when suites are chosen
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa  # noqa: PLC0415

    try:
        key = x509.load_pem_x509_certificate(Path(cert_file).read_bytes()).public_key()
    except (OSError, ValueError):
        return  # loaded by OpenSSL already; a form cryptography cannot read is not judged
    if isinstance(key, rsa.RSAPublicKey):
        kind = "RSA"
    elif isinstance(
        key, ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey | ed448.Ed448PublicKey
    ):
        kind = "ECDSA"  # OpenSSL serves EdDSA keys with the ECDSA suites in TLS 1.2
    else:
        return
    if not any(_suite_key(n) == kind for n in suites):
        raise ConfigError(
            f"--tls-cipher-suites {','.join(suites)}: no TLS 1.2 suite listed can be served "
            f"with the {kind} key of --tls-cert-file {cert_file}; list a suite for {kind} "
            f"(TLS_ECDHE_{kind}_WITH_...) or set --tls-min-version=VersionTLS13"
        )


def _choose_suites(context: ssl.SSLContext, names: Sequence[str]) -> None:
    """``--tls-cipher-suites``: the TLS 1.2 suites named (TLS 1.3's cannot be chosen)."""
    wanted = [OPENSSL_CIPHERS[n] for n in names if n in OPENSSL_CIPHERS]
    if not wanted:
        return
    try:
        context.set_ciphers(":".join(dict.fromkeys(wanted)))
    except ssl.SSLError:
        raise ConfigError(
            f"--tls-cipher-suites {','.join(names)}: OpenSSL ({ssl.OPENSSL_VERSION}) offers "
            "none of these suites"
        ) from None


def _choose_group(context: ssl.SSLContext, curves: Sequence[int]) -> None:
    """``--tls-curve-preferences``: the first group OpenSSL knows (Python sets one)."""
    if not curves:
        return
    for curve in curves:
        try:
            context.set_ecdh_curve(OPENSSL_GROUPS[curve])
        except ValueError:
            continue
        if len(curves) > 1:
            logger.info(
                "--tls-curve-preferences: the secure port offers curve %d (%s) only; "
                "Python's ssl sets one group",
                curve,
                OPENSSL_GROUPS[curve],
            )
        return
    raise ConfigError(
        f"--tls-curve-preferences {','.join(map(str, curves))}: OpenSSL "
        f"({ssl.OPENSSL_VERSION}) knows none of these curves"
    )


def self_signed(
    *, cert_dir: str | None, bind_address: str, rsa_key: bool = False
) -> tuple[str, str]:
    """Write a self-signed certificate and key (as the CCM makes one); their paths. The key
    is ECDSA P-256, or RSA-2048 (client-go's) with ``rsa_key``: about 100 ms more to make."""
    from cryptography import x509  # noqa: PLC0415 -- only when no certificate is given
    from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec, rsa  # noqa: PLC0415
    from cryptography.x509.oid import NameOID  # noqa: PLC0415

    host = socket.gethostname() or "localhost"
    now = datetime.datetime.now(datetime.UTC)
    key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if rsa_key
        else ec.generate_private_key(ec.SECP256R1())
    )
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{int(now.timestamp())}")])
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in sorted({host, "localhost"})]
    addresses = {"127.0.0.1", "::1"}
    if not ipaddress.ip_address(bind_address).is_unspecified:
        addresses.add(bind_address)
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in sorted(addresses)]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    where = Path(cert_dir) if cert_dir else Path(tempfile.mkdtemp(prefix="routectl-tls-"))
    try:
        where.mkdir(parents=True, exist_ok=True)
        cert_path, key_path = where / "routectl.crt", where / "routectl.key"
        key_path.touch(mode=0o600, exist_ok=True)
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    except OSError as exc:
        raise ConfigError(f"--cert-dir {where}: cannot write the certificate: {exc}") from None
    if cert_dir:
        logger.info("Generated a self-signed certificate in %s", where)
    else:
        logger.info("Generated a self-signed certificate (no --cert-dir: kept in memory only)")
    return str(cert_path), str(key_path)

"""Serving like the CCM: HTTPS, delegated authentication and authorization, cached, the
probes always allowed; the reviews go to the (fake) API server over the real client."""

from __future__ import annotations

import asyncio
import ssl
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from routectl.errors import ConfigError
from routectl.kube import KubeClient
from routectl.observe.probes import ProbeServer
from routectl.observe.serving import AuthSettings, DelegatedAuth, self_signed, tls_context
from tests.integration.conftest import Cluster

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

READER = "reader-token"
STRANGER = "stranger-token"


class Served:
    """An HTTPS probe server with delegated auth, and a client that trusts its certificate."""

    def __init__(self, url: str, trust: ssl.SSLContext) -> None:
        self.url, self.trust = url, trust

    async def get(self, path: str, token: str | None = None) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            aiohttp.ClientSession() as http,
            http.get(self.url + path, headers=headers, ssl=self.trust) as response,
        ):
            return response.status, await response.text()


@pytest.fixture
async def served(cluster: Cluster, tmp_path: Path) -> AsyncIterator[Served]:
    """A secure probe server on 127.0.0.1 with a self-signed certificate in tmp_path."""
    cluster.server.add_review_token(READER, username="system:serviceaccount:monitoring:prometheus", groups=("system:serviceaccounts",))  # fmt: skip
    cluster.server.add_review_token(STRANGER, username="stranger")
    cluster.server.grant_review("system:serviceaccount:monitoring:prometheus", verb="get", path="/metrics")  # fmt: skip
    kube = await KubeClient.connect(kubeconfig=str(cluster.kubeconfig))
    tls = tls_context(cert_file=None, key_file=None, cert_dir=str(tmp_path), min_version="VersionTLS12", bind_address="127.0.0.1")  # fmt: skip
    auth = DelegatedAuth(kube, AuthSettings())
    server = ProbeServer(
        registry=CollectorRegistry(),
        ready=lambda: (True, "ok"),
        middlewares=[auth.middleware()],
        tls=tls,
    )
    await server.start("127.0.0.1:0")
    trust = ssl.create_default_context(cafile=str(tmp_path / "routectl.crt"))
    try:
        yield Served(f"https://127.0.0.1:{server.port}", trust)
    finally:
        await server.aclose()
        await kube.aclose()


def reviews(cluster: Cluster, kind: str) -> int:
    return sum(1 for r in cluster.server.requests if r.path.endswith(f"/{kind}"))


async def test_probes_are_served_to_anyone_without_a_review(
    served: Served, cluster: Cluster
) -> None:
    """/healthz, /readyz and /livez: 200 without a token, and no review is asked for."""
    for path in ("/healthz", "/readyz", "/livez"):
        assert (await served.get(path))[0] == 200
    assert reviews(cluster, "tokenreviews") == reviews(cluster, "subjectaccessreviews") == 0


async def test_metrics_need_an_authorized_token(served: Served) -> None:
    """Anonymous: 403; unknown token: 401; known but not allowed: 403; allowed: 200."""
    status, text = await served.get("/metrics")
    assert (status, text.strip()) == (403, 'forbidden: User "system:anonymous" cannot get path "/metrics"')  # fmt: skip
    assert (await served.get("/metrics", "no-such-token"))[0] == 401
    status, text = await served.get("/metrics", STRANGER)
    assert (status, text.strip()) == (403, 'forbidden: User "stranger" cannot get path "/metrics"')
    status, text = await served.get("/metrics", READER)
    assert status == 200
    assert "# HELP" in text or text == ""


async def test_reviews_are_cached_for_their_ttl(served: Served, cluster: Cluster) -> None:
    """Ten scrapes within 10 s cost one TokenReview and one SubjectAccessReview; after the
    TTL, one more of each."""
    for _ in range(10):
        assert (await served.get("/metrics", READER))[0] == 200
    assert (reviews(cluster, "tokenreviews"), reviews(cluster, "subjectaccessreviews")) == (1, 1)
    await asyncio.sleep(11)
    assert (await served.get("/metrics", READER))[0] == 200
    assert (reviews(cluster, "tokenreviews"), reviews(cluster, "subjectaccessreviews")) == (2, 2)


async def test_a_review_the_api_server_cannot_answer_is_not_cached(
    served: Served, cluster: Cluster
) -> None:
    """An unavailable API server: 401 (authentication failed), then 200 once it is back."""
    cluster.server.unavailable = True
    assert (await served.get("/metrics", READER))[0] == 401
    cluster.server.unavailable = False
    assert (await served.get("/metrics", READER))[0] == 200


async def test_the_self_signed_certificate_names_the_loopback_address(served: Served) -> None:
    """A client verifying the certificate (hostname 127.0.0.1 included) connects."""
    assert served.trust.verify_mode == ssl.CERT_REQUIRED
    assert (await served.get("/healthz"))[0] == 200


async def test_tls_min_version_is_honoured(tmp_path: Path) -> None:
    """With VersionTLS13, a client limited to TLS 1.2 cannot connect."""
    tls = tls_context(cert_file=None, key_file=None, cert_dir=str(tmp_path), min_version="VersionTLS13", bind_address="127.0.0.1")  # fmt: skip
    server = ProbeServer(registry=CollectorRegistry(), ready=lambda: (True, "ok"), tls=tls)
    await server.start("127.0.0.1:0")
    old = ssl.create_default_context(cafile=str(tmp_path / "routectl.crt"))
    old.maximum_version = ssl.TLSVersion.TLSv1_2
    try:
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.ClientError):
                await http.get(f"https://127.0.0.1:{server.port}/healthz", ssl=old)
    finally:
        await server.aclose()


async def handshake(
    tmp_path: Path, client: ssl.SSLContext, **tls_options: object
) -> tuple[str, str] | None:
    """Serve with ``tls_options`` (the certificate of :func:`client`) and connect with
    ``client``: (TLS version, cipher), or None when the handshake fails."""
    cert, key = str(tmp_path / "routectl.crt"), str(tmp_path / "routectl.key")
    tls = tls_context(cert_file=cert, key_file=key, cert_dir=None, min_version="VersionTLS12", bind_address="127.0.0.1", **tls_options)  # type: ignore[arg-type]  # fmt: skip
    server = ProbeServer(registry=CollectorRegistry(), ready=lambda: (True, "ok"), tls=tls)
    await server.start("127.0.0.1:0")
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=client)
    except (ssl.SSLError, ConnectionError):
        return None
    else:
        info = writer.get_extra_info("ssl_object")
        version, cipher = info.version(), info.cipher()[0]
        writer.close()
        await writer.wait_closed()
        return version, cipher
    finally:
        await server.aclose()


def client(tmp_path: Path, *, tls12: bool = False) -> ssl.SSLContext:
    """A client trusting the self-signed certificate in ``tmp_path`` (made ECDSA P-256 when
    there is none yet)."""
    if not (tmp_path / "routectl.crt").exists():
        self_signed(cert_dir=str(tmp_path), bind_address="127.0.0.1")
    trust = ssl.create_default_context(cafile=str(tmp_path / "routectl.crt"))
    if tls12:
        trust.maximum_version = ssl.TLSVersion.TLSv1_2
    return trust


async def test_tls_cipher_suites_choose_the_tls12_suites(tmp_path: Path) -> None:
    """Go's suite names choose OpenSSL's suites: a TLS 1.2 client gets the one named."""
    only = "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
    chosen = await handshake(tmp_path, client(tmp_path, tls12=True), cipher_suites=(only,))
    assert chosen == ("TLSv1.2", "ECDHE-ECDSA-CHACHA20-POLY1305")
    default = await handshake(tmp_path, client(tmp_path, tls12=True))
    assert default is not None
    assert default[1] != "ECDHE-ECDSA-CHACHA20-POLY1305"


def test_cipher_suites_openssl_does_not_offer_are_a_start_up_error(tmp_path: Path) -> None:
    client(tmp_path)
    with pytest.raises(ConfigError, match="--tls-cipher-suites TLS_RSA_WITH_RC4_128_SHA: OpenSSL"):
        tls_context(cert_file=str(tmp_path / "routectl.crt"), key_file=str(tmp_path / "routectl.key"), cert_dir=None, min_version="VersionTLS12", bind_address="127.0.0.1", cipher_suites=("TLS_RSA_WITH_RC4_128_SHA",))  # fmt: skip


async def test_tls_curve_preferences_choose_the_group(tmp_path: Path) -> None:
    """--tls-curve-preferences=24 (P-384): a client offering P-256 only cannot connect; one
    offering P-384 can."""
    p256 = client(tmp_path)
    p256.set_ecdh_curve("prime256v1")
    assert await handshake(tmp_path, p256, curves=(24,)) is None
    p384 = client(tmp_path)
    p384.set_ecdh_curve("secp384r1")
    assert await handshake(tmp_path, p384, curves=(24,)) is not None
    assert await handshake(tmp_path, p256) is not None  # no preference: OpenSSL's groups


async def test_the_secure_port_speaks_http11_only(tmp_path: Path) -> None:
    """HTTP/2 is never served (the CCM's --disable-http2-serving=true): ALPN says http/1.1."""
    h2 = client(tmp_path)
    h2.set_alpn_protocols(["h2", "http/1.1"])
    cert, key = str(tmp_path / "routectl.crt"), str(tmp_path / "routectl.key")
    tls = tls_context(cert_file=cert, key_file=key, cert_dir=None, min_version="VersionTLS12", bind_address="127.0.0.1")  # fmt: skip
    server = ProbeServer(registry=CollectorRegistry(), ready=lambda: (True, "ok"), tls=tls)
    await server.start("127.0.0.1:0")
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=h2)
        assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "http/1.1"
        writer.close()
        await writer.wait_closed()
    finally:
        await server.aclose()


def test_a_self_signed_certificate_without_cert_dir_leaves_no_file(tmp_path: Path) -> None:
    """Without --cert-dir the self-signed key lives in the TLS context only: its temporary
    directory is gone once loaded, so restarts leave no private keys behind in /tmp."""
    before = set(Path(tempfile.gettempdir()).glob("routectl-tls-*"))
    tls_context(
        cert_file=None, key_file=None, cert_dir=None, min_version="VersionTLS12",
        bind_address="127.0.0.1",
    )  # fmt: skip
    assert set(Path(tempfile.gettempdir()).glob("routectl-tls-*")) == before


async def shake(tls: ssl.SSLContext, client: ssl.SSLContext) -> tuple[str, str] | None:
    """Serve with ``tls`` and connect with ``client``: (TLS version, cipher), or None when
    the handshake fails."""
    server = ProbeServer(registry=CollectorRegistry(), ready=lambda: (True, "ok"), tls=tls)
    await server.start("127.0.0.1:0")
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=client)
    except (ssl.SSLError, ConnectionError):
        return None
    else:
        info = writer.get_extra_info("ssl_object")
        version, cipher = info.version(), info.cipher()[0]
        writer.close()
        await writer.wait_closed()
        return version, cipher
    finally:
        await server.aclose()


def key_of(path: Path) -> object:
    from cryptography import x509  # noqa: PLC0415

    return x509.load_pem_x509_certificate(path.read_bytes()).public_key()


async def test_the_self_signed_certificate_serves_rsa_only_suites_at_tls12(tmp_path: Path) -> None:
    """--tls-cipher-suites with RSA suites only and no --tls-cert-file: the self-signed
    certificate is RSA (client-go's kind), so a TLS 1.2 client gets the suite named."""
    from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: PLC0415

    only = "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
    tls = tls_context(cert_file=None, key_file=None, cert_dir=str(tmp_path), min_version="VersionTLS12", bind_address="127.0.0.1", cipher_suites=(only,))  # fmt: skip
    key = key_of(tmp_path / "routectl.crt")
    assert isinstance(key, rsa.RSAPublicKey)
    assert key.key_size == 2048
    chosen = await shake(tls, client(tmp_path, tls12=True))
    assert chosen == ("TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256")


async def test_a_mixed_list_gets_an_rsa_certificate_and_no_list_an_ecdsa_one(
    tmp_path: Path,
) -> None:
    """A list naming RSA suites makes an RSA certificate, as the CCM's is: a client offering
    the RSA suite connects at TLS 1.2. Without a list the certificate stays ECDSA P-256
    (made in a millisecond) and TLS 1.2 clients get an ECDSA suite."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa  # noqa: PLC0415

    mixed = ("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384")
    tls = tls_context(cert_file=None, key_file=None, cert_dir=str(tmp_path / "a"), min_version="VersionTLS12", bind_address="127.0.0.1", cipher_suites=mixed)  # fmt: skip
    assert isinstance(key_of(tmp_path / "a" / "routectl.crt"), rsa.RSAPublicKey)
    rsa_client = client(tmp_path / "a", tls12=True)
    rsa_client.set_ciphers("ECDHE-RSA-AES256-GCM-SHA384")
    assert await shake(tls, rsa_client) == ("TLSv1.2", "ECDHE-RSA-AES256-GCM-SHA384")
    tls = tls_context(cert_file=None, key_file=None, cert_dir=str(tmp_path / "b"), min_version="VersionTLS12", bind_address="127.0.0.1")  # fmt: skip
    assert isinstance(key_of(tmp_path / "b" / "routectl.crt"), ec.EllipticCurvePublicKey)
    chosen = await shake(tls, client(tmp_path / "b", tls12=True))
    assert chosen is not None
    assert chosen[1].startswith("ECDHE-ECDSA-")


def test_a_given_certificate_whose_key_fits_no_listed_suite_is_refused(tmp_path: Path) -> None:
    """An ECDSA --tls-cert-file with RSA suites only: every TLS 1.2 handshake would fail, so
    start-up refuses it in one line; with --tls-min-version=VersionTLS13 it is fine."""
    client(tmp_path)  # the ECDSA pair in tmp_path
    cert, key = str(tmp_path / "routectl.crt"), str(tmp_path / "routectl.key")
    only = ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",)
    with pytest.raises(ConfigError) as caught:
        tls_context(cert_file=cert, key_file=key, cert_dir=None, min_version="VersionTLS12", bind_address="127.0.0.1", cipher_suites=only)  # fmt: skip
    message = str(caught.value)
    assert message.startswith("--tls-cipher-suites TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: ")
    assert f"ECDSA key of --tls-cert-file {cert}" in message
    assert "\n" not in message
    tls_context(cert_file=cert, key_file=key, cert_dir=None, min_version="VersionTLS13", bind_address="127.0.0.1", cipher_suites=only)  # fmt: skip
    ecdsa_too = (*only, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")
    tls_context(cert_file=cert, key_file=key, cert_dir=None, min_version="VersionTLS12", bind_address="127.0.0.1", cipher_suites=ecdsa_too)  # fmt: skip


async def test_a_given_rsa_certificate_serves_rsa_suites(tmp_path: Path) -> None:
    """An RSA --tls-cert-file with an RSA suite: accepted, and the TLS 1.2 handshake uses it;
    with ECDSA suites only it is refused."""
    self_signed(cert_dir=str(tmp_path), bind_address="127.0.0.1", rsa_key=True)
    only = "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
    chosen = await handshake(tmp_path, client(tmp_path, tls12=True), cipher_suites=(only,))
    assert chosen == ("TLSv1.2", "ECDHE-RSA-CHACHA20-POLY1305")
    with pytest.raises(ConfigError, match="RSA key of --tls-cert-file"):
        await handshake(tmp_path, client(tmp_path), cipher_suites=("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",))  # fmt: skip

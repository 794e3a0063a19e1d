"""Serving like the CCM: HTTPS, delegated authentication and authorization, cached, the
probes always allowed; the reviews go to the (fake) API server over the real client."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from routectl.kube import KubeClient
from routectl.observe.probes import ProbeServer
from routectl.observe.serving import AuthSettings, DelegatedAuth, tls_context
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

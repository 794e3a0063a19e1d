"""The kubeconfig and in-cluster configuration are read without kubernetes-asyncio's
generated client, and each form of credentials really reaches an API server that checks."""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import os
import pathlib
import ssl
import subprocess
import sys
from collections.abc import Mapping

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from routectl.errors import ConfigError, KubeError
from routectl.kube import KubeClient, connection as conn
from routectl.observe.redact import DEFAULT
from routectl_sim.apiserver import FakeApiServer

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

TOKEN = "s3cr3t-kube-token-for-connection"  # noqa: S105 -- a test credential


def kubeconfig(
    path: pathlib.Path, server: str, user: Mapping[str, object], **cluster: object
) -> str:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


@pytest.fixture
async def server():
    async with FakeApiServer(token=TOKEN) as running:
        yield running


async def nodes_seen(path: str) -> int:
    kube = await KubeClient.connect(kubeconfig=path)
    try:
        return len((await kube.list_nodes()).items)
    finally:
        await kube.aclose()


async def test_a_token_user_is_let_in_and_a_wrong_token_is_refused(server, tmp_path) -> None:
    assert await nodes_seen(kubeconfig(tmp_path / "ok", server.url, {"token": TOKEN})) == 0
    with pytest.raises(KubeError) as refused:
        await nodes_seen(kubeconfig(tmp_path / "bad", server.url, {"token": "wrong"}))
    assert refused.value.status == 401
    assert TOKEN not in DEFAULT(f"the token is {TOKEN}")  # registered with the redaction


async def test_a_token_file_is_read_again_after_a_minute(server, tmp_path) -> None:
    """A rotated token is used within a minute, as client-go re-reads it."""
    token = tmp_path / "token"
    token.write_text("old-token\n")
    path = kubeconfig(tmp_path / "kc", server.url, {"tokenFile": "token"})  # relative path
    kube = await KubeClient.connect(kubeconfig=path)
    try:
        with pytest.raises(KubeError):
            await kube.list_nodes()
        token.write_text(TOKEN)
        with pytest.raises(KubeError):  # not yet read again
            await kube.list_nodes()
        await asyncio.sleep(conn.TOKEN_REREAD_SECONDS)
        assert (await kube.list_nodes()).items == []
    finally:
        await kube.aclose()


async def test_an_exec_user_is_loaded_by_kubernetes_asyncio_lazily(server, tmp_path) -> None:
    """``exec`` credentials: kubernetes-asyncio's loader runs the plugin; the token works."""
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": TOKEN},
    }
    plugin = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": ["-c", f"print({json.dumps(json.dumps(credential))})"],
        "interactiveMode": "Never",
    }
    path = kubeconfig(tmp_path / "kc", server.url, {"exec": plugin})
    assert await nodes_seen(path) == 0


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("clusters: [\n  - {{{ not yaml", "--kubeconfig"),
        ("[1, 2]", "not a kubeconfig"),
        (json.dumps({"current-context": "nope", "contexts": []}), "no context named 'nope'"),
        (
            json.dumps(
                {
                    "current-context": "x",
                    "contexts": [{"name": "x", "context": {"cluster": "c"}}],
                    "clusters": [{"name": "c", "cluster": {"server": "ftp://x"}}],
                }
            ),
            "not an http(s) URL",
        ),
    ],
)
async def test_a_bad_kubeconfig_is_one_line_naming_the_flag(tmp_path, text, names) -> None:
    path = tmp_path / "kc"
    path.write_text(text)
    with pytest.raises(ConfigError) as bad:
        await conn.load(str(path))
    message = str(bad.value)
    assert "\n" not in message
    assert message.startswith(f"--kubeconfig {path}: cannot load Kubernetes configuration")
    assert names in message


async def test_a_missing_kubeconfig_is_one_line(tmp_path) -> None:
    with pytest.raises(ConfigError, match="cannot load Kubernetes configuration"):
        await conn.load(str(tmp_path / "absent"))


def test_in_cluster_reads_the_service_account(tmp_path) -> None:
    (tmp_path / "token").write_text(TOKEN)
    _key, cert = self_signed()
    (tmp_path / "ca.crt").write_bytes(cert)
    found = conn.in_cluster(
        environ={"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"},
        account=tmp_path,
    )
    assert found.server == "https://[fd00::1]:443"
    assert found.ssl is not None
    assert found.ssl.verify_mode == ssl.CERT_REQUIRED

    async def header() -> str | None:
        return await found.authorization()

    assert asyncio.run(header()) == f"Bearer {TOKEN}"


def test_in_cluster_outside_a_pod_says_what_is_missing(tmp_path) -> None:
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST"):
        conn.in_cluster(environ={}, account=tmp_path)
    with pytest.raises(ConfigError, match="no service account token"):
        conn.in_cluster(
            environ={"KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "1"},
            account=tmp_path,
        )


async def test_client_certificate_data_and_ca_data_make_a_verifying_context(tmp_path) -> None:
    key, cert = self_signed()
    user = {
        "client-certificate-data": base64.b64encode(cert).decode(),
        "client-key-data": base64.b64encode(key).decode(),
    }
    path = kubeconfig(
        tmp_path / "kc",
        "https://127.0.0.1:6443",
        user,
        **{"certificate-authority-data": base64.b64encode(cert).decode()},
    )
    found = await conn.load(path)
    assert found.ssl is not None
    assert found.ssl.verify_mode == ssl.CERT_REQUIRED
    assert await found.authorization() is None
    assert not list(tmp_path.glob("**/pem"))  # the key written for a moment is gone


def test_nothing_imports_the_generated_client_at_start() -> None:
    """Importing the service and loading a kubeconfig never imports kubernetes-asyncio."""
    code = (
        "import sys, asyncio, routectl.cli.app, routectl.kube.connection as c\n"
        "assert not [m for m in sys.modules if m.startswith('kubernetes_asyncio')]\n"
    )
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).parents[2])}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)  # noqa: S603


def self_signed() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "routectl-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return pem_key, cert.public_bytes(serialization.Encoding.PEM)


async def test_a_watch_the_server_never_ends_is_given_up_past_its_grace(server, tmp_path) -> None:
    """A Node watch whose answer never comes (a half-open connection) ends with a KubeError
    WATCH_GRACE seconds after the server should have ended it, not never."""
    from routectl.kube.nodes import WATCH_GRACE  # noqa: PLC0415

    kube = await KubeClient.connect(
        kubeconfig=kubeconfig(tmp_path / "kc", server.url, {"token": TOKEN})
    )
    loop = asyncio.get_running_loop()
    try:
        server.hang = True
        start = loop.time()
        with pytest.raises(KubeError, match="watch nodes"):
            async for _ in kube.watch_node_events(resource_version="1", timeout_seconds=5):
                pass
        assert loop.time() - start == pytest.approx(5 + WATCH_GRACE, abs=0.5)
    finally:
        server.hang = False
        await kube.aclose()


async def test_tls_server_name_is_read(tmp_path) -> None:
    path = kubeconfig(
        tmp_path / "kc",
        "https://10.0.0.1:6443",
        {"token": TOKEN},
        **{"tls-server-name": "kubernetes.default.svc", "insecure-skip-tls-verify": False},
    )
    found = await conn.load(path)
    assert found.server_name == "kubernetes.default.svc"
    assert found.ssl is not None

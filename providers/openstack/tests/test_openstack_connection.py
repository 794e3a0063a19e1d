"""How the ``openstack`` provider reaches the cloud: what cloud-provider-openstack's
``[Global]`` ``ca-file``, ``tls-insecure``, ``os-endpoint-type``, ``user-id`` and
``use-clouds``/``clouds-file``/``cloud`` do there, they do here, over real HTTPS against the
fake with a private CA; what cannot be honoured is refused at start-up in one line.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from routectl_openstack import OpenStackProvider
from routectl_openstack.options import parse_options
from routectl_openstack.testing import PASSWORD, FakeOpenStack

from routectl.errors import ConfigError, ProviderError, ProviderTerminalError
from routectl.model import Route

SUBNET = "10.0.0.0/24"
ROUTE = Route(target_node="node-0", destination_cidr="10.244.0.0/24")
BASE = {"router-id": "r", "node-cidrs": SUBNET, "auth-url": "https://keystone/v3"}


@pytest.fixture(autouse=True)
def no_os_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials come from the options or clouds.yaml in these tests, never the shell."""
    for name in ("OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME", "OS_CLOUD", "OS_AUTH_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OS_CLIENT_CONFIG_FILE", raising=False)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def private_ca(tmp_path: Path) -> tuple[Path, ssl.SSLContext]:
    """A private CA (its PEM file) and a server context whose certificate it signed for
    127.0.0.1, as an on-premises Keystone has."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("private CA"))
        .issuer_name(_name("private CA"))
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name("keystone"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "server.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "server.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp_path / "server.pem", tmp_path / "server.key")
    return tmp_path / "ca.pem", server


def scene(fake: FakeOpenStack, **options: str) -> OpenStackProvider:
    """A router on the Nodes' subnet, one server, and a provider with ``options``."""
    router = fake.add_router(SUBNET)
    fake.add_server("node-0", "10.0.0.10")
    base = {"router-id": router.id, "node-cidrs": SUBNET, "auth-url": fake.auth_url}
    credentials = {"username": "routectl", "password": PASSWORD, "project-name": "k8s"}
    return OpenStackProvider(cluster_name="c", options={**base, **credentials, **options})


async def test_ca_file_trusts_a_private_ca_and_nothing_else(tmp_path: Path) -> None:
    """With ca-file the private CA's Keystone and Neutron are reached; without it the
    same cloud is refused (the certificate is not trusted), as in the CCM."""
    ca_file, server = private_ca(tmp_path)
    async with FakeOpenStack(ssl_context=server) as fake:
        assert fake.url.startswith("https://")
        trusted = scene(fake, **{"ca-file": str(ca_file)})
        await trusted.create_route(ROUTE, name_hint="u")
        assert next(iter(fake.routers.values())).routes == [
            {"destination": "10.244.0.0/24", "nexthop": "10.0.0.10"}
        ]
        await trusted.aclose()
        untrusted = scene(fake)
        with pytest.raises(ProviderError, match=r"SSLError \(is the cloud's certificate"):
            await untrusted.list_routes()
        await untrusted.aclose()


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
async def test_tls_insecure_skips_verification(tmp_path: Path) -> None:
    """tls-insecure=true: the CCM's InsecureSkipVerify; the unknown CA is not checked."""
    _, server = private_ca(tmp_path)
    async with FakeOpenStack(ssl_context=server) as fake:
        provider = scene(fake, **{"tls-insecure": "true"})
        assert list(await provider.list_routes()) == []
        await provider.aclose()


async def test_the_interface_picks_the_catalog_endpoints() -> None:
    """os-endpoint-type=internal calls the catalog's internal endpoints; a catalog without
    them is a terminal error naming the missing endpoint, not a public call."""
    async with FakeOpenStack(interfaces=("internal",)) as fake:
        provider = scene(fake, interface="internal")
        await provider.create_route(ROUTE, name_hint="u")
        await provider.aclose()
        public = scene(fake)
        with pytest.raises(ProviderTerminalError, match="no such endpoint"):
            await public.list_routes()
        await public.aclose()


async def test_user_id_authenticates_by_id() -> None:
    """user-id (no username): Keystone is asked for the user by id."""
    async with FakeOpenStack() as fake:
        provider = scene(fake, username="", **{"user-id": "u1"})
        assert list(await provider.list_routes()) == []
        await provider.aclose()
        assert fake.identities[-1]["password"]["user"]["id"] == "u1"
        assert "name" not in fake.identities[-1]["password"]["user"]


async def test_clouds_yaml_fills_what_the_cloud_conf_leaves_empty(tmp_path: Path) -> None:
    """use-clouds with clouds-file and cloud: auth and region come from the entry; a value the
    cloud.conf gives wins over the file's (cloud-provider-openstack's ReadClouds)."""
    async with FakeOpenStack() as fake:
        router = fake.add_router(SUBNET)
        fake.add_server("node-0", "10.0.0.10")
        clouds = tmp_path / "clouds.yaml"
        clouds.write_text(
            "clouds:\n"
            "  prod:\n"
            "    auth:\n"
            f"      auth_url: {fake.auth_url}\n"
            "      username: routectl\n"
            f"      password: {PASSWORD}\n"
            "      project_name: from-yaml\n"
            "    region_name: RegionOne\n"
            "    interface: public\n"
        )
        options = {
            "router-id": router.id,
            "node-cidrs": SUBNET,
            "use-clouds": "true",
            "clouds-file": str(clouds),
            "cloud": "prod",
            "project-name": "k8s",
        }
        parsed = parse_options(options, environ={})
        assert parsed.credentials.project_name == "k8s"
        assert parsed.credentials.username == "routectl"
        assert parsed.region == "RegionOne"
        provider = OpenStackProvider(cluster_name="c", options=options)
        await provider.create_route(ROUTE, name_hint="u")
        await provider.aclose()
        assert fake.identities[-1]["password"]["user"]["name"] == "routectl"


def test_clouds_yaml_tls_keys_fill_the_tls_options(tmp_path: Path) -> None:
    """cacert, cert, key and interface of the entry become ca-file, the client certificate
    and the interface; clouds.yaml's verify is not read (ReadClouds does not copy it)."""
    ca_file, _ = private_ca(tmp_path)
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(
        "clouds:\n  prod:\n    auth: {auth_url: 'https://k/v3', username: u, password: p,"
        " domain_name: D}\n"
        f"    cacert: {ca_file}\n    cert: {tmp_path / 'server.pem'}\n"
        f"    key: {tmp_path / 'server.key'}\n    interface: admin\n    verify: false\n"
    )
    parsed = parse_options(
        {"router-id": "r", "node-cidrs": SUBNET, "use-clouds": "yes", "cloud": "prod"},
        environ={"OS_CLIENT_CONFIG_FILE": str(clouds)},
    )
    assert parsed.verify == str(ca_file)
    assert parsed.cert == (str(tmp_path / "server.pem"), str(tmp_path / "server.key"))
    assert parsed.interface == "admin"
    domains = (parsed.credentials.user_domain_name, parsed.credentials.project_domain_name)
    assert domains == ("D", "D")  # domain_name: both, as gophercloud reads it


def test_tls_insecure_wins_over_ca_file(tmp_path: Path) -> None:
    ca_file, _ = private_ca(tmp_path)
    options = {**BASE, "username": "u", "password": "p", "ca-file": str(ca_file)}
    assert parse_options(options, environ={}).verify == str(ca_file)
    insecure = parse_options({**options, "tls-insecure": "true"}, environ={})
    assert insecure.verify is False
    assert parse_options({**options, "tls-insecure": "false"}, environ={}).verify == str(ca_file)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"ca-file": "/nonexistent/ca.pem"}, "ca-file '/nonexistent/ca.pem'", id="ca"),
        pytest.param({"tls-insecure": "maybe"}, "tls-insecure='maybe'", id="insecure"),
        pytest.param(
            {"interface": "internalURL"}, "interface='internalURL' (os-endpoint-type", id="iface"
        ),
        pytest.param({"cert-file": "/x.pem"}, "cert-file and key-file go together", id="cert"),
        pytest.param({"use-clouds": "true"}, "needs cloud (or OS_CLOUD)", id="no-cloud"),
        pytest.param(
            {"use-clouds": "true", "cloud": "p", "clouds-file": "/nonexistent.yaml"},
            "clouds-file '/nonexistent.yaml' cannot be read",
            id="no-file",
        ),
        pytest.param({"use-clouds": "sure"}, "use-clouds='sure'", id="flag"),
    ],
)
def test_connection_options_that_cannot_work_fail_at_start_up(
    options: dict[str, str], message: str
) -> None:
    """Each is one ConfigError line naming the option, before any call to the cloud."""
    with pytest.raises(ConfigError, match="provider openstack") as caught:
        parse_options({**BASE, "username": "u", "password": "p", **options}, environ={})
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_missing_clouds_yaml_entry_is_named(tmp_path: Path) -> None:
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text("clouds:\n  prod:\n    auth: {auth_url: 'https://k/v3'}\n")
    options = {**BASE, "use-clouds": "true", "clouds-file": str(clouds), "cloud": "staging"}
    with pytest.raises(ConfigError, match="staging"):
        parse_options(options, environ={})


def test_incomplete_credentials_from_the_file_do_not_blame_the_environment() -> None:
    """user-id without a password: the message names what was given, not OS_* variables."""
    with pytest.raises(ConfigError, match="incomplete credentials: user-id given") as caught:
        parse_options({**BASE, "user-id": "u1"}, environ={})
    assert "OS_" not in str(caught.value)

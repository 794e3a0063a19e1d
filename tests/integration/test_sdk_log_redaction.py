"""No credential reaches routectl's log at any verbosity, with the real AWS SDK's debug output.

aiobotocore signs real EC2 requests to moto's server with a session token; at ``-v 10`` the
SDK logs its requests' headers (bytes reprs), the canonical request, the string to sign and
the signature. A raw handler on the SDK's own logger sees what the SDK wrote; routectl's
output, text and JSON, must hold none of the secrets found there.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from routectl.kube import KubeClient
from routectl.observe.logs import LIBRARIES, configure_logging
from routectl.observe.redact import redact
from routectl_sim.apiserver import FakeApiServer

aiobotocore_session = pytest.importorskip("aiobotocore.session")
moto_server = pytest.importorskip("moto.server")

pytestmark = pytest.mark.integration

KEY_ID = "ASIAQ3EXAMPLE7TESTKY"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"  # noqa: S105 -- a fake, hunted below
SESSION = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD+test+token+value=="


class Raw(logging.Handler):
    """Keeps the SDK's lines as it wrote them (before routectl's handler redacts)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    """moto's EC2 over HTTP on 127.0.0.1."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """Put the root and library loggers back afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    levels = {name: logging.getLogger(name).level for name in (*LIBRARIES, "botocore.auth")}
    yield
    root.handlers[:], root.level = saved
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


async def describe_route_tables(url: str) -> None:
    """One signed EC2 call with temporary credentials."""
    session = aiobotocore_session.get_session()
    async with session.create_client(
        "ec2",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
        aws_session_token=SESSION,
    ) as ec2:
        await ec2.describe_route_tables()


@pytest.mark.usefixtures("restored_logging")
@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("registered", [True, False], ids=["values-known", "forms-only"])
async def test_sdk_debug_output_leaks_no_credential(
    moto_url: str, fmt: str, registered: bool
) -> None:
    """Access key id, secret, session token and signature: in the SDK's raw debug output,
    never in routectl's, whether or not the secrets' values were registered."""
    out = io.StringIO()
    environ = (
        {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_SESSION_TOKEN": SESSION}
        if registered
        else {}
    )
    configure_logging(fmt=fmt, verbosity=10, stream=out, environ=environ)
    raw = Raw()
    sdk = logging.getLogger("botocore")
    sdk.addHandler(raw)
    try:
        await describe_route_tables(moto_url)
    finally:
        sdk.removeHandler(raw)
    seen = "\n".join(raw.lines)
    signatures = set(re.findall(r"Signature=([0-9a-f]{64})", seen))
    assert KEY_ID in seen  # the SDK did print them: the test hunts real output
    assert SESSION in seen
    assert signatures
    written = out.getvalue()
    assert "Sending http request" in written  # the SDK's lines did reach the output
    for secret in (KEY_ID, SECRET, SESSION, *signatures):
        assert secret not in written
        assert secret.replace("/", "\\/") not in written  # JSON may escape slashes


async def test_the_api_servers_token_is_redacted_by_value_once_connected(tmp_path: Path) -> None:
    """The kubeconfig's bearer token, in any spelling, never passes the redaction."""
    token = "kube-token-4e1d8c2b9a"  # noqa: S105 -- a fake, hunted below
    async with FakeApiServer(token=token) as server:
        server.kubeconfig(tmp_path / "kubeconfig")
        kube = await KubeClient.connect(kubeconfig=str(tmp_path / "kubeconfig"))
        await kube.aclose()
    assert token not in redact(f"sent {token!r} as b'{token}' in a header dump")

"""Fixtures of the aws provider's tests: moto's EC2 over HTTP, a counting proxy, a VPC.

moto runs as a threaded server on 127.0.0.1 for the session and is reset before each test;
scenes are set directly in moto through :class:`~routectl_aws.testing.Vpc`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from aws_scene import CLUSTER, REGION, MakeProvider
from moto.server import ThreadedMotoServer
from routectl_aws import AwsProvider
from routectl_aws.provider import new_session
from routectl_aws.testing import FaultProxy, Vpc


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    """moto's EC2 over HTTP on 127.0.0.1, for the session."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(autouse=True)
def aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake static credentials; no profile files, no instance metadata lookups."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    for name in (
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_EC2",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def proxy(moto_url: str) -> AsyncIterator[FaultProxy]:
    """A fault-injecting proxy in front of a freshly reset moto."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{moto_url}/moto-api/reset") as reset,
    ):
        reset.raise_for_status()
    async with FaultProxy(moto_url) as started:
        yield started


@pytest.fixture
async def vpc(moto_url: str, proxy: FaultProxy) -> AsyncIterator[Vpc]:
    """A dual-stack VPC with a subnet, set up directly in moto (after the reset)."""
    del proxy  # requested only so that moto is reset first
    async with new_session().create_client(
        "ec2",
        region_name=REGION,
        endpoint_url=moto_url,
    ) as ec2:
        yield await Vpc.create(ec2)


@pytest.fixture
async def make_provider(proxy: FaultProxy) -> AsyncIterator[MakeProvider]:
    """Build providers that talk to moto through the proxy; all are closed after the test."""
    made: list[AwsProvider] = []

    def make(cluster: str = CLUSTER, **options: str) -> AwsProvider:
        provider = AwsProvider(
            cluster_name=cluster,
            options={"region": REGION, "endpoint-url": proxy.url, **options},
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()

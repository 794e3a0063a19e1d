"""How EC2's failures reach routectl: throttling with its hint, terminal quota and
permission errors, missing tables, unreachable endpoints and missing credentials.
"""

from __future__ import annotations

import email.utils
import socket
from typing import Any

import pytest
from aws_scene import (
    CIDR_A,
    CLUSTER,
    MakeProvider,
    route,
)
from botocore.exceptions import ClientError
from routectl_aws.errors import map_client_error
from routectl_aws.testing import FaultProxy, InjectedFault, Vpc

from routectl.errors import (
    MalformedAnswerError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
)


async def test_missing_tables_are_a_terminal_error(vpc: Vpc, make_provider: MakeProvider) -> None:
    """Without a tagged table there is nothing to write to, and retrying cannot help."""
    (node,) = await vpc.launch()
    with pytest.raises(ProviderTerminalError, match=f"kubernetes.io/cluster/{CLUSTER}=owned"):
        await make_provider().create_route(route(node, CIDR_A), name_hint="u")


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        pytest.param("throttled", (ProviderThrottledError, 1.0), id="throttled-default-pause"),
        pytest.param(
            InjectedFault(status=400, code="Throttling", message="Rate exceeded", retry_after="7"),
            (ProviderThrottledError, 7.0),
            id="throttled-retry-after",
        ),
        pytest.param("transient", (ProviderError, None), id="500"),
        pytest.param("unavailable", (ProviderError, None), id="503"),
        pytest.param(
            InjectedFault(status=503, code="Unavailable", message="Busy", retry_after="30"),
            (ProviderThrottledError, 30.0),
            id="503-retry-after",
        ),
        pytest.param(
            InjectedFault(status=503, code="Unavailable", message="Busy", retry_after="soon"),
            (ProviderError, None),
            id="503-unreadable-retry-after",
        ),
        pytest.param("terminal", (ProviderTerminalError, None), id="unauthorized"),
        pytest.param("auth", (ProviderTerminalError, None), id="auth-failure"),
    ],
)
async def test_ec2_errors_map_to_the_error_tree(
    vpc: Vpc,
    proxy: FaultProxy,
    make_provider: MakeProvider,
    fault: str | InjectedFault,
    expected: tuple[type[ProviderError], float | None],
) -> None:
    """Each EC2 error response becomes the matching routectl error, throttling with a pause."""
    await vpc.cluster_table(CLUSTER)
    proxy.fail_next(fault)
    with pytest.raises(ProviderError) as caught:
        await make_provider().list_routes()
    error_type, retry_after = expected
    assert type(caught.value) is error_type
    if retry_after is not None:
        assert isinstance(caught.value, ProviderThrottledError)
        assert caught.value.retry_after == retry_after


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "Wed, 21 Oct 2037 07:28:00 GMT"}, 45.0),
        ({"retry-after": "12"}, 12.0),
        ({}, None),
    ],
    ids=["http-date", "seconds", "no-hint"],
)
def test_a_503_that_says_when_to_come_back_is_throttling_with_that_hint(
    headers: dict[str, str], expected: float | None
) -> None:
    """A 503 with Retry-After (an HTTP-date is read against ``now``) is throttling with the
    hint; a 503 without one stays a plain transient error."""
    now = email.utils.parsedate_to_datetime("Wed, 21 Oct 2037 07:27:15 GMT").timestamp()
    response: Any = {
        "Error": {"Code": "Unavailable", "Message": "Busy"},
        "ResponseMetadata": {"HTTPStatusCode": 503, "HTTPHeaders": headers},
    }
    error = map_client_error("DescribeRouteTables", ClientError(response, "x"), now=now)
    if expected is None:
        assert type(error) is ProviderError
    else:
        assert isinstance(error, ProviderThrottledError)
        assert error.retry_after == expected


async def test_route_limit_is_terminal_with_a_clear_message(
    vpc: Vpc, proxy: FaultProxy, make_provider: MakeProvider
) -> None:
    """A full route table (RouteLimitExceeded) is a terminal error that names the quota."""
    await vpc.cluster_table(CLUSTER)
    (node,) = await vpc.launch()
    proxy.fail_next("route-limit", action="CreateRoute")
    with pytest.raises(ProviderTerminalError, match="50 routes per table"):
        await make_provider().create_route(route(node, CIDR_A), name_hint="u")


async def test_unreachable_endpoint_is_transient(make_provider: MakeProvider) -> None:
    """A connection refused is a transient error that does not leak the endpoint URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://user:secret@127.0.0.1:{port}"
    with pytest.raises(ProviderError, match="cannot reach") as caught:
        await make_provider(**{"endpoint-url": url}).list_routes()
    assert not isinstance(caught.value, ProviderTerminalError)
    assert "secret" not in str(caught.value)


async def test_missing_credentials_are_terminal(
    monkeypatch: pytest.MonkeyPatch, vpc: Vpc, make_provider: MakeProvider
) -> None:
    """Without credentials anywhere in the chain the error is terminal and says so."""
    del vpc
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(ProviderTerminalError, match="credentials"):
        await make_provider().list_routes()


@pytest.mark.parametrize("fault", ["html-page", "empty-xml"])
@pytest.mark.parametrize(
    "answer",
    [("DescribeRouteTables", "routeTableSet"), ("DescribeInstances", "reservationSet")],
    ids=["tables", "instances"],
)
async def test_an_answer_that_is_not_ec2s_is_an_error_never_an_empty_listing(
    vpc: Vpc, proxy: FaultProxy, make_provider: MakeProvider, fault: str, answer: tuple[str, str]
) -> None:
    """A 200 with a proxy's HTML page or an empty body reads as 'nothing' to botocore; the
    plugin refuses it as a transient error naming the missing field, so no route is called a
    blackhole and no table is called missing."""
    action, field = answer
    await vpc.cluster_table(CLUSTER)
    (node,) = await vpc.launch()
    await make_provider().create_route(route(node, CIDR_A), name_hint="u")
    provider = make_provider()  # a new process: it knows no instance yet
    proxy.fail_next(fault, action=action)
    with pytest.raises(ProviderError, match=f"EC2 {action}: the answer has no {field}") as caught:
        await provider.list_routes()
    assert type(caught.value) is MalformedAnswerError  # transient: retried with backoff
    assert proxy.count(action) >= 1
    listed = await provider.list_routes()  # the next, real answer is read as before
    assert [(r.destination_cidr, r.blackhole) for r in listed] == [(CIDR_A, False)]

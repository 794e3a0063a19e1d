"""The ``aws`` provider validates its options when it is built, with one-line messages.

Every test is a coroutine, even where nothing is awaited: for a plain ``def`` test, looptime 0.9
opens an event loop it never closes, and its ResourceWarning fails a later test here.
"""

from __future__ import annotations

import pytest
from routectl_aws import AwsProvider

from routectl.errors import ConfigError


def build(**options: str) -> AwsProvider:
    """An ``aws`` provider for cluster ``prod`` with ``options``."""
    return AwsProvider(cluster_name="prod", options=options)


async def test_defaults_and_region_from_the_option() -> None:
    """Only the region is needed; the cache period defaults to 30 s."""
    provider = build(region="eu-central-1")
    assert provider.options.region == "eu-central-1"
    assert provider.options.cache_seconds == 30.0
    assert provider.options.vpc_id == provider.options.endpoint_url == ""
    assert provider.tag_key == "kubernetes.io/cluster/prod"


@pytest.mark.parametrize("variable", ["AWS_REGION", "AWS_DEFAULT_REGION"])
async def test_region_from_the_environment(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    """Without the option, the region comes from the usual environment variables."""
    monkeypatch.setenv(variable, "ap-southeast-2")
    assert build().options.region == "ap-southeast-2"


async def test_endpoint_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """AWS_ENDPOINT_URL is honoured, and the option wins over it."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    assert build(region="us-east-1").options.endpoint_url == "http://127.0.0.1:5000"
    custom = build(region="us-east-1", **{"endpoint-url": "https://ec2.example.test"})
    assert custom.options.endpoint_url == "https://ec2.example.test"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param(
            {"region": "us-east-1", "zone": "a"},
            "unknown option(s) zone; known: cache-seconds, cluster-id, endpoint-url, node-name, "
            "region, role-arn, route-table-id, vpc-id",
            id="unknown",
        ),
        pytest.param({}, "missing required option region", id="no-region"),
        pytest.param(
            {"region": "Frankfurt"}, "region='Frankfurt' is not an AWS region", id="region"
        ),
        pytest.param({"region": "us-east-1", "vpc-id": "vpc_1"}, "vpc-id='vpc_1'", id="vpc-id"),
        pytest.param(
            {"region": "us-east-1", "cache-seconds": "soon"},
            "cache-seconds='soon' is not a number",
            id="cache-nan",
        ),
        pytest.param(
            {"region": "us-east-1", "cache-seconds": "-1"}, "must be a finite number", id="cache<0"
        ),
    ],
)
async def test_bad_options_fail_clearly(options: dict[str, str], message: str) -> None:
    """Each bad option is a ConfigError naming it on a single line."""
    with pytest.raises(ConfigError) as caught:
        build(**options)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("--provider-option: provider aws: ")


async def test_bad_endpoint_is_not_echoed() -> None:
    """An endpoint URL that is not http(s) fails without repeating it (it may hold secrets)."""
    with pytest.raises(ConfigError, match="endpoint-url") as caught:
        build(region="us-east-1", **{"endpoint-url": "ftp://key:hunter2@host"})
    assert "hunter2" not in str(caught.value)


async def test_empty_cluster_name_is_refused() -> None:
    """Without a cluster name there is no tag to select route tables by."""
    with pytest.raises(ConfigError, match="cluster name"):
        AwsProvider(cluster_name="", options={"region": "us-east-1"})


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"route-table-id": "table-1"}, "route-table-id='table-1' is not a route table id"),
        ({"cluster-id": " "}, "cluster-id is empty"),
        ({"role-arn": "routectl"}, "role-arn='routectl' is not an IAM role ARN"),
    ],
)
async def test_route_table_and_cluster_id_are_checked(options: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        build(region="us-east-1", **options)


async def test_route_table_and_cluster_id_are_read() -> None:
    built = build(
        region="us-east-1", **{"route-table-id": "rtb-0123456789abcdef0"}, **{"cluster-id": "x"}
    )
    assert (built.options.route_table_id, built.options.cluster_id) == (
        "rtb-0123456789abcdef0",
        "x",
    )
    assert built.tag_key == "kubernetes.io/cluster/x"

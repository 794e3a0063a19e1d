"""--cluster-cidr parsing with upstream's rules and error texts (§2.2)."""

from __future__ import annotations

from ipaddress import ip_network

import pytest

from routectl.config import parse_cluster_cidrs, parse_feature_gates, parse_key_values
from routectl.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("10.244.0.0/16", ["10.244.0.0/16"], id="one-v4"),
        pytest.param(
            " 10.244.0.0/16 , fd00:10:244::/56 ",
            ["10.244.0.0/16", "fd00:10:244::/56"],
            id="dual-with-blanks",
        ),
        pytest.param("fd00::/8,10.0.0.0/8", ["fd00::/8", "10.0.0.0/8"], id="v6-first"),
        pytest.param("10.244.1.1/16", ["10.244.0.0/16"], id="host-bits-masked"),
        pytest.param("010.244.000.000/16", ["10.244.0.0/16"], id="leading-zeros-sloppy"),
    ],
)
def test_valid_cluster_cidrs(text, expected) -> None:
    """Valid values parse to masked networks in the given order."""
    assert parse_cluster_cidrs(text) == tuple(ip_network(e) for e in expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "", 'failed to parse cidr value:"" with error:invalid CIDR address: ', id="empty"
        ),
        pytest.param(
            "10.244.0.0",
            'failed to parse cidr value:"10.244.0.0" with error:invalid CIDR address: 10.244.0.0',
            id="no-prefix",
        ),
        pytest.param(
            "10.244.0.0/16,nonsense",
            'failed to parse cidr value:"nonsense" with error:invalid CIDR address: nonsense',
            id="second-bad",
        ),
        pytest.param(
            "10.0.0.0/8,10.1.0.0/16",
            "len of ClusterCIDRs==2 and they are not configured as dual stack (at least one from each IPFamily",
            id="two-v4",
        ),
        pytest.param(
            "10.0.0.0/8,fd00::/8,10.1.0.0/16",
            "length of clusterCIDRs is:3 more than max allowed of 2",
            id="three",
        ),
        pytest.param(
            "10.0.0.0/8,10.1.0.0/16,10.2.0.0/16",
            "len of ClusterCIDRs==3 and they are not configured as dual stack (at least one from each IPFamily",
            id="three-one-family",
        ),
    ],
)
def test_invalid_cluster_cidrs_fail_with_upstream_text(text, message) -> None:
    """Invalid values raise ConfigError with upstream's exact message."""
    with pytest.raises(ConfigError) as info:
        parse_cluster_cidrs(text)
    assert str(info.value) == message


def test_feature_gates_override_defaults_and_refuse_unknown() -> None:
    """Feature gates parse over defaults; unknown names and bad values are errors."""
    known = {"CloudControllerManagerWatchBasedRoutesReconciliation": True}
    assert parse_feature_gates(
        "CloudControllerManagerWatchBasedRoutesReconciliation=false", known=known
    ) == {"CloudControllerManagerWatchBasedRoutesReconciliation": False}
    assert parse_feature_gates("", known=known) == known
    with pytest.raises(ConfigError, match="unrecognized feature gate: Nope"):
        parse_feature_gates("Nope=true", known=known)
    with pytest.raises(ConfigError, match="invalid value"):
        parse_feature_gates(
            "CloudControllerManagerWatchBasedRoutesReconciliation=maybe", known=known
        )


def test_key_values() -> None:
    """Repeated key=value flags become a mapping; a pair without '=' is an error."""
    assert parse_key_values(["a=1", "b=x=y"], flag="--provider-option") == {"a": "1", "b": "x=y"}
    with pytest.raises(ConfigError, match="--provider-option: expected key=value"):
        parse_key_values(["novalue"], flag="--provider-option")

"""What the ``aws`` plugin's tests share: the cluster, CIDRs and faults of their scenes,
the routes routectl would ask for, and a summary of listed routes."""

from __future__ import annotations

from collections.abc import Callable

from routectl_aws import AwsProvider
from routectl_aws.testing import InjectedFault, Instance

from routectl.model import Route

REGION = "us-east-1"
CLUSTER = "prod"
CIDR_A = "10.244.1.0/24"
CIDR_B = "10.244.2.0/24"
CIDR_V6 = "fd00:10:244:1::/64"
THROTTLED_7S = InjectedFault(
    status=503, code="RequestLimitExceeded", message="Slow down", retry_after="7"
)
MakeProvider = Callable[..., AwsProvider]


def route(node: Instance | str, cidr: str) -> Route:
    """The route routectl would ask for."""
    return Route(target_node=node if isinstance(node, str) else node.dns, destination_cidr=cidr)


def keys(routes: object) -> set[tuple[str, str, bool]]:
    """(target, destination, blackhole) of listed routes."""
    assert isinstance(routes, list | tuple)
    return {(r.target_node, r.destination_cidr, r.blackhole) for r in routes}

"""The ``aws`` provider's options (``--provider-option key=value``), validated up front.

Every problem is a :class:`~routectl.errors.ConfigError` with a one-line message that names
the option; values that may carry secrets (endpoint URLs) are never echoed. Environment
variables fill in what the options leave out, as the AWS CLI and SDKs do.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from routectl.errors import ConfigError
from routectl.plugin_options import is_http_url, option_error, refuse_unknown, seconds_option

PROVIDER = "aws"
DEFAULT_CACHE_SECONDS = 30.0
KNOWN_OPTIONS = (
    "cache-seconds",
    "cluster-id",
    "endpoint-url",
    "node-name",
    "region",
    "role-arn",
    "route-table-id",
    "vpc-id",
)
NODE_NAME_SOURCES = ("private-dns-name", "name-tag", "instance-id")
"""Where Node names come from: the instance's private DNS name (the kubelet's default, also
``i-....region.compute.internal`` under resource-based hostnames), its ``Name`` tag, or its id."""

_REGION = re.compile(r"^[a-z]{2}(-[a-z0-9]+)+-\d+$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
_ROUTE_TABLE_ID = re.compile(r"^rtb-[0-9a-f]{8,17}$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AwsOptions:
    """What the ``aws`` provider was configured with."""

    region: str
    """The EC2 region: option ``region``, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``."""
    vpc_id: str = ""
    """Only route tables of this VPC are used; empty means any VPC."""
    endpoint_url: str = ""
    """Another EC2 endpoint (VPC endpoint, moto); empty means AWS's own."""
    cache_seconds: float = DEFAULT_CACHE_SECONDS
    """Instances and route tables are looked up again at most this often (upstream hccm's
    lesson: never once per unknown route)."""
    node_name: str = NODE_NAME_SOURCES[0]
    """How the cluster names Nodes after instances (one of :data:`NODE_NAME_SOURCES`): the
    same rule maps a Node to its instance and a listed route's instance back to its Node."""
    route_table_id: str = ""
    """Use this route table, and only it, whatever its tags (cloud-provider-aws's
    ``[Global] RouteTableID``); empty: the tables tagged for the cluster."""
    role_arn: str = ""
    """Sign EC2 calls as this IAM role, assumed with the pod's own credentials
    (cloud-provider-aws's ``RoleARN``); empty: the pod's credentials."""
    cluster_id: str = ""
    """The cluster id of the tags (cloud-provider-aws's ``KubernetesClusterID`` or
    ``KubernetesClusterTag``): tables tagged ``kubernetes.io/cluster/<id>`` or, the legacy
    tag, ``KubernetesCluster=<id>``; empty: ``--cluster-name`` with the first tag only."""


def _fail(message: str) -> ConfigError:
    return option_error(PROVIDER, message)


def parse_options(options: Mapping[str, str], *, environ: Mapping[str, str]) -> AwsOptions:
    """Validate ``options`` (falling back to ``environ``) into :class:`AwsOptions`."""
    refuse_unknown(PROVIDER, options, KNOWN_OPTIONS)
    region = (
        options.get("region") or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION", "")
    ).strip()
    if not region:
        raise _fail("missing required option region (or set AWS_REGION)")
    if not _REGION.match(region):
        raise _fail(f"region={region!r} is not an AWS region name such as us-east-1")
    vpc_id = options.get("vpc-id", "").strip()
    if vpc_id and not _VPC_ID.match(vpc_id):
        raise _fail(f"vpc-id={vpc_id!r} is not a VPC id such as vpc-0123456789abcdef0")
    endpoint_url = (
        options.get("endpoint-url")
        or environ.get("AWS_ENDPOINT_URL_EC2")
        or environ.get("AWS_ENDPOINT_URL", "")
    ).strip()
    if endpoint_url and not is_http_url(endpoint_url):
        # The URL is not echoed: it may carry user information.
        raise _fail("endpoint-url (or AWS_ENDPOINT_URL) must be an http:// or https:// URL")
    cache_seconds = seconds_option(PROVIDER, options, "cache-seconds", DEFAULT_CACHE_SECONDS)
    node_name = options.get("node-name", NODE_NAME_SOURCES[0]).strip()
    if node_name not in NODE_NAME_SOURCES:
        raise _fail(f"node-name={node_name!r} must be one of {', '.join(NODE_NAME_SOURCES)}")
    route_table_id = options.get("route-table-id", "").strip()
    if route_table_id and not _ROUTE_TABLE_ID.match(route_table_id):
        raise _fail(
            f"route-table-id={route_table_id!r} is not a route table id such as "
            "rtb-0123456789abcdef0"
        )
    role_arn = options.get("role-arn", "").strip()
    if role_arn and not _ROLE_ARN.match(role_arn):
        raise _fail(
            f"role-arn={role_arn!r} is not an IAM role ARN such as arn:aws:iam::123456789012:role/x"
        )
    cluster_id = options.get("cluster-id", "").strip()
    if "cluster-id" in options and not cluster_id:
        raise _fail("cluster-id is empty")
    return AwsOptions(
        route_table_id=route_table_id,
        role_arn=role_arn,
        cluster_id=cluster_id,
        region=region,
        vpc_id=vpc_id,
        endpoint_url=endpoint_url,
        cache_seconds=cache_seconds,
        node_name=node_name,
    )

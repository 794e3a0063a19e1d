"""Route names and marks as cloud-provider-gcp writes them, and the paths of a network (pure).

Routes (cloud-provider-gcp@4e245312 ``providers/gce/gce_routes.go``): named
``<cluster name, first 26 characters>-<Node UID>``, described ``k8s-node-route``, in the
cluster's network, priority 1000, next hop the Node's instance (by its full URL). A table the
GCE CCM wrote is adopted without a write, and the CCM would adopt ours. A name hint that is
not a UID (routectl passes the Node's UID) and the IPv6 route of a dual-stack Node are named
``<prefix>-<a UUID derived from the hint>``, so every name of this cluster has one shape.
When that name holds a route to another destination (two pod CIDRs of one family under one
hint, or a Node's old route whose delete is still to come), the route is named
``<prefix>-<a UUID derived from the hint and the destination>`` instead: names stay
deterministic, so a retried create finds what its first attempt made.

A Node is named like its instance (the CCM: "NodeName == Instance Name on GCE"; a Node name
with a domain is its first label). No I/O here.
"""

from __future__ import annotations

import re
import uuid

from routectl.cidr import parse_cidr
from routectl.errors import ConfigError, ProviderTerminalError

DESCRIPTION = "k8s-node-route"
"""cloud-provider-gcp's ``k8sNodeRouteTag``."""
PRIORITY = 1000
PREFIX_LENGTH = 26
"""cloud-provider-gcp's ``truncateClusterName``."""
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
NAMESPACE = uuid.UUID("8b0e3c50-5f3e-4c1e-9a59-0c1f7a3e6d21")
"""Names derived from hints that are not UIDs (and IPv6 routes) are UUIDv5 in this space."""


def route_prefix(cluster_name: str) -> str:
    """The first 26 characters of the cluster's name: the start of its routes' names."""
    prefix = cluster_name[:PREFIX_LENGTH]
    if not re.fullmatch(r"[a-z]([-a-z0-9]*)", prefix):
        raise ConfigError(
            f"--cluster-name={cluster_name!r}: provider gce names routes after the cluster, so "
            "the name must start with a lower-case letter and hold only a-z, 0-9 and '-'"
        )
    return prefix


def route_name(prefix: str, name_hint: str, *, version: int) -> str:
    """``<prefix>-<Node UID>`` as the CCM names it; a UUID from the hint where that cannot be."""
    hint = name_hint.lower()
    if version == 4 and re.fullmatch(UUID, hint):  # noqa: PLR2004
        return f"{prefix}-{hint}"
    return f"{prefix}-{uuid.uuid5(NAMESPACE, f'{name_hint}/ipv{version}')}"


def spare_name(prefix: str, name_hint: str, destination: str) -> str:
    """The name used when :func:`route_name` holds a route to another destination (two
    pod CIDRs of one family under one hint, or a Node's old route not deleted yet)."""
    return f"{prefix}-{uuid.uuid5(NAMESPACE, f'{name_hint}/{destination}')}"


def instance_name(node: str) -> str:
    """The instance of a Node: its name up to the first dot (the CCM's canonicalization)."""
    return node.split(".", 1)[0]


def network_path(url: str) -> str:
    """``projects/P/global/networks/N`` of a network URL, regex-escaped for a filter."""
    tail = url.split("/projects/", 1)[-1]
    return re.escape(f"projects/{tail}")


def network_project(network: str) -> str:
    """The project that holds the network (its URL), and so its routes and operations."""
    return network.split("/projects/", 1)[1].split("/", 1)[0]


def destination_of(cidr: str) -> str:
    """A route's destination as the API is sent it; terminal if it is no CIDR."""
    try:
        return str(parse_cidr(cidr))
    except ValueError as exc:
        raise ProviderTerminalError(f"invalid destination CIDR {cidr!r}") from exc

"""The Kubernetes edge: reading Nodes, writing conditions, Events and Leases.

* :mod:`routectl.kube.objects`: pure translation of Kubernetes JSON (``parse_node``, the
  NetworkUnavailable patch, Events, time formats);
* :mod:`routectl.kube.client`: the API calls, plain HTTP over aiohttp (grouped by resource
  in :mod:`~routectl.kube.nodes`, :mod:`~routectl.kube.leases`, :mod:`~routectl.kube.records`
  on :mod:`~routectl.kube.base`), configured by :mod:`~routectl.kube.connection`;
* :mod:`routectl.kube.transport`: pacing, observation, errors and JSON reading under them;
* :mod:`routectl.kube.stream`: watch streams split into events;
* :mod:`routectl.kube.decode`: Nodes, pages and watch events decoded (msgspec) into only
  what routing reads.
"""

from __future__ import annotations

from routectl.kube.client import KubeClient, NodeListing, NodeViews, Pacing, RequestObserver
from routectl.kube.decode import NodeEvent, NodeRecord, same, view_of
from routectl.kube.objects import (
    NETWORK_UNAVAILABLE,
    condition_patch,
    event,
    format_micro_time,
    format_time,
    go_duration,
    lease_event,
    node_event,
    parse_micro_time,
    parse_node,
)

__all__ = [
    "NETWORK_UNAVAILABLE",
    "KubeClient",
    "NodeEvent",
    "NodeListing",
    "NodeRecord",
    "NodeViews",
    "Pacing",
    "RequestObserver",
    "condition_patch",
    "event",
    "format_micro_time",
    "format_time",
    "go_duration",
    "lease_event",
    "node_event",
    "parse_micro_time",
    "parse_node",
    "same",
    "view_of",
]

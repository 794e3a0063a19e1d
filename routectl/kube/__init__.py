"""The Kubernetes edge: reading Nodes (``routectl.kube.objects``)."""

from __future__ import annotations

from routectl.kube.objects import NETWORK_UNAVAILABLE, parse_node

__all__ = ["NETWORK_UNAVAILABLE", "parse_node"]

"""The Kubernetes edge: Node JSON in, NodeView out.

:func:`parse_node` reads a Node exactly as the API server serves it (with or without
``kind``, as a list item or a watch object) and keeps only what routing needs. It is pure
and tolerant: missing sections, ``null`` values and unknown fields are fine; only a Node
without a name is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routectl.errors import InvalidObjectError
from routectl.model import Condition, NodeAddress, NodeView

NETWORK_UNAVAILABLE = "NetworkUnavailable"


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def parse_node(raw: Mapping[str, Any]) -> NodeView:
    """Turn a Node object into a :class:`NodeView`; prefer ``spec.podCIDRs`` to ``podCIDR``."""
    metadata = _mapping(raw.get("metadata"))
    name = _text(metadata.get("name"))
    if not name:
        raise InvalidObjectError("a Node without metadata.name cannot be routed")
    spec = _mapping(raw.get("spec"))
    status = _mapping(raw.get("status"))
    pod_cidrs = tuple(_text(c) for c in _list(spec.get("podCIDRs")))
    if not pod_cidrs and _text(spec.get("podCIDR")):
        pod_cidrs = (_text(spec.get("podCIDR")),)
    addresses = tuple(
        NodeAddress(type=_text(a.get("type")), address=_text(a.get("address")))
        for a in map(_mapping, _list(status.get("addresses")))
        if _text(a.get("address"))
    )
    return NodeView(
        name=name,
        uid=_text(metadata.get("uid")),
        pod_cidrs=pod_cidrs,
        addresses=addresses,
        network_unavailable=_network_unavailable(_list(status.get("conditions"))),
        provider_id=_text(spec.get("providerID")),
    )


def _network_unavailable(conditions: list[Any]) -> Condition | None:
    for condition in map(_mapping, conditions):
        if condition.get("type") == NETWORK_UNAVAILABLE:
            return Condition(
                status=_text(condition.get("status")),
                reason=_text(condition.get("reason")),
                message=_text(condition.get("message")),
            )
    return None

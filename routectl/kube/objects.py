"""Kubernetes objects: Node JSON in, NodeView out; condition patches, Events and times out.

:func:`parse_node` reads a Node exactly as the API server serves it (with or without
``kind``, as a list item or a watch object) and keeps only what routing needs. It is pure
and tolerant: missing sections, ``null`` values and unknown fields are fine; only a Node
without a name is refused.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any

from routectl.config.syntax import format_duration
from routectl.errors import ImpossibleObjectError, InvalidObjectError
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
    if not isinstance(raw, Mapping):
        raise InvalidObjectError(f"a Node must be a JSON object, not {type(raw).__name__}")
    metadata = _mapping(raw.get("metadata"))
    name = _text(metadata.get("name"))
    if not name:
        raise InvalidObjectError("a Node without metadata.name cannot be routed")
    spec = _mapping(raw.get("spec"))
    status = _mapping(raw.get("status"))
    _refuse_impossible(raw, name)
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
        created=_text(metadata.get("creationTimestamp")),
    )


def _refuse_impossible(raw: Mapping[str, Any], name: str) -> None:
    """A Node the API server never serves (its schema forbids it) is not "a Node without a
    pod CIDR": what it says is unknown, so :class:`ImpossibleObjectError` says why."""
    why = ""
    spec: object = raw.get("spec", {})
    if not isinstance(spec, Mapping):
        why = f"spec is {json.dumps(spec)[:40]}, not an object"
    else:
        cidrs: object = spec.get("podCIDRs")
        if cidrs is not None and not isinstance(cidrs, list):
            why = f"spec.podCIDRs is {json.dumps(cidrs)[:40]}, not a list"
        elif isinstance(cidrs, list) and not all(isinstance(c, str) for c in cidrs):
            why = "spec.podCIDRs holds something that is not a string"
        elif not isinstance(spec.get("podCIDR", ""), str):
            why = "spec.podCIDR is not a string"
    if why:
        uid = _text(_mapping(raw.get("metadata")).get("uid"))
        raise ImpossibleObjectError(
            f"Node {name}: {why}, which the API server never serves", name=name, uid=uid
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


def condition_patch(condition: Condition, *, now: datetime.datetime) -> dict[str, Any]:
    """The strategic-merge patch of ``nodes/<name>/status`` that sets NetworkUnavailable.

    Both timestamps are set to now, as upstream does, even when only the reason changes.
    """
    stamp = format_time(now)
    return {
        "status": {
            "conditions": [
                {
                    "type": NETWORK_UNAVAILABLE,
                    "status": condition.status,
                    "reason": condition.reason,
                    "message": condition.message,
                    "lastTransitionTime": stamp,
                    "lastHeartbeatTime": stamp,
                }
            ]
        }
    }


def format_time(moment: datetime.datetime) -> str:
    """A ``metav1.Time``: RFC 3339 in UTC with whole seconds."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(moment: datetime.datetime) -> str:
    """A ``metav1.MicroTime``: exactly six fractional digits, UTC (the server rejects others)."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro_time(text: str) -> datetime.datetime | None:
    """Read a ``metav1.MicroTime`` or ``metav1.Time``; None if absent or malformed."""
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None


def go_duration(seconds: float) -> str:
    """Format like Go's ``time.Duration.String`` (``1.5s``, ``123.456ms``, ``2m3s``)."""
    return format_duration(seconds)


def node_event(
    *,
    node: NodeView,
    reason: str,
    message: str,
    event_type: str,
    now: datetime.datetime,
    component: str = "route_controller",
) -> dict[str, Any]:
    """A core/v1 Event about a Node, as upstream's recorder writes it (namespace default)."""
    involved = {"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": node.uid}
    return event(
        involved=involved,
        namespace="default",
        reason=reason,
        message=message,
        event_type=event_type,
        now=now,
        component=component,
    )


def lease_event(
    lease: tuple[str, str], *, reason: str, message: str, now: datetime.datetime
) -> dict[str, Any]:
    """A Warning Event about a component itself, on its Lease ``(namespace, name)``."""
    namespace, name = lease
    involved = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "name": name,
        "namespace": namespace,
    }
    return event(
        involved=involved,
        namespace=namespace,
        reason=reason,
        message=message,
        event_type="Warning",
        now=now,
    )


def event(
    *,
    involved: dict[str, str],
    namespace: str,
    reason: str,
    message: str,
    event_type: str,
    now: datetime.datetime,
    component: str = "route_controller",
) -> dict[str, Any]:
    """A core/v1 Event about ``involved``, named like client-go's recorder names them."""
    stamp = format_time(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{involved['name']}.{int(now.timestamp() * 1e9):x}",
            "namespace": namespace,
        },
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": event_type,
        "source": {"component": component},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "reportingComponent": component,
        "reportingInstance": "",
    }

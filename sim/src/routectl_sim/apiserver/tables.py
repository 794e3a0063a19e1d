"""Server-side printing: Nodes as a ``meta.k8s.io/v1`` ``Table``, as ``kubectl get`` asks.

Promises:

* :func:`wants_table` is true when the first media range of ``Accept`` that the server
  can produce asks for ``as=Table`` (``g=meta.k8s.io``, ``v=v1``), as kubectl's is;
* :func:`node_table` answers with kube-apiserver's Node columns (Name, Status, Roles, Age,
  Version, and at priority 1 Internal-IP, External-IP, OS-Image, Kernel-Version,
  Container-Runtime), every cell computed as ``pkg/printers/internalversion`` computes it
  (Status from the Ready condition and ``spec.unschedulable``; Roles from the
  ``node-role.kubernetes.io/<role>`` and ``kubernetes.io/role`` labels; Age as
  ``duration.HumanDuration``), and each row's object as ``PartialObjectMetadata`` (the
  default ``includeObject=Metadata``; ``Object`` and ``None`` are honoured too);
* the column descriptions are shortened from the real ones (clients do not show them).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from routectl_sim.apiserver.status import JsonObj

ROLE_PREFIX = "node-role.kubernetes.io/"
ROLE_LABEL = "kubernetes.io/role"

NODE_COLUMNS: tuple[JsonObj, ...] = (
    {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique "
     "within a namespace.", "priority": 0},
    {"name": "Status", "type": "string", "format": "", "description": "The status of the node",
     "priority": 0},
    {"name": "Roles", "type": "string", "format": "", "description": "The roles of the node",
     "priority": 0},
    {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a "
     "timestamp representing the server time when this object was created.", "priority": 0},
    {"name": "Version", "type": "string", "format": "", "description": "Kubelet Version "
     "reported by the node.", "priority": 0},
    {"name": "Internal-IP", "type": "string", "format": "", "description": "List of addresses "
     "reachable to the node.", "priority": 1},
    {"name": "External-IP", "type": "string", "format": "", "description": "List of addresses "
     "reachable to the node.", "priority": 1},
    {"name": "OS-Image", "type": "string", "format": "", "description": "OS Image reported by "
     "the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", "priority": 1},
    {"name": "Kernel-Version", "type": "string", "format": "", "description": "Kernel Version "
     "reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", "priority": 1},
    {"name": "Container-Runtime", "type": "string", "format": "", "description": "ContainerRuntime "
     "Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
     "priority": 1},
)  # fmt: skip


def wants_table(accept: str) -> bool:
    """The client's first producible media range is a ``meta.k8s.io/v1`` Table."""
    for part in accept.split(","):
        media, *raw = (piece.strip() for piece in part.split(";"))
        params = dict(p.partition("=")[::2] for p in raw)
        if media.lower() not in ("application/json", "application/*", "*/*"):
            continue
        if "as" not in params:
            return False
        if params == {"as": "Table", "g": "meta.k8s.io", "v": "v1"}:
            return True
    return False


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:  # noqa: PLR2004 -- the thresholds are Go's
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:  # noqa: PLR2004
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:  # noqa: PLR2004
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:  # noqa: PLR2004
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:  # noqa: PLR2004
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        return f"{hours // 24 // 365}y{rest}d" if rest else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _age(created: str | None, now: datetime.datetime) -> str:
    if not created:
        return "<unknown>"
    moment = datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
    return human_duration((now - moment).total_seconds())


def _roles(labels: dict[str, str]) -> str:
    roles = set()
    for key, value in labels.items():
        if key.startswith(ROLE_PREFIX) and key != ROLE_PREFIX:
            roles.add(key.removeprefix(ROLE_PREFIX))
        elif key == ROLE_LABEL and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _status(node: JsonObj) -> str:
    conditions = {c.get("type"): c for c in node.get("status", {}).get("conditions") or []}
    ready = conditions.get("Ready")
    status = [] if ready is None else ["Ready" if ready.get("status") == "True" else "NotReady"]
    status = status or ["Unknown"]
    if node.get("spec", {}).get("unschedulable"):
        status.append("SchedulingDisabled")
    return ",".join(status)


def _address(node: JsonObj, kind: str) -> str:
    for address in node.get("status", {}).get("addresses") or []:
        if address.get("type") == kind:
            return str(address.get("address", ""))
    return "<none>"


def node_cells(node: JsonObj, *, now: datetime.datetime) -> list[str]:
    """One Node's row, every column (clients hide priority 1 unless asked to be wide)."""
    meta: dict[str, Any] = node.get("metadata", {})
    info: dict[str, Any] = node.get("status", {}).get("nodeInfo") or {}
    return [
        meta.get("name", ""),
        _status(node),
        _roles(meta.get("labels") or {}),
        _age(meta.get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        _address(node, "InternalIP"),
        _address(node, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _row_object(node: JsonObj, include: str) -> JsonObj | None:
    if include == "None":
        return None
    if include == "Object":
        return {"kind": "Node", "apiVersion": "v1", **node}
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": node.get("metadata", {}),
    }


def node_table(
    nodes: Sequence[JsonObj],
    *,
    metadata: JsonObj,
    include: str = "Metadata",
    now: datetime.datetime | None = None,
) -> JsonObj:
    """The ``Table`` of ``nodes``, with the list's ``metadata`` (resourceVersion, continue)."""
    moment = now or datetime.datetime.now(datetime.UTC)
    rows = []
    for node in nodes:
        row: JsonObj = {"cells": node_cells(node, now=moment)}
        if (obj := _row_object(node, include)) is not None:
            row["object"] = obj
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": list(NODE_COLUMNS),
        "rows": rows,
    }

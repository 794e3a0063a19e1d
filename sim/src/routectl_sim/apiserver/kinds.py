"""The API kinds this server stores: their Go shapes, names and selectable fields.

Promises:

* :data:`NODE`, :data:`LEASE`, :data:`EVENT` (core/v1), :data:`EVENTS_V1`
  (events.k8s.io/v1) and :data:`SERVICE_CIDR` (networking.k8s.io/v1) describe kind,
  apiVersion, the resource name used in errors, scope, the struct shape (see
  :mod:`.gotypes`), the field selectors kube-apiserver supports for them, and the
  strategic-merge-patch list strategies of their schema;
* :meth:`Kind.bookmark` is the full empty object of the kind, as real BOOKMARK events carry.

Field orders follow ``k8s.io/api`` so that encoded objects look like the real ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from routectl_sim.apiserver.gotypes import (
    BOOL,
    INT32,
    INT64,
    MICRO_TIME,
    RAW,
    STRING,
    TIME,
    Field,
    ListOf,
    MapOf,
    Struct,
    struct,
)
from routectl_sim.apiserver.status import GroupResource, JsonObj

F = Field

OBJECT_META = struct(
    "v1.ObjectMeta",
    F("name", STRING),
    F("generateName", STRING),
    F("namespace", STRING),
    F("uid", STRING),
    F("resourceVersion", STRING),
    F("generation", INT64),
    F("creationTimestamp", TIME, "omitzero"),
    F("deletionTimestamp", TIME, "pointer"),
    F("deletionGracePeriodSeconds", INT64, "pointer"),
    F("labels", MapOf(STRING)),
    F("annotations", MapOf(STRING)),
    F(
        "ownerReferences",
        ListOf(
            struct(
                "v1.OwnerReference",
                F("apiVersion", STRING, "always"),
                F("kind", STRING, "always"),
                F("name", STRING, "always"),
                F("uid", STRING, "always"),
                F("controller", BOOL, "pointer"),
                F("blockOwnerDeletion", BOOL, "pointer"),
            )
        ),
    ),
    F("finalizers", ListOf(STRING)),
)

NODE_SCHEMA = struct(
    "v1.Node",
    F("metadata", OBJECT_META, "always"),
    F(
        "spec",
        struct(
            "v1.NodeSpec",
            F("podCIDR", STRING),
            F("podCIDRs", ListOf(STRING)),
            F("providerID", STRING),
            F("unschedulable", BOOL),
            F(
                "taints",
                ListOf(
                    struct(
                        "v1.Taint",
                        F("key", STRING, "always"),
                        F("value", STRING),
                        F("effect", STRING, "always"),
                        F("timeAdded", TIME, "pointer"),
                    )
                ),
            ),
            F("configSource", RAW, "pointer"),
            F("externalID", STRING),
        ),
        "always",
    ),
    F(
        "status",
        struct(
            "v1.NodeStatus",
            F("capacity", MapOf(RAW)),
            F("allocatable", MapOf(RAW)),
            F("phase", STRING),
            F(
                "conditions",
                ListOf(
                    struct(
                        "v1.NodeCondition",
                        F("type", STRING, "always"),
                        F("status", STRING, "always"),
                        F("lastHeartbeatTime", TIME, "always"),
                        F("lastTransitionTime", TIME, "always"),
                        F("reason", STRING),
                        F("message", STRING),
                    )
                ),
            ),
            F(
                "addresses",
                ListOf(
                    struct(
                        "v1.NodeAddress",
                        F("type", STRING, "always"),
                        F("address", STRING, "always"),
                    )
                ),
            ),
            F(
                "daemonEndpoints",
                struct(
                    "v1.NodeDaemonEndpoints",
                    F(
                        "kubeletEndpoint",
                        struct("v1.DaemonEndpoint", F("Port", INT32, "always")),
                        "always",
                    ),
                ),
                "always",
            ),
            F(
                "nodeInfo",
                struct(
                    "v1.NodeSystemInfo",
                    *(
                        F(name, STRING, "always")
                        for name in (
                            "machineID",
                            "systemUUID",
                            "bootID",
                            "kernelVersion",
                            "osImage",
                            "containerRuntimeVersion",
                            "kubeletVersion",
                            "kubeProxyVersion",
                            "operatingSystem",
                            "architecture",
                        )
                    ),
                    F("swap", RAW, "pointer"),
                ),
                "always",
            ),
            F(
                "images",
                ListOf(
                    struct(
                        "v1.ContainerImage",
                        F("names", ListOf(STRING), "always"),
                        F("sizeBytes", INT64),
                    )
                ),
            ),
            F("volumesInUse", ListOf(STRING)),
            F("volumesAttached", ListOf(RAW)),
            F("config", RAW, "pointer"),
            F("runtimeHandlers", ListOf(RAW)),
            F("features", RAW, "pointer"),
            F("declaredFeatures", ListOf(STRING)),
        ),
        "always",
    ),
)

LEASE_SCHEMA = struct(
    "v1.Lease",
    F("metadata", OBJECT_META, "always"),
    F(
        "spec",
        struct(
            "v1.LeaseSpec",
            F("holderIdentity", STRING, "pointer"),
            F("leaseDurationSeconds", INT32, "pointer"),
            F("acquireTime", MICRO_TIME, "pointer"),
            F("renewTime", MICRO_TIME, "pointer"),
            F("leaseTransitions", INT32, "pointer"),
        ),
        "always",
    ),
)

OBJECT_REFERENCE = struct(
    "v1.ObjectReference",
    *(
        F(name, STRING)
        for name in (
            "kind",
            "namespace",
            "name",
            "uid",
            "apiVersion",
            "resourceVersion",
            "fieldPath",
        )
    ),
)
EVENT_SOURCE = struct("v1.EventSource", F("component", STRING), F("host", STRING))
EVENT_SERIES = struct(
    "v1.EventSeries", F("count", INT32), F("lastObservedTime", MICRO_TIME, "always")
)

EVENT_SCHEMA = struct(
    "v1.Event",
    F("metadata", OBJECT_META, "always"),
    F("involvedObject", OBJECT_REFERENCE, "always"),
    F("reason", STRING),
    F("message", STRING),
    F("source", EVENT_SOURCE, "always"),
    F("firstTimestamp", TIME, "always"),
    F("lastTimestamp", TIME, "always"),
    F("count", INT32),
    F("type", STRING),
    F("eventTime", MICRO_TIME, "always"),
    F("series", EVENT_SERIES, "pointer"),
    F("action", STRING),
    F("related", OBJECT_REFERENCE, "pointer"),
    F("reportingComponent", STRING, "always"),
    F("reportingInstance", STRING, "always"),
)

EVENTS_V1_SCHEMA = struct(
    "v1.Event",
    F("metadata", OBJECT_META, "always"),
    F("eventTime", MICRO_TIME, "always"),
    F("series", EVENT_SERIES, "pointer"),
    F("reportingController", STRING),
    F("reportingInstance", STRING),
    F("action", STRING),
    F("reason", STRING),
    F("regarding", OBJECT_REFERENCE, "always"),
    F("related", OBJECT_REFERENCE, "pointer"),
    F("note", STRING),
    F("type", STRING),
    F("deprecatedSource", EVENT_SOURCE, "always"),
    F("deprecatedFirstTimestamp", TIME, "always"),
    F("deprecatedLastTimestamp", TIME, "always"),
    F("deprecatedCount", INT32),
)

SERVICE_CIDR_SCHEMA = struct(
    "v1.ServiceCIDR",
    F("metadata", OBJECT_META, "always"),
    F("spec", struct("v1.ServiceCIDRSpec", F("cidrs", ListOf(STRING))), "always"),
    F("status", struct("v1.ServiceCIDRStatus", F("conditions", ListOf(RAW))), "always"),
)

_META_MERGE = {"metadata.finalizers": "", "metadata.ownerReferences": "uid"}


def _dig(obj: Mapping[str, Any], path: str) -> Any:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _node_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    unschedulable = bool(_dig(obj, "spec.unschedulable"))
    return {
        "metadata.name": str(_dig(obj, "metadata.name") or ""),
        "spec.unschedulable": "true" if unschedulable else "false",
    }


def _meta_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    return {
        "metadata.name": str(_dig(obj, "metadata.name") or ""),
        "metadata.namespace": str(_dig(obj, "metadata.namespace") or ""),
    }


_EVENT_FIELDS = {
    **{f"involvedObject.{f.name}": f"involvedObject.{f.name}" for f in OBJECT_REFERENCE.fields},
    "reason": "reason",
    "reportingComponent": "reportingComponent",
    "source": "source.component",
    "type": "type",
}


def _event_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    fields = _meta_fields(obj)
    fields.update({label: str(_dig(obj, path) or "") for label, path in _EVENT_FIELDS.items()})
    return fields


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Kind:
    """One kind as served under one apiVersion."""

    kind: str
    api_version: str
    resource: GroupResource
    namespaced: bool
    schema: Struct
    selectable: Callable[[Mapping[str, Any]], dict[str, str]]
    merge_keys: Mapping[str, str]
    """SMP list strategies by dotted path: merge key, or ``""`` to merge primitive lists."""

    @property
    def list_kind(self) -> str:
        """The list wrapper's kind, e.g. ``NodeList``."""
        return f"{self.kind}List"

    @property
    def version(self) -> str:
        """The bare version (``v1``), as decode errors name it."""
        return self.api_version.rpartition("/")[2]

    @property
    def field_labels(self) -> frozenset[str]:
        """The field selector labels this kind supports."""
        return frozenset(self.selectable(self.schema.zero()))

    def typed(self, obj: JsonObj) -> JsonObj:
        """``obj`` with ``kind``/``apiVersion`` in front (GET, watch events)."""
        return {"kind": self.kind, "apiVersion": self.api_version, **obj}

    def bookmark(
        self, resource_version: int, *, annotations: dict[str, str] | None = None
    ) -> JsonObj:
        """The empty object a BOOKMARK event carries (only its metadata is meaningful)."""
        obj = self.schema.zero()
        obj["metadata"] = {"resourceVersion": str(resource_version)}
        if annotations:
            obj["metadata"]["annotations"] = annotations
        return self.typed(obj)


NODE = Kind(
    kind="Node",
    api_version="v1",
    resource=GroupResource("", "nodes"),
    namespaced=False,
    schema=NODE_SCHEMA,
    selectable=_node_fields,
    merge_keys={
        **_META_MERGE,
        "spec.podCIDRs": "",
        "status.conditions": "type",
        "status.addresses": "type",
    },
)
LEASE = Kind(
    kind="Lease",
    api_version="coordination.k8s.io/v1",
    resource=GroupResource("coordination.k8s.io", "leases"),
    namespaced=True,
    schema=LEASE_SCHEMA,
    selectable=_meta_fields,
    merge_keys=_META_MERGE,
)
EVENT = Kind(
    kind="Event",
    api_version="v1",
    resource=GroupResource("", "events"),
    namespaced=True,
    schema=EVENT_SCHEMA,
    selectable=_event_fields,
    merge_keys=_META_MERGE,
)
EVENTS_V1 = Kind(
    kind="Event",
    api_version="events.k8s.io/v1",
    resource=GroupResource("events.k8s.io", "events"),
    namespaced=True,
    schema=EVENTS_V1_SCHEMA,
    selectable=_meta_fields,
    merge_keys=_META_MERGE,
)


SERVICE_CIDR = Kind(
    kind="ServiceCIDR",
    api_version="networking.k8s.io/v1",
    resource=GroupResource("networking.k8s.io", "servicecidrs"),
    namespaced=False,
    schema=SERVICE_CIDR_SCHEMA,
    selectable=_meta_fields,
    merge_keys=_META_MERGE,
)


_META_ORDER = {field.name: index for index, field in enumerate(OBJECT_META.fields)}


def with_meta(obj: JsonObj, **values: Any) -> JsonObj:
    """A shallow copy of ``obj`` with metadata fields set (``None`` removes), in Go order."""
    meta = dict(obj.get("metadata") or {})
    for name, value in values.items():
        if value is None:
            meta.pop(name, None)
        else:
            meta[name] = value
    ordered = dict(sorted(meta.items(), key=lambda item: _META_ORDER.get(item[0], 99)))
    return {**obj, "metadata": ordered}

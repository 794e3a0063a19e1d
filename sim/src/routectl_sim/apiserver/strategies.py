"""Per-kind rules: the :class:`Strategy` contract and Node, Lease and Event strategies.

A :class:`Strategy` is what the generic registry asks of a kind: conversion, create and
update preparation, validation and warnings (``rest.RESTCreateStrategy`` and friends).

Promises:

* Node (``pkg/registry/core/node/strategy.go``, ``validation.ValidateNode*``, admission):
  ``spec.podCIDR``/``spec.podCIDRs`` are reconciled as the v1 conversion does (``podCIDR``
  wins when they differ); create adds the ``node.kubernetes.io/not-ready:NoSchedule`` taint;
  pod CIDRs must be valid with at most one per IP family; taints need a key and a known
  effect; updates may not change ``podCIDRs`` or a set ``providerID``; writes to ``/status``
  keep the spec, writes to the node keep the status; duplicate addresses are refused;
  ``spec.externalID`` draws the deprecation ``Warning``;
* Lease: DNS-subdomain names, ``leaseDurationSeconds > 0``, ``leaseTransitions >= 0``,
  create on PUT, and no update without ``metadata.resourceVersion``;
* ServiceCIDR: one or two valid CIDRs (one per family), immutable ``spec.cidrs``;
* Event: the legacy core/v1 rules (a Node's event lives in ``default``) and, for
  events.k8s.io/v1, the strict ones (``eventTime``, ``reportingController`` … required), plus
  the field mapping between the two versions.

Admission other than the not-ready taint, and namespace existence, are not modelled.
"""

from __future__ import annotations

from typing import Any

from routectl_sim.apiserver.kinds import EVENT, EVENTS_V1, LEASE, NODE, SERVICE_CIDR, Kind
from routectl_sim.apiserver.status import FieldError, JsonObj
from routectl_sim.apiserver.validation import (
    dns_subdomain_errors,
    path_segment_errors,
    pod_cidr_errors,
    taint_errors,
)

NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
_PODCIDR_CHANGE = 'node updates may not change podCIDR except from "" to valid'
_PROVIDER_CHANGE = 'node updates may not change providerID except from "" to valid'
_EXTERNAL_ID_WARNING = (
    '299 - "spec.externalID: this field is deprecated, and is unused by Kubernetes"'
)


class Strategy:
    """What differs per kind. The defaults are those of a plain namespaced object."""

    kind: Kind
    """The stored kind."""
    view: Kind
    """The kind as requests see it (differs for events.k8s.io Events)."""
    invalid_group = ""
    allow_create_on_update = False
    allow_unconditional_update = True

    def to_storage(self, obj: JsonObj) -> JsonObj:
        """Convert a decoded request object to the stored form."""
        return obj

    def to_view(self, obj: JsonObj) -> JsonObj:
        """Convert a stored object to the requested form (without kind/apiVersion)."""
        return obj

    def prepare_for_create(self, obj: JsonObj) -> JsonObj:
        """Defaults and side effects of create (admission included)."""
        return obj

    def validate_create(self, obj: JsonObj) -> list[FieldError]:
        """Validation of a new object."""
        return dns_subdomain_errors(obj["metadata"].get("name", ""))

    def prepare_for_update(self, new: JsonObj, old: JsonObj, *, subresource: str) -> JsonObj:
        """What an update may not change, reset from ``old``."""
        return new

    def validate_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        """Validation of an update."""
        return self.validate_create(new)

    def warnings(self, obj: JsonObj) -> list[str]:
        """``Warning`` header texts for a write of ``obj``."""
        return []


def _reconcile_pod_cidrs(obj: JsonObj) -> JsonObj:
    """The v1↔internal conversion round trip of ``podCIDR``/``podCIDRs``."""
    spec = dict(obj.get("spec") or {})
    single, many = spec.get("podCIDR", ""), list(spec.get("podCIDRs") or [])
    if single and (not many or single != many[0]):
        many = [single]
    spec.pop("podCIDR", None)
    spec.pop("podCIDRs", None)
    if many:
        spec = {"podCIDR": many[0], "podCIDRs": many, **spec}
    return {**obj, "spec": spec}


class NodeStrategy(Strategy):
    """Nodes: cluster-scoped, status subresource, unconditional updates allowed."""

    kind = view = NODE

    def prepare_for_create(self, obj: JsonObj) -> JsonObj:
        obj = _reconcile_pod_cidrs(obj)
        taints = list(obj["spec"].get("taints") or [])
        if not any(
            t.get("key") == NOT_READY_TAINT["key"] and t.get("effect") == NOT_READY_TAINT["effect"]
            for t in taints
        ):
            taints.append(dict(NOT_READY_TAINT))
        return {**obj, "spec": {**obj["spec"], "taints": taints}}

    def validate_create(self, obj: JsonObj) -> list[FieldError]:
        errors = dns_subdomain_errors(obj["metadata"].get("name", ""))
        errors += pod_cidr_errors(obj["spec"].get("podCIDRs") or [])
        errors += taint_errors(obj["spec"].get("taints") or [])
        return errors

    def prepare_for_update(self, new: JsonObj, old: JsonObj, *, subresource: str) -> JsonObj:
        if subresource == "status":
            return {**new, "spec": old["spec"]}
        return _reconcile_pod_cidrs({**new, "status": old["status"]})

    def validate_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        errors = self.validate_create(new)
        before, after = old["spec"], new["spec"]
        if before.get("podCIDRs") and before.get("podCIDRs") != after.get("podCIDRs"):
            errors.append(
                FieldError(field="spec.podCIDRs", type="Forbidden", detail=_PODCIDR_CHANGE)
            )
        if before.get("providerID") and before.get("providerID") != after.get("providerID"):
            errors.append(
                FieldError(field="spec.providerID", type="Forbidden", detail=_PROVIDER_CHANGE)
            )
        seen: list[Any] = []
        for index, address in enumerate(new["status"].get("addresses") or []):
            if address in seen:
                errors.append(
                    FieldError(field=f"status.addresses[{index}]", type="Duplicate", value=address)
                )
            seen.append(address)
        return errors

    def warnings(self, obj: JsonObj) -> list[str]:
        return [_EXTERNAL_ID_WARNING] if obj["spec"].get("externalID") else []


class LeaseStrategy(Strategy):
    """coordination.k8s.io/v1 Leases: optimistic concurrency only, no expiry logic."""

    kind = view = LEASE
    invalid_group = "coordination.k8s.io"
    allow_create_on_update = True
    allow_unconditional_update = False

    def validate_create(self, obj: JsonObj) -> list[FieldError]:
        errors = dns_subdomain_errors(obj["metadata"].get("name", ""))
        spec = obj["spec"]
        duration, transitions = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
        if duration is not None and duration <= 0:
            errors.append(
                FieldError(
                    field="spec.leaseDurationSeconds",
                    type="Invalid",
                    value=duration,
                    detail="must be greater than 0",
                )
            )
        if transitions is not None and transitions < 0:
            errors.append(
                FieldError(
                    field="spec.leaseTransitions",
                    type="Invalid",
                    value=transitions,
                    detail="must be greater than or equal to 0",
                )
            )
        return errors


class ServiceCidrStrategy(Strategy):
    """networking.k8s.io/v1 ServiceCIDRs: cluster-scoped; ``spec.cidrs`` set once."""

    kind = view = SERVICE_CIDR
    invalid_group = "networking.k8s.io"

    def validate_create(self, obj: JsonObj) -> list[FieldError]:
        errors = dns_subdomain_errors(obj["metadata"].get("name", ""))
        cidrs = obj["spec"].get("cidrs") or []
        if not cidrs:
            errors.append(FieldError(field="spec.cidrs", type="Required"))
        errors += [
            FieldError(
                field=e.field.replace("spec.podCIDRs", "spec.cidrs"),
                type=e.type,
                value=e.value,
                detail=e.detail,
            )
            for e in pod_cidr_errors(cidrs)
        ]
        return errors

    def validate_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        errors = self.validate_create(new)
        if new["spec"].get("cidrs") != old["spec"].get("cidrs"):
            errors.append(
                FieldError(
                    field="spec.cidrs",
                    type="Invalid",
                    value=new["spec"].get("cidrs"),
                    detail="field is immutable",
                )
            )
        return errors


_V1_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_CORE_TO_V1 = {core: v1 for v1, core in _V1_TO_CORE.items()}


def _rename(obj: JsonObj, names: dict[str, str]) -> JsonObj:
    return {names.get(key, key): value for key, value in obj.items()}


def _required(field: str) -> FieldError:
    return FieldError(field=field, type="Required")


class EventStrategy(Strategy):
    """core/v1 Events (the legacy validation rules)."""

    kind = view = EVENT
    allow_create_on_update = True
    controller_field = "reportingComponent"

    def validate_create(self, obj: JsonObj) -> list[FieldError]:
        errors = path_segment_errors(obj["metadata"].get("name", ""))
        return errors + self._legacy(obj)

    def _legacy(self, obj: JsonObj) -> list[FieldError]:
        namespace = obj["metadata"].get("namespace", "")
        involved = obj["involvedObject"].get("namespace", "")
        mismatch = FieldError(
            field="involvedObject.namespace",
            type="Invalid",
            value=involved,
            detail="does not match event.namespace",
        )
        if not obj.get("eventTime"):
            if (not involved and namespace not in ("", "default")) or (
                involved and involved != namespace
            ):
                return [mismatch]
            return []
        errors = []
        if not involved and namespace not in ("default", "kube-system"):
            errors.append(mismatch)
        fields = {
            self.controller_field: obj.get("reportingComponent"),
            "reportingInstance": obj.get("reportingInstance"),
            "action": obj.get("action"),
            "reason": obj.get("reason"),
        }
        errors += [_required(field) for field, value in fields.items() if not value]
        return errors

    def validate_update(self, new: JsonObj, old: JsonObj) -> list[FieldError]:
        return self._legacy(new)


class EventsV1Strategy(EventStrategy):
    """events.k8s.io/v1 Events: stored as core Events, validated strictly on create."""

    view: Kind = EVENTS_V1
    controller_field = "reportingController"

    def to_storage(self, obj: JsonObj) -> JsonObj:
        return _rename(obj, _V1_TO_CORE)

    def to_view(self, obj: JsonObj) -> JsonObj:
        return _rename(obj, _CORE_TO_V1)

    def validate_create(self, obj: JsonObj) -> list[FieldError]:
        errors = self._legacy(obj) + dns_subdomain_errors(obj["metadata"].get("name", ""))
        if not obj.get("eventTime"):
            errors.append(_required("eventTime"))
        if obj.get("type") not in ("Normal", "Warning"):
            errors.append(
                FieldError(
                    field="type",
                    type="Invalid",
                    value="",
                    detail=f"has invalid value: {obj.get('type', '')}",
                )
            )
        for core, v1 in (
            ("firstTimestamp", "deprecatedFirstTimestamp"),
            ("lastTimestamp", "deprecatedLastTimestamp"),
        ):
            if obj.get(core):
                errors.append(
                    FieldError(field=v1, type="Invalid", value="", detail="needs to be unset")
                )
        if obj.get("eventTime"):
            return errors  # the legacy rules already asked for the reporting fields
        fields = {
            "reportingController": obj.get("reportingComponent"),
            "reportingInstance": obj.get("reportingInstance"),
            "action": obj.get("action"),
            "reason": obj.get("reason"),
        }
        return errors + [_required(field) for field, value in fields.items() if not value]

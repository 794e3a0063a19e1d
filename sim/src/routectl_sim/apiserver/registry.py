"""Create, update, patch and delete, with the generic rules of kube-apiserver's registry.

Promises (``k8s.io/apiserver/pkg/registry/generic/registry/store.go``, ``rest/create.go``,
``rest/update.go``):

* bodies are decoded as Go decodes them (:mod:`.gotypes`); a body Go cannot decode is a 400
  ``<Kind> in version "v1" cannot be handled as a <Kind>: …``;
* create fills ``uid``, ``creationTimestamp`` and a ``generateName`` suffix, refuses a
  ``resourceVersion``, validates (422), then refuses an existing name (409 AlreadyExists);
* update and patch keep ``uid``, ``creationTimestamp``, ``generation`` and deletion fields,
  treat ``metadata.resourceVersion`` as a precondition (409 Conflict), require it when the
  kind does not allow unconditional updates (422), create on PUT only where the kind
  allows it (Leases, Events), and never create on PATCH (404);
* a write whose result equals the stored object is not committed: same resourceVersion,
  no watch event, still 200;
* delete of an object with finalizers only marks it (``deletionTimestamp``,
  ``deletionGracePeriodSeconds: 0``) and returns it; an update that empties the finalizers
  of a marked object completes the delete; otherwise delete answers ``Status`` Success.

What differs per kind (defaulting, validation, subresources) comes from a :class:`Strategy`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import secrets
import uuid
from collections.abc import Callable
from typing import Any

from routectl_sim.apiserver.encoding import json_copy
from routectl_sim.apiserver.gotime import now_time
from routectl_sim.apiserver.gotypes import SchemaError
from routectl_sim.apiserver.kinds import with_meta
from routectl_sim.apiserver.patch import json_patch, merge_patch, strategic_merge_patch
from routectl_sim.apiserver.status import (
    ApiError,
    FieldError,
    JsonObj,
    already_exists,
    bad_request,
    conflict,
    error,
    invalid,
    not_found,
    success,
)
from routectl_sim.apiserver.store import Key, Store
from routectl_sim.apiserver.strategies import Strategy

PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
"""Patch content types served (server-side apply is not)."""

_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@dataclasses.dataclass(frozen=True, slots=True)
class Result:
    """What a write answers: the object (or Status), the HTTP code and any warnings.

    ``answer`` is the body, or how to make it: an update's answer is a copy of the stored
    object, made when :attr:`body` is read (each time it is), so an in-process caller that
    does not read it (a simulated kubelet's heartbeat) does not pay for the copy."""

    answer: JsonObj | Callable[[], JsonObj]
    code: int = 200
    warnings: tuple[str, ...] = ()

    @property
    def body(self) -> JsonObj:
        """The body of the answer."""
        return self.answer() if callable(self.answer) else self.answer


class Registry:
    """The REST verbs of one kind over one :class:`~.store.Store`."""

    def __init__(self, *, store: Store, strategy: Strategy) -> None:
        self.store, self.strategy = store, strategy
        # Stored as shown: no conversion between the stored and the served version.
        self._stored_as_shown = (
            type(strategy).to_view is Strategy.to_view and store.kind.schema is strategy.view.schema
        )

    # -- helpers -------------------------------------------------------------------------

    def _decode_raw(self, body: Any, *, like: JsonObj | None = None) -> JsonObj:
        """Decode into the stored form; raise :class:`SchemaError` as Go's decoder would.

        ``like``: the stored object ``body`` was made from (a PATCH's), whose unchanged
        parts are canonical already (only for a kind stored as shown)."""
        if not isinstance(body, dict):
            raise SchemaError(
                f"json: cannot unmarshal {_json_type(body)} into Go value of type "
                f"{self.strategy.view.schema.go_name}"
            )
        known = (like,) if like is not None and self._stored_as_shown else ()
        return self.strategy.to_storage(self.strategy.view.schema.decode(body, known=known))

    def _decode(self, body: Any) -> JsonObj:
        view = self.strategy.view
        try:
            return self._decode_raw(body)
        except SchemaError as exc:
            raise bad_request(
                f'{view.kind} in version "{view.version}" cannot be handled as a {view.kind}: {exc}'
            ) from None

    def _canonical(self, obj: JsonObj, *, known: tuple[JsonObj, ...] = ()) -> JsonObj:
        return self.store.kind.schema.decode(obj, known=known)

    def present(self, obj: JsonObj) -> JsonObj:
        """A stored object as requests see it: converted, canonical, with kind/apiVersion.

        Every object is stored canonical (decoded as the served version, in Go's order), so
        one of a kind served as stored is only copied: decoding it again would give the same
        object, at the cost of the server's most expensive step on every heartbeat.
        """
        view = self.strategy.view
        if self._stored_as_shown:
            return view.typed(json_copy(obj))
        return view.typed(view.schema.decode(self.strategy.to_view(obj)))

    def _invalid(self, name: str, errors: list[FieldError]) -> None:
        if errors:
            raise invalid(
                group=self.strategy.invalid_group,
                kind=self.strategy.view.kind,
                name=name,
                errors=errors,
            )

    def _key(self, name: str, namespace: str | None) -> Key:
        return (namespace or "", name) if self.store.kind.namespaced else ("", name)

    def _existing(self, name: str, namespace: str | None) -> JsonObj:
        """The stored object (not a copy: the verbs only read it) or a 404."""
        found = self.store.peek(self._key(name, namespace))
        if found is None:
            raise not_found(self.strategy.view.resource, name)
        return found

    def _place(self, obj: JsonObj, namespace: str | None) -> JsonObj:
        """``EnsureObjectNamespaceMatchesRequestNamespace``."""
        have = obj["metadata"].get("namespace", "")
        want = namespace if self.store.kind.namespaced else ""
        if have and want and have != want:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        return with_meta(obj, namespace=want or None)

    # -- verbs ---------------------------------------------------------------------------

    def get(self, name: str, *, namespace: str | None = None) -> JsonObj:
        """The object as GET returns it (with kind/apiVersion)."""
        return self.present(self._existing(name, namespace))

    def create(self, body: Any, *, namespace: str | None = None) -> Result:
        """POST."""
        obj = self._place(self._decode(body), namespace)
        if obj["metadata"].get("resourceVersion"):
            raise error(
                code=500,
                reason="",
                message="resourceVersion should not be set on objects to be created",
            )
        return self._create(obj)

    def _create(self, obj: JsonObj) -> Result:
        meta = obj["metadata"]
        name = meta.get("name", "")
        if not name and meta.get("generateName"):
            suffix = "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))
            name = meta["generateName"] + suffix
        if not name:
            self._invalid(
                "",
                [
                    FieldError(
                        field="metadata.name",
                        type="Required",
                        detail="name or generateName is required",
                    )
                ],
            )
        obj = with_meta(
            obj,
            name=name,
            uid=str(uuid.uuid4()),
            resourceVersion=None,
            creationTimestamp=now_time(),
            deletionTimestamp=None,
            deletionGracePeriodSeconds=None,
            generation=None,
        )
        obj = self._canonical(self.strategy.prepare_for_create(obj))
        self._invalid(name, self.strategy.validate_create(obj))
        key = self._key(name, obj["metadata"].get("namespace"))
        if self.store.get(key) is not None:
            raise already_exists(self.strategy.view.resource, name)
        change = self.store.commit(key, obj)
        return Result(self.present(change.obj), 201, tuple(self.strategy.warnings(change.obj)))

    def update(
        self, name: str, body: Any, *, namespace: str | None = None, subresource: str = ""
    ) -> Result:
        """PUT (of the object or of a subresource)."""
        obj = self._place(self._decode(body), namespace)
        body_name = obj["metadata"].get("name", "")
        if body_name != name:
            raise bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        old = self.store.peek(self._key(name, namespace))
        if old is None:
            if not self.strategy.allow_create_on_update:
                raise not_found(self.strategy.view.resource, name)
            return self._create(obj)
        return self._update(obj, old, subresource=subresource)

    def patch(
        self,
        name: str,
        patch: Any,
        *,
        content_type: str,
        namespace: str | None = None,
        subresource: str = "",
    ) -> Result:
        """PATCH with one of :data:`PATCH_TYPES`."""
        old = self._existing(name, namespace)
        # The patch functions never change their input: a kind stored as shown is patched
        # from the stored object itself, not a copy (the result shares what it leaves alone).
        view = self.strategy.view
        current = view.typed(old) if self._stored_as_shown else self.present(old)
        if content_type == "application/json-patch+json":
            patched = json_patch(current, patch)
        elif not isinstance(patch, dict):
            raise bad_request(
                f"json: cannot unmarshal {_json_type(patch)} into Go value of type "
                "map[string]interface {}"
            )
        elif content_type == "application/merge-patch+json":
            patched = merge_patch(current, patch)
        else:
            keys = self.strategy.view.merge_keys
            patched = strategic_merge_patch(current, patch, merge_keys=keys)
        try:
            decoded = self._decode_raw(patched, like=old)
        except SchemaError as exc:
            raise _patch_invalid(patch, str(exc)) from None
        obj = self._place(decoded, namespace)
        if obj["metadata"].get("name", "") != name:
            raise bad_request(
                f"the name of the object ({obj['metadata'].get('name', '')}) does not match "
                f"the name on the URL ({name})"
            )
        if not obj["metadata"].get("resourceVersion"):
            obj = with_meta(obj, resourceVersion=old["metadata"]["resourceVersion"])
        return self._update(obj, old, subresource=subresource, decoded=decoded)

    def _update(
        self, obj: JsonObj, old: JsonObj, *, subresource: str, decoded: JsonObj | None = None
    ) -> Result:
        """Update ``old`` to ``obj``; ``decoded``: a canonical object ``obj`` was made from
        (a PATCH's result after its decode), whose parts need no decoding again."""
        name = old["metadata"]["name"]
        resource = self.strategy.view.resource
        have = obj["metadata"].get("resourceVersion", "")
        if not have and not self.strategy.allow_unconditional_update:
            raise invalid(
                group=resource.group,
                kind=resource.resource,
                name=name,
                errors=[
                    FieldError(
                        field="metadata.resourceVersion",
                        type="Invalid",
                        value=0,
                        detail="must be specified for an update",
                    )
                ],
            )
        if have and have != old["metadata"]["resourceVersion"]:
            raise conflict(resource, name)
        obj = self._keep_system_fields(obj, old)
        known = (old,) if decoded is None or not self._stored_as_shown else (old, decoded)
        prepared = self.strategy.prepare_for_update(obj, old, subresource=subresource)
        obj = self._canonical(prepared, known=known)
        errors = self._meta_update_errors(obj, old) + self.strategy.validate_update(obj, old)
        self._invalid(name, errors)
        key = self._key(name, old["metadata"].get("namespace"))
        if old["metadata"].get("deletionTimestamp") and not obj["metadata"].get("finalizers"):
            self.store.commit(key, None)
            return Result(self.present(obj))
        if obj == old:
            return Result(
                functools.partial(self.present, old), 200, tuple(self.strategy.warnings(old))
            )
        change = self.store.commit(key, obj)
        return Result(
            functools.partial(self.present, change.obj),
            200,
            tuple(self.strategy.warnings(change.obj)),
        )

    @staticmethod
    def _keep_system_fields(obj: JsonObj, old: JsonObj) -> JsonObj:
        before = old["metadata"]
        return with_meta(
            obj,
            uid=obj["metadata"].get("uid") or before.get("uid"),
            resourceVersion=before.get("resourceVersion"),
            creationTimestamp=before.get("creationTimestamp"),
            generation=before.get("generation"),
            deletionTimestamp=before.get("deletionTimestamp"),
            deletionGracePeriodSeconds=obj["metadata"].get("deletionGracePeriodSeconds")
            if before.get("deletionGracePeriodSeconds") is None
            else before.get("deletionGracePeriodSeconds"),
        )

    @staticmethod
    def _meta_update_errors(obj: JsonObj, old: JsonObj) -> list[FieldError]:
        errors = []
        if obj["metadata"].get("uid") != old["metadata"].get("uid"):
            errors.append(
                FieldError(
                    field="metadata.uid",
                    type="Invalid",
                    value=obj["metadata"].get("uid", ""),
                    detail="field is immutable",
                )
            )
        if old["metadata"].get("deletionTimestamp"):
            before = set(old["metadata"].get("finalizers") or [])
            added = [f for f in obj["metadata"].get("finalizers") or [] if f not in before]
            if added:
                errors.append(
                    FieldError(
                        field="metadata.finalizers",
                        type="Forbidden",
                        detail="no new finalizers can be added if the object is being deleted, "
                        f"found new finalizers {json.dumps(added)}",
                    )
                )
        return errors

    def delete(self, name: str, *, namespace: str | None = None, options: Any = None) -> Result:
        """DELETE, with optional ``DeleteOptions`` preconditions."""
        old = self._existing(name, namespace)
        self._check_preconditions(old, options)
        meta = old["metadata"]
        key = self._key(name, meta.get("namespace"))
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return Result(self.present(old))
            marked = with_meta(old, deletionTimestamp=now_time(), deletionGracePeriodSeconds=0)
            return Result(self.present(self.store.commit(key, marked).obj))
        self.store.commit(key, None)
        return Result(success(self.strategy.view.resource, name, meta.get("uid", "")))

    def _check_preconditions(self, old: JsonObj, options: Any) -> None:
        preconditions = options.get("preconditions") if isinstance(options, dict) else None
        if not isinstance(preconditions, dict):
            return
        meta, resource = old["metadata"], self.strategy.view.resource
        for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            wanted = preconditions.get(field)
            if wanted is not None and wanted != meta.get(field):
                raise conflict(
                    resource,
                    meta["name"],
                    f"Precondition failed: {label} in precondition: {wanted}, "
                    f"{label} in object meta: {meta.get(field, '')}",
                )


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    return "bool" if isinstance(value, bool) else "number" if value is not None else "null"


def _patch_invalid(patch: Any, detail: str) -> ApiError:
    """The 422 kube-apiserver answers when a patched object no longer decodes."""
    return invalid(
        group="",
        kind="",
        name="",
        errors=[
            FieldError(
                field="patch",
                type="Invalid",
                value=json.dumps(patch, separators=(",", ":")),
                detail=detail,
            )
        ],
    )

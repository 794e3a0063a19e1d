"""LIST semantics: list options, resourceVersion rules, selectors and chunking.

Promises (kube-api-semantics.md §1, checked against the recorded fixtures):

* :func:`parse_list_options` decodes query parameters as kube-apiserver does (booleans are
  true unless ``0``/``false``), rejects invalid combinations with the real 422
  ``ListOptions.meta.k8s.io`` errors, unsupported field labels with 400, and a non-numeric
  resourceVersion with 500;
* :func:`list_objects` answers a ``<Kind>List`` whose items have no kind/apiVersion and are
  in key (name) order; ``resourceVersion=0`` ignores ``limit``; unset means "latest";
  ``N`` with ``Exact`` (or with ``limit``) is the exact state at N, and 410 once N is older
  than the kept history; a resourceVersion in the future waits up to 3 s (loop clock) and
  then answers 504 with ``Retry-After: 1``;
* chunks keep the first page's resourceVersion; the continue token is kube-apiserver's
  (unpadded base64url of ``{"v":"meta.k8s.io/v1","rv":N,"start":"<key>\\u0000"}``);
  ``remainingItemCount`` is given only without selectors; an expired token gives 410 with
  a fresh ``rv: -1`` token that continues from the latest state.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import json
from collections.abc import Mapping

from routectl_sim.apiserver.encoding import json_copy
from routectl_sim.apiserver.kinds import Kind
from routectl_sim.apiserver.selector import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from routectl_sim.apiserver.status import (
    ApiError,
    FieldError,
    JsonObj,
    bad_request,
    build_status,
    expired,
    invalid_options,
    too_large_resource_version,
)
from routectl_sim.apiserver.store import (
    Key,
    Store,
    TooOldError,
    in_key_order,
    key_of,
    sort_key,
)

FUTURE_WAIT = 3.0
"""Seconds the real watch cache waits for a resourceVersion it has not seen yet."""

_CONTINUE_VERSION = "meta.k8s.io/v1"
_EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


def query_bool(value: str | None) -> bool | None:
    """Go's query-parameter bool: absent is ``None``; ``0``/``false`` false; else true."""
    if value is None:
        return None
    return not (value == "0" or value.lower() == "false")


def _query_int(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{raw}": invalid syntax') from None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ListOptions:
    """Decoded ``ListOptions`` of a LIST or WATCH request."""

    resource_version: str = ""
    match: str = ""
    limit: int = 0
    continue_token: str = ""
    labels: LabelSelector = dataclasses.field(default_factory=LabelSelector)
    fields: FieldSelector = dataclasses.field(default_factory=FieldSelector)
    watch: bool = False
    allow_bookmarks: bool = False
    send_initial_events: bool | None = None
    timeout_seconds: int | None = None

    @property
    def filtered(self) -> bool:
        """True when a label or field selector is set."""
        return not (self.labels.empty and self.fields.empty)

    def matches(self, kind: Kind, obj: JsonObj) -> bool:
        """True when ``obj`` passes both selectors."""
        if not self.filtered:
            return True
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return self.labels.matches(labels) and self.fields.matches(kind.selectable(obj))

    def numeric_resource_version(self) -> int:
        """The resourceVersion as a number; a non-numeric one is a 500, as on the real server."""
        raw = self.resource_version or "0"
        if not raw.isdigit():
            detail = f'strconv.ParseUint: parsing "{raw}": invalid syntax'
            raise ApiError(
                build_status(
                    code=500,
                    reason="",
                    message=f'resourceVersion: Invalid value: "{raw}": {detail}',
                )
            )
        return int(raw)


def parse_list_options(
    query: Mapping[str, str], *, kind: Kind, watch: bool | None = None
) -> ListOptions:
    """Decode and validate list/watch query parameters."""
    options = ListOptions(
        resource_version=query.get("resourceVersion", ""),
        match=query.get("resourceVersionMatch", ""),
        limit=_query_int(query, "limit") or 0,
        continue_token=query.get("continue", ""),
        labels=parse_label_selector(query.get("labelSelector", "")),
        fields=parse_field_selector(query.get("fieldSelector", ""), supported=kind.field_labels),
        watch=bool(query_bool(query.get("watch"))) if watch is None else watch,
        allow_bookmarks=bool(query_bool(query.get("allowWatchBookmarks"))),
        send_initial_events=query_bool(query.get("sendInitialEvents")),
        timeout_seconds=_query_int(query, "timeoutSeconds"),
    )
    errors = _watch_errors(options) if options.watch else _list_errors(options)
    if errors:
        raise invalid_options(errors)
    return options


def _forbidden(field: str, detail: str) -> FieldError:
    return FieldError(field=field, type="Forbidden", detail=detail)


def _list_errors(options: ListOptions) -> list[FieldError]:
    errors: list[FieldError] = []
    match = options.match
    if match:
        if not options.resource_version:
            errors.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if options.continue_token:
            errors.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if match not in ("Exact", "NotOlderThan"):
            errors.append(
                FieldError(
                    field="resourceVersionMatch",
                    type="NotSupported",
                    value=match,
                    supported=("Exact", "NotOlderThan", ""),
                )
            )
        if match == "Exact" and options.resource_version == "0":
            errors.append(
                _forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if options.send_initial_events is not None:
        errors.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return errors


def _watch_errors(options: ListOptions) -> list[FieldError]:
    errors: list[FieldError] = []
    match = options.match
    if options.send_initial_events is not None and match != "NotOlderThan":
        errors.append(
            _forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        )
    if match:
        if options.send_initial_events is None:
            errors.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                )
            )
        if match != "NotOlderThan":
            errors.append(
                FieldError(
                    field="resourceVersionMatch",
                    type="NotSupported",
                    value=match,
                    supported=("NotOlderThan",),
                )
            )
        if options.continue_token:
            errors.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
    return errors


def encode_continue(resource_version: int, start: str) -> str:
    """kube-apiserver's continue token."""
    token = json.dumps(
        {"v": _CONTINUE_VERSION, "rv": resource_version, "start": start}, separators=(",", ":")
    )
    return base64.urlsafe_b64encode(token.encode()).rstrip(b"=").decode()


def decode_continue(token: str) -> tuple[int, str]:
    """(resourceVersion, start key) of a continue token; 400 if it is not one."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
    except (binascii.Error, ValueError) as exc:
        raise bad_request(f"continue key is not valid: {exc}") from None
    if not isinstance(data, dict) or data.get("v") != _CONTINUE_VERSION:
        version = data.get("v") if isinstance(data, dict) else None
        raise bad_request(
            f'continue key is not valid: server does not recognize this encoded version "{version}"'
        )
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or rv == 0 or not isinstance(start, str):
        raise bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion "
            f"(version {_CONTINUE_VERSION})"
        )
    if not start.startswith("/"):
        start = "/" + start
    return rv, start.removesuffix("\x00")


def _relative_key(key: Key, namespace: str | None) -> str:
    """The key below the list's prefix: ``/name`` in one namespace, ``/ns/name`` across."""
    return f"/{key[1]}" if namespace is not None else sort_key(key)


async def list_objects(
    store: Store,
    options: ListOptions,
    *,
    namespace: str | None = None,
    max_chunk: int | None = None,
) -> JsonObj:
    """Answer a LIST (the whole ``<Kind>List`` object)."""
    state, list_rv, start = await _snapshot(store, options, namespace=namespace)
    kind = store.kind
    candidates = [
        obj
        for obj in in_key_order(state, namespace)
        if _relative_key(key_of(obj), namespace) > start and options.matches(kind, obj)
    ]
    limit = 0 if options.resource_version == "0" else options.limit
    if max_chunk and options.resource_version != "0":
        limit = min(limit, max_chunk) if limit > 0 else max_chunk
    page = [json_copy(obj) for obj in (candidates[:limit] if limit > 0 else candidates)]
    metadata: JsonObj = {"resourceVersion": str(list_rv)}
    if len(page) < len(candidates):
        last = _relative_key(key_of(page[-1]), namespace) if page else start
        metadata["continue"] = encode_continue(list_rv, last + "\x00")
        if not options.filtered:
            metadata["remainingItemCount"] = len(candidates) - len(page)
    return {
        "kind": kind.list_kind,
        "apiVersion": kind.api_version,
        "metadata": metadata,
        "items": page,
    }


async def _snapshot(
    store: Store, options: ListOptions, *, namespace: str | None
) -> tuple[dict[Key, JsonObj], int, str]:
    """(state, list resourceVersion, start key) the request asks for."""
    revision = store.revision
    if options.continue_token:
        if options.resource_version not in ("", "0"):
            raise bad_request("specifying resource version is not allowed when using continue")
        token_rv, start = decode_continue(options.continue_token)
        if token_rv == -1:
            return store.state_at(revision.value), revision.value, start
        try:
            return store.state_at(token_rv), token_rv, start
        except TooOldError:
            fresh = encode_continue(-1, start.removeprefix("/") + "\x00")
            raise expired(_EXPIRED_CONTINUE, metadata={"continue": fresh}) from None
    requested = options.numeric_resource_version()
    try:
        async with asyncio.timeout(FUTURE_WAIT):
            await revision.reached(requested)
    except TimeoutError:
        raise too_large_resource_version(requested, revision.value) from None
    exact = options.match == "Exact" or (
        options.match == "" and options.limit > 0 and requested > 0
    )
    if not exact:
        return store.state_at(revision.value), revision.value, ""
    try:
        return store.state_at(requested), requested, ""
    except TooOldError:
        raise expired("The resourceVersion for the provided list is too old.") from None

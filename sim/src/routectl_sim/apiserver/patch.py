"""The three PATCH flavours kube-apiserver applies to built-in types.

Promises:

* :func:`merge_patch` is RFC 7386 (``application/merge-patch+json``): maps merge, ``null``
  deletes, **lists are replaced whole**;
* :func:`strategic_merge_patch` follows ``k8s.io/apimachinery/pkg/util/strategicpatch``
  for the list strategies it is given (e.g. ``status.conditions`` merged by ``type``): a
  patch item updates the server item with the same key field by field (absent fields are
  kept, ``null`` deletes a field); a new item sent alone lands **first**; existing items keep
  their place; ``$patch: delete|replace|merge``, ``$setElementOrder/<list>``,
  ``$deleteFromPrimitiveList/<list>`` and ``$retainKeys`` are honoured; lists without a
  strategy are replaced;
* :func:`json_patch` is RFC 6902 (add, remove, replace, move, copy, test);
* inputs are never mutated (a strategic merge patch's result shares the parts of the
  original it leaves alone); problems raise :class:`~.status.ApiError` with the code the real
  server uses (400 for a malformed patch, 422 when a JSON patch does not apply, 500 for an
  SMP list item missing its merge key).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routectl_sim.apiserver.encoding import json_copy
from routectl_sim.apiserver.status import ApiError, bad_request, error

_DIRECTIVE = "$patch"
_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVES = "$deleteFromPrimitiveList/"
_RETAIN = "$retainKeys"


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return json_copy(patch)
    result = json_copy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _go_map(value: Any) -> str:
    """Go's ``%v`` of a decoded JSON value (used in error texts)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_map(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_map(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def strategic_merge_patch(
    original: Mapping[str, Any], patch: Mapping[str, Any], *, merge_keys: Mapping[str, str]
) -> dict[str, Any]:
    """Apply a strategic merge patch; ``merge_keys`` maps dotted list paths to merge keys."""
    return _merge_map(dict(original), json_copy(dict(patch)), "", merge_keys)


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], path: str, keys: Mapping[str, str]
) -> dict[str, Any]:
    # Copied on write: only the maps on a patched path are new, the rest is shared with
    # the input (which is never changed), so a decode can skip what the patch left alone.
    original = dict(original)
    directive = patch.pop(_DIRECTIVE, None)
    if directive == "replace":
        replaced: dict[str, Any] = _without_nulls(patch)
        return replaced
    if directive == "delete":
        return {}
    if directive not in (None, "merge"):
        raise bad_request(f"Unable to find unknown patch type: {directive}")
    if _RETAIN in patch:
        retain = patch.pop(_RETAIN)
        if not isinstance(retain, list):
            raise bad_request("invalid patch: $retainKeys must be a list of strings")
        original = {k: v for k, v in original.items() if k in retain}
    orders = {k[len(_ORDER) :]: patch.pop(k) for k in list(patch) if k.startswith(_ORDER)}
    for key in [k for k in patch if k.startswith(_DELETE_PRIMITIVES)]:
        field, doomed = key[len(_DELETE_PRIMITIVES) :], patch.pop(key)
        if isinstance(original.get(field), list) and isinstance(doomed, list):
            original[field] = [v for v in original[field] if v not in doomed]
    for key, value in patch.items():
        child = f"{path}.{key}" if path else key
        original = _merge_key(
            original, key, value, path=child, keys=keys, order=orders.pop(key, None)
        )
    for key, order in orders.items():  # a $setElementOrder without a patch list
        child = f"{path}.{key}" if path else key
        if isinstance(original.get(key), list) and child in keys:
            original[key] = _merge_list(original[key], [], keys[child], order=order)
    return original


def _merge_key(
    original: dict[str, Any],
    key: str,
    value: Any,
    *,
    path: str,
    keys: Mapping[str, str],
    order: Any,
) -> dict[str, Any]:
    if value is None:
        original.pop(key, None)
        return original
    current = original.get(key)
    if isinstance(value, dict) and isinstance(current, dict):
        original[key] = _merge_map(current, value, path, keys)
    elif isinstance(value, list) and isinstance(current, list) and path in keys:
        original[key] = _merge_list(current, value, keys[path], order=order)
    elif isinstance(value, list) and path in keys and current is None:
        original[key] = _merge_list([], value, keys[path], order=order)
    else:
        original[key] = _strip_directives(_without_nulls(value))
    return original


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get(_DIRECTIVE) == "delete":
            return {}
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value if not _is_directive_item(v)]
    return value


def _is_directive_item(item: Any) -> bool:
    return isinstance(item, dict) and _DIRECTIVE in item


def _merge_list(original: list[Any], patch: list[Any], merge_key: str, *, order: Any) -> list[Any]:
    if not merge_key:
        merged = list(original)
        merged += [v for v in patch if v not in merged]
        return _normalize_order(merged, patch, original, order, key=None)
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"invalid patch: list items of a merge list must be maps: {item!r}")
    specials = [item for item in patch if _DIRECTIVE in item]
    regular = [item for item in patch if _DIRECTIVE not in item]
    for item in specials:
        kind = item[_DIRECTIVE]
        if kind == "replace":
            original = []
        elif kind == "delete":
            doomed = item.get(merge_key)
            original = [o for o in original if o.get(merge_key) != doomed]
        elif kind != "merge":
            raise bad_request(f"Unable to find unknown patch type: {kind}")
    merged = list(original)  # items merged into are copied by _merge_map; the rest shared
    for item in regular:
        if merge_key not in item:
            raise error(
                code=500,
                message=f"map: {_go_map(item)} does not contain declared merge key: {merge_key}",
            )
        index = next((i for i, o in enumerate(merged) if o.get(merge_key) == item[merge_key]), None)
        if index is None:
            merged.append(item)
        else:
            merged[index] = _merge_map(merged[index], dict(item), "", {})
    return _normalize_order(merged, regular, original, order, key=merge_key)


def _identity(item: Any, key: str | None) -> Any:
    return item.get(key) if key is not None and isinstance(item, dict) else item


def _normalize_order(
    merged: list[Any], patch: list[Any], original: list[Any], order: Any, *, key: str | None
) -> list[Any]:
    """``normalizeElementOrder`` + ``mergeSortedSlice`` of ``strategicpatch``."""
    patch_order = [_identity(i, key) for i in (order if isinstance(order, list) else patch)]
    server_order = [_identity(i, key) for i in original]
    patch_items = [m for m in merged if _identity(m, key) in patch_order]
    server_only = [m for m in merged if _identity(m, key) not in patch_order]
    patch_items.sort(key=lambda m: patch_order.index(_identity(m, key)))
    server_only.sort(
        key=lambda m: (
            server_order.index(_identity(m, key))
            if _identity(m, key) in server_order
            else len(server_order)
        )
    )
    result: list[Any] = []
    while server_only or patch_items:
        if not patch_items:
            result.append(server_only.pop(0))
        elif not server_only:
            result.append(patch_items.pop(0))
        else:
            left, right = _identity(server_only[0], key), _identity(patch_items[0], key)
            if (
                left in server_order
                and right in server_order
                and server_order.index(left) < server_order.index(right)
            ):
                result.append(server_only.pop(0))
            else:
                result.append(patch_items.pop(0))
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f'add operation does not apply: doc is missing path: "{path}"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


class _NotApplicableError(Exception):
    """A JSON patch operation that does not apply to the document."""


def _parent(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise _NotApplicableError
    return node


def _get(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return doc
    node = _parent(doc, parts)
    last = parts[-1]
    if isinstance(node, dict) and last in node:
        return node[last]
    if isinstance(node, list) and last.isdigit() and int(last) < len(node):
        return node[int(last)]
    raise _NotApplicableError


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    node, last = _parent(doc, parts), parts[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list) and last == "-":
        node.append(value)
    elif isinstance(node, list) and last.isdigit() and int(last) <= len(node):
        node.insert(int(last), value)
    else:
        raise _NotApplicableError
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    _get(doc, parts)
    node, last = _parent(doc, parts), parts[-1]
    if isinstance(node, dict):
        del node[last]
    else:
        del node[int(last)]
    return doc


def json_patch(doc: Any, operations: Any) -> Any:
    """Apply an RFC 6902 JSON patch (400 if malformed, 422 if it does not apply)."""
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    result = json_copy(doc)
    for operation in operations:
        if not isinstance(operation, dict) or not isinstance(operation.get("path"), str):
            raise bad_request("invalid JSON patch operation")
        try:
            result = _apply_one(result, operation)
        except _NotApplicableError:
            raise _rejected() from None
    return result


def _apply_one(doc: Any, operation: dict[str, Any]) -> Any:
    op, parts = operation.get("op"), _pointer(operation["path"])
    if op == "add":
        return _add(doc, parts, json_copy(operation.get("value")))
    if op == "remove":
        return _remove(doc, parts)
    if op == "replace":
        _get(doc, parts)
        return _add(_remove(doc, parts), parts, json_copy(operation.get("value")))
    if op in ("move", "copy"):
        source = _pointer(str(operation.get("from", "")))
        value = json_copy(_get(doc, source))
        if op == "move":
            doc = _remove(doc, source)
        return _add(doc, parts, value)
    if op == "test":
        if _get(doc, parts) != operation.get("value"):
            raise _NotApplicableError
        return doc
    raise bad_request(f"Unexpected kind: {op}")


def _rejected() -> ApiError:
    """What ``NewGenericServerResponse(422, …)`` says when a JSON patch does not apply."""
    return error(
        code=422,
        message="the server rejected our request due to an error in our request",
        details={},
    )

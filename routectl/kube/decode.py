"""Nodes decoded straight from the API server's bytes into what routing reads, nothing more.

A Node's JSON is mostly what routing never reads (images, managed fields, annotations,
capacity, kubelet conditions): decoding all of it into dicts, on every kubelet heartbeat,
was most of an idle cluster's CPU. msgspec decodes JSON into typed structs, skipping every
other field without building it: the name, UID, creation time, pod CIDRs, provider ID,
addresses and conditions of a Node, the type of a watch event, a page's resourceVersion
and continue token. (orjson is as fast a parser, but builds every dict and string of the
object first; msgspec, given the shape, builds only the fields asked for.)

Promises:

* :func:`view_of` gives exactly what :func:`~routectl.kube.objects.parse_node` gives for the
  same object (a property test holds them together); an object whose fields have types
  the structs do not expect (never seen from a real API server) is read by the tolerant
  :func:`~routectl.kube.objects.parse_node` instead, so nothing is refused that was read
  before;
* :func:`same` tells, without building anything, whether a decoded Node changes nothing
  routing reads: a heartbeat then costs its decode and no more;
* a malformed event line or an ERROR event raises :class:`~routectl.errors.KubeError`, as
  :mod:`routectl.kube.stream` does (410 as ResourceVersionGoneError).

:func:`collector_paused` holds Python's cyclic garbage collector back while a page is read
(and, in the informer and the controller, while a list is stored and planned): building
tens of thousands of records at once otherwise sets off hundreds of collections that each
walk every record built so far, for no garbage (records hold no cycles). It is only ever
held over code that does not await, so it never stays off while the process waits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections.abc import AsyncIterator, Iterator

import aiohttp
import msgspec
import orjson

from routectl.errors import ImpossibleObjectError, InvalidObjectError, KubeError
from routectl.kube.objects import NETWORK_UNAVAILABLE, parse_node
from routectl.kube.stream import ReadPacer, lines, watch_event
from routectl.model import Condition, NodeAddress, NodeView

__all__ = [
    "NodeEvent",
    "NodePage",
    "NodeRecord",
    "collector_paused",
    "decode_event",
    "decode_page",
    "node_events",
    "same",
    "view_of",
]


class _Meta(msgspec.Struct, gc=False):
    name: str | None = None
    uid: str | None = None
    resourceVersion: str | None = None  # noqa: N815 -- the API's field names
    creationTimestamp: str | None = None  # noqa: N815


class _Spec(msgspec.Struct, gc=False):
    podCIDR: str = ""  # noqa: N815 -- null is a Node the API server never serves: refused
    podCIDRs: list[str] | None = None  # noqa: N815
    providerID: str | None = None  # noqa: N815


class _Condition(msgspec.Struct, gc=False):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None


class _Address(msgspec.Struct, gc=False):
    type: str | None = None
    address: str | None = None


class _Status(msgspec.Struct, gc=False):
    addresses: list[_Address] | None = None
    conditions: list[_Condition] | None = None


class _PageStatus(msgspec.Struct, gc=False):
    addresses: list[NodeAddress] | None = None
    """A listed Node's addresses, decoded into the model's own records (msgspec builds them,
    without Python code per address: a large list's every Node is built); an address
    without a type or with a null field, which the API server never serves, makes the page
    the tolerant parse's. (A watch event's stay structs the collector never tracks: a
    heartbeat is compared, not built.)"""
    conditions: list[_Condition] | None = None


class NodeRecord(msgspec.Struct, gc=False):
    """The fields of a Node that routing reads, as decoded (None where absent or null)."""

    metadata: _Meta | None = None
    spec: _Spec | msgspec.UnsetType | None = msgspec.UNSET
    """``None`` only for ``spec: null``, which the API server never serves (absent: UNSET)."""
    status: _Status | None = None


class _PageRecord(msgspec.Struct, gc=False):
    """A :class:`NodeRecord` of a list page (its addresses are the model's records)."""

    metadata: _Meta | None = None
    spec: _Spec | msgspec.UnsetType | None = msgspec.UNSET
    status: _PageStatus | None = None


class _ListMeta(msgspec.Struct, gc=False):
    resourceVersion: str | None = None  # noqa: N815
    continue_: str | None = msgspec.field(default=None, name="continue")


class _Page(msgspec.Struct, gc=False):
    metadata: _ListMeta | None = None
    items: list[_PageRecord] | None = None


class _Event(msgspec.Struct, gc=False):
    type: str | None = None
    object: NodeRecord | None = None


_PAGE = msgspec.json.Decoder(_Page)
_EVENT = msgspec.json.Decoder(_Event)
_EMPTY_META = _Meta()
_EMPTY_SPEC = _Spec()
_EMPTY_STATUS = _Status()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NodePage:
    """One page of a Node list: the Nodes read, those skipped (why), and where it stands."""

    nodes: list[NodeView]
    skipped: list[str]
    impossible: list[ImpossibleObjectError]
    """Nodes the API server never serves (``spec: null``...): what they say is unknown."""
    resource_version: str
    continue_token: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NodeEvent:
    """One watch event: its type, the Node's name and resourceVersion, and either the
    decoded record (:func:`view_of`, :func:`same`) or the view a tolerant parse made."""

    type: str
    name: str
    resource_version: str
    record: NodeRecord | None = None
    view: NodeView | None = None
    problem: str = ""
    """Why the object cannot be routed (no name), for a log line; empty if it can."""
    impossible: ImpossibleObjectError | None = None
    """The Node is one the API server never serves: what it says is unknown."""


def view_of(record: NodeRecord | _PageRecord) -> NodeView:
    """The :class:`NodeView` of a decoded Node (as ``parse_node`` reads it)."""
    meta = record.metadata or _EMPTY_META
    if not meta.name:
        raise InvalidObjectError("a Node without metadata.name cannot be routed")
    if record.spec is None:
        raise ImpossibleObjectError(
            f"Node {meta.name}: spec is null, not an object, which the API server never serves",
            name=meta.name,
            uid=meta.uid or "",
        )
    spec = _spec(record)
    status = record.status or _EMPTY_STATUS
    return NodeView(
        name=meta.name,
        uid=meta.uid or "",
        pod_cidrs=_pod_cidrs(spec),
        addresses=_addresses(status),
        network_unavailable=_condition(status),
        provider_id=spec.providerID or "",
        created=meta.creationTimestamp or "",
    )


def _addresses(status: _Status | _PageStatus) -> tuple[NodeAddress, ...]:
    """The addresses that name one (an empty ``address`` is left out, as parse_node does)."""
    if isinstance(status, _PageStatus):
        listed = tuple(status.addresses or ())
        for entry in listed:
            if not entry.address:
                return tuple([a for a in listed if a.address])
        return listed
    return tuple(
        [
            NodeAddress(type=a.type or "", address=a.address)
            for a in status.addresses or ()
            if a.address
        ]
    )


def _spec(record: NodeRecord | _PageRecord) -> _Spec:
    return record.spec if isinstance(record.spec, _Spec) else _EMPTY_SPEC


def same(view: NodeView, record: NodeRecord) -> bool:
    """Whether ``record`` reads as ``view`` (``view_of(record) == view``), built nothing."""
    meta = record.metadata or _EMPTY_META
    spec = _spec(record)
    status = record.status or _EMPTY_STATUS
    if (
        view.name != (meta.name or "")
        or view.uid != (meta.uid or "")
        or view.created != (meta.creationTimestamp or "")
        or view.provider_id != (spec.providerID or "")
    ):
        return False
    if spec.podCIDRs:
        if len(view.pod_cidrs) != len(spec.podCIDRs) or any(
            a != b for a, b in zip(view.pod_cidrs, spec.podCIDRs, strict=True)
        ):
            return False
    elif view.pod_cidrs != ((spec.podCIDR,) if spec.podCIDR else ()):
        return False
    kept = 0
    for address in status.addresses or ():
        if not address.address:
            continue
        if kept >= len(view.addresses):
            return False
        mine = view.addresses[kept]
        if mine.address != address.address or mine.type != (address.type or ""):
            return False
        kept += 1
    if kept != len(view.addresses):
        return False
    return _same_condition(view.network_unavailable, status)


def _pod_cidrs(spec: _Spec) -> tuple[str, ...]:
    if spec.podCIDRs:
        return tuple(spec.podCIDRs)
    return (spec.podCIDR,) if spec.podCIDR else ()


def _network_unavailable(status: _Status | _PageStatus) -> _Condition | None:
    for condition in status.conditions or ():
        if condition.type == NETWORK_UNAVAILABLE:
            return condition
    return None


_SHARED_CONDITIONS = 64
"""Distinct NetworkUnavailable conditions kept to be shared by the Nodes that carry them
(a cluster has a handful: RouteCreated, NoRouteCreated, a CNI's own)."""
_conditions: dict[tuple[str, str, str], Condition] = {}


def _condition(status: _Status | _PageStatus) -> Condition | None:
    found = _network_unavailable(status)
    if found is None:
        return None
    key = (found.status or "", found.reason or "", found.message or "")
    shared = _conditions.get(key)
    if shared is None:
        shared = Condition(status=key[0], reason=key[1], message=key[2])
        if len(_conditions) < _SHARED_CONDITIONS:
            _conditions[key] = shared
    return shared


def _same_condition(mine: Condition | None, status: _Status) -> bool:
    found = _network_unavailable(status)
    if found is None or mine is None:
        return found is None and mine is None
    return (
        mine.status == (found.status or "")
        and mine.reason == (found.reason or "")
        and mine.message == (found.message or "")
    )


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (over code that never awaits): see above."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def decode_page(body: bytes) -> NodePage:
    """A page of ``GET /api/v1/nodes``; KubeError if it is not a Node list at all."""
    with collector_paused():
        return _decode_page(body)


def _decode_page(body: bytes) -> NodePage:
    try:
        page = _PAGE.decode(body)
    except msgspec.ValidationError:
        return _tolerant_page(body)
    except msgspec.DecodeError:
        raise KubeError("list nodes: the answer is not JSON; a proxy?") from None
    nodes: list[NodeView] = []
    skipped: list[str] = []
    impossible: list[ImpossibleObjectError] = []
    for record in page.items or ():
        try:
            nodes.append(view_of(record))
        except ImpossibleObjectError as exc:
            impossible.append(exc)
        except InvalidObjectError as exc:
            skipped.append(str(exc))
    meta = page.metadata or _ListMeta()
    return NodePage(
        nodes=nodes,
        skipped=skipped,
        impossible=impossible,
        resource_version=meta.resourceVersion or "",
        continue_token=meta.continue_ or "",
    )


def _tolerant_page(body: bytes) -> NodePage:
    """A page with fields of unexpected types: read as before, by ``parse_node``."""
    page = orjson.loads(body)
    if not isinstance(page, dict):
        raise KubeError("list nodes: the answer is not a JSON object")
    items = page.get("items") or []
    if not isinstance(items, list):
        raise KubeError("list nodes: the answer's items are not a list")
    metadata = page.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise KubeError("list nodes: the answer's metadata is not an object")
    nodes: list[NodeView] = []
    skipped: list[str] = []
    impossible: list[ImpossibleObjectError] = []
    for item in items:
        try:
            nodes.append(parse_node(item))
        except ImpossibleObjectError as exc:
            impossible.append(exc)
        except InvalidObjectError as exc:
            skipped.append(str(exc))
    return NodePage(
        nodes=nodes,
        skipped=skipped,
        impossible=impossible,
        resource_version=str(metadata.get("resourceVersion") or ""),
        continue_token=str(metadata.get("continue") or ""),
    )


def decode_event(line: bytes) -> NodeEvent:
    """One line of a Node watch; KubeError for a malformed line or an ERROR event."""
    try:
        event = _EVENT.decode(line)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return _tolerant_event(line)
    kind, record = event.type or "", event.object
    if record is None or kind == "ERROR":
        return _tolerant_event(line)
    meta = record.metadata or _EMPTY_META
    return NodeEvent(
        type=kind, name=meta.name or "", resource_version=meta.resourceVersion or "", record=record
    )


def _tolerant_event(line: bytes) -> NodeEvent:
    """An event msgspec could not read as a Node's (an ERROR's Status, odd field types)."""
    event = watch_event(line)  # raises for malformed lines and ERROR events
    obj = event["object"]
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    kind = str(event.get("type") or "")
    version = metadata.get("resourceVersion")
    name = metadata.get("name")
    view: NodeView | None = None
    problem = ""
    impossible: ImpossibleObjectError | None = None
    if kind in ("ADDED", "MODIFIED"):
        try:
            view = parse_node(obj)
        except ImpossibleObjectError as exc:
            impossible = exc
        except InvalidObjectError as exc:
            problem = str(exc)
    return NodeEvent(
        type=kind,
        name=name if isinstance(name, str) else "",
        resource_version=str(version) if version else "",
        view=view,
        problem=problem,
        impossible=impossible,
    )


async def node_events(
    content: aiohttp.StreamReader, *, limit: int, pacer: ReadPacer | None = None
) -> AsyncIterator[NodeEvent]:
    """The Node watch events of ``content``, decoded; blank lines skipped; read in
    batches while busy with a ``pacer`` (:class:`~routectl.kube.stream.ReadPacer`)."""
    async for line in lines(content, limit=limit, pacer=pacer):
        if line.strip():
            yield decode_event(line)

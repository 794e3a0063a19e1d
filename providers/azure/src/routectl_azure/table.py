"""An Azure route table as this cluster sees it: names, ownership and batch plans. Pure.

Azure routes carry no tags, so cloud-provider-azure stashes the Node in the route's name
(``azure_routes.go``: ``mapNodeNameToRouteName``): with dual-stack on, which every current
release hard-codes, a route is named ``<node>____<cidr without ':', '.' and '/'>``, e.g.
``aks-pool-1____10244100024``, and goes to the Node's private IP with next hop type
``VirtualAppliance``. This module names routes exactly so, so a table the Azure CCM wrote is
adopted as it stands (and the CCM could take it back the same way).

A route is this cluster's only if it could have been made so: next hop ``VirtualAppliance``
and a name of that form whose suffix matches the route's own address prefix. Any other route
(an operator's default route to a firewall, a legacy route named by the Node alone) is never
listed, replaced or removed; a create for a prefix it holds fails terminally, naming it.
Routes are plain ARM JSON dicts (``{"name", "properties": {"addressPrefix", "nextHopType",
"nextHopIpAddress"}}``), as the REST API and the SDK's models spell them.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from routectl.answers import Answer
from routectl.cidr import canonical, parse_cidr
from routectl.errors import (
    ProviderError,
    ProviderTerminalError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl_azure.options import ROUTE_LIMIT

SEPARATOR = "____"
"""cloud-provider-azure's ``consts.RouteNameSeparator``."""
APPLIANCE = "VirtualAppliance"

Raw = dict[str, Any]


def rfc1035(cidr: str) -> str:
    """The CCM's ``cidrtoRfc1035``: the CIDR without ``:``, ``.`` and ``/``."""
    return cidr.replace(":", "").replace(".", "").replace("/", "")


def route_name(node: str, cidr: str) -> str:
    """The CCM's ``mapNodeNameToRouteName`` with dual-stack on: ``<node>____<rfc1035(cidr)>``."""
    return f"{node}{SEPARATOR}{rfc1035(cidr)}"


def routes_of(table: object, *, what: str = "Azure get route table") -> list[Raw]:
    """The routes of a route table's ARM JSON, each checked for the shape this module reads
    (``name``, ``properties.addressPrefix``, ``properties.nextHopType`` strings, a string or
    no ``properties.nextHopIpAddress``); the first value of another shape (a proxy's page
    parsed as JSON, a string where a route belongs) raises
    :class:`~routectl.errors.MalformedAnswerError` naming its path."""
    answer = Answer(table, what=what)
    answer.field("etag").text(default="")
    routes = answer.field("properties").field("routes").items()
    for route in routes:
        route.field("name").text()
        properties = route.field("properties")
        properties.field("addressPrefix").text()
        properties.field("nextHopType").text()
        properties.field("nextHopIpAddress").text(default="")
    return [route.obj() for route in routes]


def private_ips(nics: Sequence[object], *, what: str) -> frozenset[str]:
    """The private IPs of network interfaces' ARM JSON; a value of another shape raises
    :class:`~routectl.errors.MalformedAnswerError` naming its path."""
    found: set[str] = set()
    for nic in Answer(list(nics), what=what, path="value").items():
        for config in nic.field("properties").field("ipConfigurations").items():
            ip = config.field("properties").field("privateIPAddress").text(default="")
            if ip:
                found.add(ip)
    return frozenset(found)


def prefix_of(raw: Mapping[str, Any]) -> str:
    """A route's address prefix, as ARM spells it."""
    return str((raw.get("properties") or {}).get("addressPrefix") or "")


def hop_of(raw: Mapping[str, Any]) -> str:
    """A route's next hop address (empty for other next hop types)."""
    return str((raw.get("properties") or {}).get("nextHopIpAddress") or "")


def _same_prefix(a: str, b: str) -> bool:
    try:
        return canonical(a) == canonical(b)
    except ValueError:
        return a == b


def node_of(raw: Mapping[str, Any]) -> str | None:
    """The Node a route of this cluster goes to, or None when the route is not ours."""
    properties = raw.get("properties") or {}
    if str(properties.get("nextHopType") or "").lower() != APPLIANCE.lower():
        return None
    node, sep, suffix = str(raw.get("name") or "").partition(SEPARATOR)
    prefix = prefix_of(raw)
    if not (node and sep and prefix):
        return None
    try:
        spellings = {rfc1035(prefix), rfc1035(canonical(prefix))}
    except ValueError:
        return None
    return node if suffix in spellings else None


def as_route(raw: Mapping[str, Any], live: Collection[str] | None) -> Route:
    """A route of ours as routectl lists it; a blackhole when its next hop is nobody's.

    ``live`` holds the private IPs of the machines that exist, or is None when unknown.
    """
    node = node_of(raw) or ""
    gone = live is not None and hop_of(raw) not in live
    return Route(
        target_node="" if gone else node,
        destination_cidr=prefix_of(raw),
        name=str(raw.get("name") or ""),
        blackhole=gone,
    )


def next_hop(route: Route) -> str:
    """The Node's private IP of the destination's family (the CCM's ``findFirstIPByFamily``).

    From the Node's ``InternalIP`` addresses, which the Azure CCM's node controller sets to
    the NIC's private IPs. A Node without one of that family has not been set up yet.
    """
    try:
        version = parse_cidr(route.destination_cidr).version  # every spelling Kubernetes takes
    except ValueError as exc:
        raise ProviderTerminalError(f"invalid destination CIDR {route.destination_cidr!r}") from exc
    for address in route.target_node_addresses:
        if address.type != "InternalIP":
            continue
        try:
            if ipaddress.ip_address(address.address).version == version:
                return address.address
        except ValueError:
            continue
    raise ProviderError(
        f"Node {route.target_node!r} has no IPv{version} InternalIP address (yet): the route to "
        f"{route.destination_cidr} needs one as its next hop"
    )


def wanted(route: Route) -> Raw:
    """The ARM route for ``route``: named as the CCM names it, to the Node's private IP."""
    return {
        "name": route_name(route.target_node, canonical(route.destination_cidr)),
        "properties": {
            "addressPrefix": canonical(route.destination_cidr),
            "nextHopType": APPLIANCE,
            "nextHopIpAddress": next_hop(route),
        },
    }


def find_deleted(routes: Sequence[Raw], route: Route) -> int:
    """The index of the route of ours that ``route`` (as listed) names; RouteNotFoundError if
    it is gone or now goes to another Node."""
    name = route.name or route_name(route.target_node, canonical(route.destination_cidr))
    for index, raw in enumerate(routes):
        if str(raw.get("name") or "").lower() != name.lower():
            continue
        node = node_of(raw)
        if node is None or not _same_prefix(prefix_of(raw), route.destination_cidr):
            break
        if route.target_node and node.lower() != route.target_node.lower():
            break
        return index
    raise RouteNotFoundError(
        f"the route table has no route {name} to {route.destination_cidr} via "
        f"{route.target_node or 'nothing'}"
    )


def place(routes: Sequence[Raw], new: Raw) -> int | None:
    """Where ``new`` goes: None if the same route is there, the index of an older route of the
    same Node to replace (its address changed), or -1 to append. Raises on a conflict:
    RouteAlreadyExistsError for another Node's route (``holder``: that route, as listed
    when its machine is not known to be gone), ProviderTerminalError for a foreign one."""
    name, prefix = str(new["name"]), prefix_of(new)
    for index, raw in enumerate(routes):
        same_name = str(raw.get("name") or "").lower() == name.lower()
        if not (same_name or _same_prefix(prefix_of(raw), prefix)):
            continue
        node = node_of(raw)
        if node is None:
            raise ProviderTerminalError(
                f"the route table's route {raw.get('name')!r} ({prefix_of(raw)} -> "
                f"{(raw.get('properties') or {}).get('nextHopType')} {hop_of(raw)}) is not "
                f"this cluster's: routectl does not touch it, so it cannot route {prefix} here"
            )
        if not same_name:
            raise RouteAlreadyExistsError(
                f"the route table routes {prefix} to Node {node!r}", holder=as_route(raw, None)
            )
        if _same_prefix(prefix_of(raw), prefix) and hop_of(raw) == hop_of(new):
            return None
        return index
    return -1


def limit_error(present: int, limit: int = ROUTE_LIMIT) -> ProviderTerminalError:
    """The terminal error of a create past Azure's route limit."""
    return ProviderTerminalError(
        f"the route table is full: Azure allows at most {limit} routes per route table "
        f"and it holds {present}; this cluster needs another route table (or fewer Nodes on "
        "kubenet: Azure CNI needs no routes)"
    )


@dataclasses.dataclass(slots=True)
class Plan:
    """A batch applied to the table in memory: the new routes and what could not be done."""

    routes: list[Raw]
    changed: bool = False
    failed_creates: dict[int, ProviderError] = dataclasses.field(default_factory=dict)


def plan_batch(
    routes: Sequence[Raw],
    *,
    deletes: Sequence[Route],
    creates: Sequence[tuple[Route, str]],
    limit: int = ROUTE_LIMIT,
) -> Plan:
    """The table after ``deletes`` (first; "not found" is success) and ``creates`` (each
    that conflicts, lacks an address or does not fit under the limit fails by index)."""
    plan = Plan(routes=list(routes))
    for route in deletes:
        try:
            del plan.routes[find_deleted(plan.routes, route)]
            plan.changed = True
        except RouteNotFoundError:
            continue
    for index, (route, _hint) in enumerate(creates):
        try:
            new = wanted(route)
            where = place(plan.routes, new)
        except ProviderError as exc:  # another Node's route, a foreign one, no address
            plan.failed_creates[index] = exc
            continue
        if where is None:
            continue
        if where >= 0:
            plan.routes[where] = new
        elif len(plan.routes) >= limit:
            plan.failed_creates[index] = limit_error(len(plan.routes), limit)
            continue
        else:
            plan.routes.append(new)
        plan.changed = True
    return plan

"""A Neutron router's routes as this cluster sees them: pure functions, no I/O.

A router's ``routes`` are ``{destination, nexthop}`` pairs that every user of the router
shares; Neutron cannot mark one as a cluster's. A route is this cluster's only if it could
have made it: its next hop lies in one of the Nodes' subnets (``node-cidrs``). Its Node is
the server that has the next hop as an address; a next hop no server has is a blackhole.
Nothing here ever plans a change to a route that is not this cluster's. What the SDK read
off Neutron's and Nova's answers is checked before it is used: a value of the wrong shape is
a :class:`~routectl.errors.MalformedAnswerError` naming the field.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from routectl.answers import Answer
from routectl.cidr import canonical
from routectl.errors import (
    MalformedAnswerError,
    ProviderError,
    ProviderTerminalError,
    RouteAlreadyExistsError,
)
from routectl.model import Route
from routectl_openstack.options import Network

VIA = " via "


@dataclasses.dataclass(frozen=True, slots=True)
class Hop:
    """One route of the router: traffic for ``destination`` goes to ``nexthop``."""

    destination: str
    nexthop: str

    def json(self) -> dict[str, str]:
        """As Neutron spells it."""
        return {"destination": self.destination, "nexthop": self.nexthop}


def hops(raw: Iterable[Mapping[str, Any]]) -> list[Hop]:
    """The router's ``routes`` attribute as hops."""
    return [Hop(str(r.get("destination", "")), str(r.get("nexthop", ""))) for r in raw]


def checked_hops(raw: object, *, what: str = "OpenStack show router") -> list[Hop]:
    """The router's ``routes`` attribute as hops, each checked: a list (not missing: the SDK
    reads a body that is not JSON, a proxy's page, as a router with nothing in it) of
    objects whose ``destination`` is a CIDR and whose ``nexthop`` is a string; else a
    :class:`~routectl.errors.MalformedAnswerError` naming the field."""
    routes = Answer(raw, what=what, path="router.routes")
    if routes.missing:
        raise MalformedAnswerError(
            f"{what}: malformed answer: router.routes is missing (not Neutron's JSON: a "
            "proxy's page?)",
            field="router.routes",
        )
    found: list[Hop] = []
    for route in routes.items():
        destination = route.field("destination").cidr()
        found.append(Hop(destination, route.field("nexthop").text()))
    return found


def checked_servers(
    raw: Sequence[tuple[object, object]], *, what: str = "OpenStack list servers"
) -> list[tuple[str, list[str]]]:
    """Nova's servers, as (name, addresses) pairs read off the SDK's objects, checked: a
    name that is a non-empty string, ``addresses`` an object of lists of objects whose
    ``addr`` is a string; else a :class:`~routectl.errors.MalformedAnswerError` naming the
    field (never a server without addresses: its routes would look like blackholes)."""
    found: list[tuple[str, list[str]]] = []
    for index, (name, addresses) in enumerate(raw):
        where = f"servers[{index}]"
        text = Answer(name, what=what, path=f"{where}.name").text()
        if not text:
            raise MalformedAnswerError(
                f"{what}: malformed answer: {where}.name is empty", field=f"{where}.name"
            )
        networks = Answer(addresses, what=what, path=f"{where}.addresses")
        found.append(
            (
                text,
                [
                    address.field("addr").text()
                    for network in networks.obj()
                    for address in networks.field(network).items()
                ],
            )
        )
    return found


def in_cidrs(address: str, cidrs: Sequence[Network]) -> bool:
    """Whether ``address`` lies in one of ``cidrs``."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip.version == c.version and ip in c for c in cidrs)


def ours(hop: Hop, cidrs: Sequence[Network]) -> bool:
    """Whether this cluster could have made ``hop`` (its next hop is in a Node subnet)."""
    return in_cidrs(hop.nexthop, cidrs)


def as_route(hop: Hop, nodes_by_ip: Mapping[str, str]) -> Route:
    """``hop`` as routectl lists it; its name carries the next hop, for deletes."""
    node = nodes_by_ip.get(hop.nexthop, "")
    return Route(
        target_node=node,
        destination_cidr=hop.destination,
        name=f"{hop.destination}{VIA}{hop.nexthop}",
        blackhole=not node,
    )


def named_nexthop(route: Route) -> str | None:
    """The next hop a listed route's name carries, if the name is one of ours."""
    destination, via, nexthop = route.name.partition(VIA)
    if via and canonical(destination) == canonical(route.destination_cidr):
        return nexthop
    return None


def claim(
    existing: Sequence[Hop],
    wanted: Hop,
    cidrs: Sequence[Network],
    nodes_by_ip: Mapping[str, str],
) -> bool:
    """Whether ``wanted`` may be added (False: it is there already); raises on a conflict.

    Another Node's route to the destination: :class:`RouteAlreadyExistsError` naming it as
    ``holder`` (routectl deletes it first). Anyone else's: :class:`ProviderTerminalError`
    naming it.
    """
    key = canonical(wanted.destination)
    for hop in existing:
        if canonical(hop.destination) != key:
            continue
        if hop.nexthop == wanted.nexthop:
            return False
        if not ours(hop, cidrs):
            raise ProviderTerminalError(
                f"the router routes {key} to {hop.nexthop}, outside the Nodes' subnets: "
                "routectl does not touch routes it could not have made"
            )
        raise RouteAlreadyExistsError(
            f"the router routes {key} to {hop.nexthop}", holder=as_route(hop, nodes_by_ip)
        )
    return True


def fitting(error: ProviderError, present: int) -> int | None:
    """How many more routes fit, if ``error`` is Neutron's route quota naming its maximum."""
    text = str(error)
    marker = "holds at most "
    if marker not in text:
        return None
    limit = text.split(marker, 1)[1].split(" ", 1)[0]
    return max(int(limit) - present, 0) if limit.isdigit() else None

"""A Neutron router's routes as this cluster sees them: pure functions, no I/O.

A router's ``routes`` are ``{destination, nexthop}`` pairs that every user of the router
shares; Neutron cannot mark one as a cluster's. A route is this cluster's only if it could
have made it: its next hop lies in one of the Nodes' subnets (``node-cidrs``). Its Node is
the server that has the next hop as an address; a next hop no server has is a blackhole.
Nothing here ever plans a change to a route that is not this cluster's.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from routectl.cidr import canonical
from routectl.errors import ProviderError, ProviderTerminalError, RouteAlreadyExistsError
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

"""The values routectl reasons about: Nodes as routing sees them, and cloud routes.

Everything here is a frozen, slotted, keyword-only dataclass, so values can be hashed,
shared between tasks and compared without surprises. Kubernetes JSON and cloud SDK objects
never cross into the core; the edges (``kube``, the provider plugins) turn them into these.
The field names mirror upstream's ``cloudprovider.Route`` so Go plugin authors recognise them.
:func:`malformed` says what is wrong with a value a plugin returned as a Route, since
plugins are not type-checked at run time (the gate leaves such entries out).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NodeAddress:
    """One entry of a Node's ``status.addresses``, e.g. ``InternalIP 10.0.0.5``."""

    type: str
    address: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    """A Node's ``NetworkUnavailable`` condition: the only condition routectl reads or writes."""

    status: str
    reason: str
    message: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NodeView:
    """What routing needs to know of a Node, and nothing more.

    ``pod_cidrs`` keeps the strings exactly as the API server sent them: routes are created
    with these strings, as upstream does.
    """

    name: str
    uid: str
    pod_cidrs: tuple[str, ...]
    addresses: tuple[NodeAddress, ...]
    network_unavailable: Condition | None = None
    provider_id: str = ""
    created: str = ""
    """``metadata.creationTimestamp`` as served (RFC 3339, so it sorts by time)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """Traffic for ``destination_cidr`` goes to the node ``target_node``.

    ``name`` is the cloud's name for the route; it is ignored on create. A route whose target
    the provider cannot resolve has an empty ``target_node`` and may be a ``blackhole``.
    ``target_node_addresses`` is only meaningful when ``enable_node_addresses`` is set
    (upstream's per-provider opt-in to replacing routes when a node's addresses change).
    """

    target_node: str
    destination_cidr: str
    name: str = ""
    target_node_addresses: tuple[NodeAddress, ...] = ()
    blackhole: bool = False
    enable_node_addresses: bool = False


def malformed(route: object) -> str | None:
    """What makes ``route`` (as a plugin listed it) unusable, or None when it is a Route
    whose every field has its declared type. Plugins are not trusted to type-check."""
    if _plainly_well_formed(route):  # every route of a sane plugin: no dict, no message
        return None
    if not isinstance(route, Route):
        return f"not a Route but {type(route).__name__}"
    texts: dict[str, object] = {
        "target_node": route.target_node,
        "destination_cidr": route.destination_cidr,
        "name": route.name,
    }
    for field, value in texts.items():
        if not isinstance(value, str):
            return f"{field} is {type(value).__name__} {value!r:.60}, not a string"
    flags: tuple[object, ...] = (route.blackhole, route.enable_node_addresses)
    if not all(isinstance(flag, bool) for flag in flags):
        return "blackhole or enable_node_addresses is not a bool"
    addresses: object = route.target_node_addresses
    if not isinstance(addresses, tuple) or not all(_is_address(a) for a in addresses):
        return "target_node_addresses is not a tuple of NodeAddress"
    return None


def _plainly_well_formed(route: object) -> bool:
    """True for a Route whose fields have exactly their declared types (a listing of many
    thousands is checked at a few field reads each); False leaves it to the full check."""
    if type(route) is not Route:
        return False
    target: object = route.target_node
    destination: object = route.destination_cidr
    name: object = route.name
    blackhole: object = route.blackhole
    addressed: object = route.enable_node_addresses
    addresses: object = route.target_node_addresses
    return (
        type(target) is str
        and type(destination) is str
        and type(name) is str
        and type(blackhole) is bool
        and type(addressed) is bool
        and type(addresses) is tuple
        and (not addresses or all(_is_address(a) for a in addresses))
    )


def _is_address(value: object) -> bool:
    if not isinstance(value, NodeAddress):
        return False
    texts: tuple[object, ...] = (value.type, value.address)
    return all(isinstance(text, str) for text in texts)

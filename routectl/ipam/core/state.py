"""The allocator: who holds which block, who waits for one, and which block each gets next.

:class:`Allocator` is told what happens (:meth:`~Allocator.observe` a Node change, a cloud
listing, a route deleted, a claim held by someone else) and decides (:meth:`~Allocator.plan`).
It is rebuilt from the API on start and on leadership (:mod:`routectl.ipam.core.rebuild`), so
nothing it knows is lost with the process.

Promises:

* **deterministic**: Nodes without pod CIDRs are served oldest first (creationTimestamp,
  then name); each gets, per family in ``--cluster-cidr`` order, the lowest free block of
  its family's mask size, aligned, in the first active pool with room. The same state
  always gives the same answer: there is no cursor;
* **all families or none**: a Node gets a block of every family or nothing, decided in
  memory before anything is written; a full IPv6 pool never costs an IPv4 block;
* **counted holders**: a block two Nodes hold stays taken until both are gone; a block is
  released on the Node's deletion only (a deletionTimestamp is not one);
* **quarantine**: a released block is reusable only once a cloud listing no longer shows
  its route and ``reuse_delay`` has passed since the route went;
* **reservations last**: a block chosen for a Node stays its own until the Node shows
  pod CIDRs (ours, or someone else's: then ours goes to quarantine) or is deleted.

Times are passed in (the caller's clock). Pure: no I/O, no clock, no logging.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from routectl.cidr import Network, network_or_none
from routectl.ipam.core.findings import CONFLICT, Finding, conflict, inspect
from routectl.ipam.core.pools import Pool, Pools
from routectl.ipam.core.quarantine import Quarantine
from routectl.ipam.core.space import AddressSpace
from routectl.model import NodeView

NODE = "node:"
QUARANTINE = "quarantine"
FOREIGN = "claimed-by:"
EXCLUDED = "excluded:"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Allocation:
    """Blocks for one Node, one per family in ``--cluster-cidr`` order."""

    node: str
    uid: str
    cidrs: tuple[Network, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Waiting:
    """A Node that gets nothing now, and why."""

    node: str
    uid: str
    message: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What :meth:`Allocator.plan` decided."""

    allocations: tuple[Allocation, ...] = ()
    waiting: tuple[Waiting, ...] = ()


def order_key(node: NodeView) -> tuple[str, str]:
    """Oldest first: creationTimestamp (RFC 3339 sorts by time), then name."""
    return node.created, node.name


class Allocator:
    """The allocation state of one cluster, rebuilt from the API, changed incrementally."""

    def __init__(self, pools: Pools, *, reuse_delay: float) -> None:
        self.pools = pools
        self.space = AddressSpace()
        self.quarantined = Quarantine(delay=reuse_delay)
        self.findings: dict[str, tuple[Finding, ...]] = {}
        self._held: dict[str, tuple[Network, ...]] = {}
        self._pending: dict[str, NodeView] = {}
        self._reserved: dict[str, tuple[Network, ...]] = {}
        self._views: dict[str, NodeView] = {}
        self._exclusions: dict[str, set[Network]] = {}
        self.exclude("flags", pools.exclusions)

    # -- what happened ------------------------------------------------------------------------

    def exclude(self, source: str, networks: Iterable[Network]) -> None:
        """The exclusions from ``source`` are now exactly ``networks`` (replacing earlier ones)."""
        tag, wanted = EXCLUDED + source, set(networks)
        for network in self._exclusions.get(source, set()) - wanted:
            self.space.discard(network, tag)
        for network in wanted:
            self.space.add(network, tag)
        self._exclusions[source] = wanted

    def observe(self, old: NodeView | None, new: NodeView | None, *, now: float) -> None:
        """A Node was added, changed or deleted (``new`` None)."""
        touched: set[str] = set()
        if old is not None and (new is None or new.uid != old.uid):
            touched |= self._forget(old.name, now=now)
        if new is not None:
            touched |= self._learn(new, now=now)
        self._refresh(touched)

    def load(self, nodes: Iterable[NodeView], *, now: float) -> None:
        """Take many Nodes at once (a rebuild): findings are worked out once, at the end."""
        names = [node.name for node in nodes if not self._learn(node, now=now, alone=False)]
        self._refresh(names)

    def _learn(self, node: NodeView, *, now: float, alone: bool = True) -> set[str]:
        name = node.name
        if not node.pod_cidrs:
            if name not in self._held:
                self._pending[name] = node
            return {name}
        self._pending.pop(name, None)
        networks = tuple(dict.fromkeys(n for c in node.pod_cidrs if (n := network_or_none(c))))
        before = (*self._reserved.pop(name, ()), *self._held.get(name, ()))
        touched = {name}
        for network in networks:
            self.space.add(network, NODE + name)
        for network in dict.fromkeys(before):
            if network not in networks:
                touched |= self._release(name, network, now=now)
        self._held[name] = networks
        self._views[name] = node
        return touched | self._neighbours(name) if alone else set()

    def _forget(self, name: str, *, now: float) -> set[str]:
        self._pending.pop(name, None)
        self.findings.pop(name, None)
        self._views.pop(name, None)
        touched = self._neighbours(name)
        for network in (*self._reserved.pop(name, ()), *self._held.pop(name, ())):
            touched |= self._release(name, network, now=now)
        touched.discard(name)
        return touched

    def _release(self, name: str, network: Network, *, now: float) -> set[str]:
        self.space.discard(network, NODE + name)
        holders = self._node_holders(network)
        if not holders and network not in self.quarantined and self._in_pool(network):
            self.quarantine(network, since=now)
        return holders

    def quarantine(self, network: Network, *, since: float) -> None:
        """``network`` is released: reusable once its route is gone and the delay passed."""
        self.quarantined.add(network, since=since)
        self.space.add(network, QUARANTINE)

    def claimed_elsewhere(self, network: Network, holder: str) -> None:
        """Someone else (another writer) claims ``network``: never hand it out."""
        self.space.add(network, FOREIGN + holder)

    def give_up(self, name: str, *, now: float) -> None:
        """Node ``name`` will not get what was reserved for it: quarantine that."""
        for network in self._reserved.pop(name, ()):
            self._release(name, network, now=now)

    def unreserve(self, name: str) -> None:
        """Forget what was reserved for ``name``, nothing of it written: plan again."""
        for network in self._reserved.pop(name, ()):
            self.space.discard(network, NODE + name)

    def resume(self, name: str, networks: tuple[Network, ...]) -> bool:
        """Hold ``networks`` for pending Node ``name`` again (a claim made before a restart)."""
        if name not in self._pending or not all(self.space.is_free(n) for n in networks):
            return False
        for network in networks:
            self.space.add(network, NODE + name)
        self._reserved[name] = networks
        return True

    def free(self, network: Network) -> None:
        """The quarantine of ``network`` is over (and its claim deleted): reuse it."""
        if self.quarantined.remove(network):
            self.space.discard(network, QUARANTINE)

    # -- decisions ----------------------------------------------------------------------------

    def plan(self) -> Decision:
        """Reserve blocks for the Nodes that wait, oldest first, all families or none."""
        allocations: list[Allocation] = []
        waiting: list[tuple[NodeView, int]] = []
        full: set[int] = set()
        for node in sorted(self._pending.values(), key=order_key):
            if node.name in self._reserved:
                allocations.append(self._allocation(node, self._reserved[node.name]))
                continue
            picks: list[Network] = []
            for family in self.pools.families:
                block = None if family in full else self._pick(family)
                if block is None:
                    full.add(family)
                    waiting.append((node, family))
                    break
                picks.append(block)
            else:
                for block in picks:
                    self.space.add(block, NODE + node.name)
                self._reserved[node.name] = tuple(picks)
                allocations.append(self._allocation(node, tuple(picks)))
        return Decision(
            allocations=tuple(allocations),
            waiting=tuple(
                Waiting(node=n.name, uid=n.uid, message=self.exhausted(f, waiting=len(waiting)))
                for n, f in waiting
            ),
        )

    def _allocation(self, node: NodeView, cidrs: tuple[Network, ...]) -> Allocation:
        return Allocation(node=node.name, uid=node.uid, cidrs=cidrs)

    def _pick(self, family: int) -> Network | None:
        for pool in self.pools.of_family(family):
            block = self.space.lowest_free(pool.network, pool.mask)
            if block is not None:
                return block
        return None

    def exhausted(self, family: int, *, waiting: int) -> str:
        """Why a Node waits for a block of ``family``, and what to change."""
        pools = self.pools.of_family(family)
        mask = pools[0].mask if pools else 0
        capacity = sum(p.capacity for p in pools)
        free = sum(self.space.free_blocks(p.network, p.mask) for p in pools)
        quarantined = sum(1 for n in self.quarantined.released if n.version == family)
        flag = "--node-cidr-mask-size" + ("-ipv6" if family == 6 else "-ipv4")  # noqa: PLR2004
        remedy = f"add a pool to --additional-cluster-cidrs or use a longer {flag}"
        if quarantined:
            remedy += "; quarantined blocks are reused after --pod-cidr-reuse-delay"
        return (
            f"no free /{mask} in {','.join(str(p.network) for p in pools)} "
            f"({capacity - free}/{capacity} taken, {quarantined} quarantined, "
            f"{waiting} nodes waiting); {remedy}"
        )

    # -- what it knows ------------------------------------------------------------------------

    @property
    def pending(self) -> list[NodeView]:
        """The live Nodes without pod CIDRs, oldest first."""
        return sorted(self._pending.values(), key=order_key)

    def held(self, name: str) -> tuple[Network, ...]:
        """The blocks Node ``name`` holds or has reserved."""
        return self._held.get(name) or self._reserved.get(name, ())

    def holders(self) -> dict[str, tuple[Network, ...]]:
        """Every Node's pod CIDRs (parsed), by name."""
        return dict(self._held)

    @property
    def conflicts(self) -> int:
        """How many Nodes hold a block another Node holds too (or overlaps)."""
        return sum(any(f.reason == CONFLICT for f in fs) for fs in self.findings.values())

    def _node_holders(self, network: Network) -> set[str]:
        return {
            tag[len(NODE) :]
            for other in self.space.overlapping(network)
            for tag in self.space.tags(other)
            if tag.startswith(NODE)
        }

    def _neighbours(self, name: str) -> set[str]:
        found: set[str] = set()
        for network in self._held.get(name, ()):
            found |= self._node_holders(network)
        found.discard(name)
        return found

    def _in_pool(self, network: Network) -> bool:
        return any(
            p.network.version == network.version and p.network.overlaps(network)
            for p in self.pools.all
        )

    def _refresh(self, names: Iterable[str]) -> None:
        for name in names:
            networks, view = self._held.get(name), self._views.get(name)
            if networks is None or view is None:
                self.findings.pop(name, None)
                continue
            found = inspect(name, view.pod_cidrs, self.pools)
            found += sorted(
                {
                    conflict(name, mine, other, theirs)
                    for mine in networks
                    for theirs in self.space.overlapping(mine)
                    for tag in self.space.tags(theirs)
                    if tag.startswith(NODE) and (other := tag[len(NODE) :]) != name
                }
            )
            self.findings[name] = tuple(found)

    def pool_of(self, network: Network) -> Pool | None:
        """The pool ``network`` lies in."""
        return self.pools.containing(network)

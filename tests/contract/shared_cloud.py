"""A small in-memory cloud with one route table that clusters and operators share.

It is the fake cloud of the contract suite's own tests: the reference provider and the
deliberately wrong ones (``wrong_providers``) talk to it. Each method is one "request",
counted in :attr:`SharedCloud.requests`; failures are :class:`CloudError` answers with an
HTTP-like status (409 conflict, 404 not found, 429 throttled with ``retry_after``, 400
bad request, 403 forbidden, 503 unavailable). Entries carry the cluster that made them
(``owner``; ``""`` for an operator's route), the machine they lead to and a name.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import ipaddress
from collections.abc import Callable
from typing import TypeVar

from routectl.cidr import canonical

T = TypeVar("T")
PAGE = 2
"""Entries per listing page: small, so that listings page."""


class CloudError(Exception):
    """An error answer of the shared cloud."""

    def __init__(self, status: int, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.retry_after = retry_after


class LostAnswerError(CloudError):
    """The change was made, but the answer never arrived (a dropped connection)."""


@dataclasses.dataclass(slots=True, kw_only=True)
class Entry:
    """One route of the table."""

    destination: str
    machine: str
    owner: str
    name: str


_FAULTS = {
    "throttled": CloudError(429, "slow down", retry_after=7.0),
    "transient": CloudError(503, "unavailable"),
    "terminal": CloudError(403, "forbidden"),
}


class SharedCloud:
    """Machines (id -> Node name) and one shared route table."""

    def __init__(self, *, ipv4_only: bool = False) -> None:
        self.ipv4_only = ipv4_only
        self.machines: dict[str, str] = {}
        self.entries: list[Entry] = []
        self.requests: list[str] = []
        self.faults: collections.deque[str] = collections.deque()
        self.delay = 0
        """Requests (writes, for a lost answer) to let through before the first fault."""
        self.garbled: list[object] = []
        """Entries of the wrong shape the next page answers with (a garbled answer)."""

    # -- scenes (not requests) ------------------------------------------------------------

    def add_machine(self, node: str) -> str:
        """A machine for ``node``; its id."""
        machine = f"m-{node}"
        self.machines[machine] = node
        return machine

    def put(self, destination: str, machine: str, owner: str) -> None:
        """An entry made behind the plugins' backs."""
        self.entries.append(
            Entry(destination=canonical(destination), machine=machine, owner=owner, name="x")
        )

    # -- requests ---------------------------------------------------------------------------

    async def page(self, number: int) -> tuple[list[Entry], bool]:
        """One page of entries, and whether another follows (garbled entries first, once)."""

        def answer() -> tuple[list[Entry], bool]:
            garbled, self.garbled = self.garbled, []
            chunk = [
                dataclasses.replace(e) for e in self.entries[number * PAGE : (number + 1) * PAGE]
            ]
            return [*garbled, *chunk], len(self.entries) > (number + 1) * PAGE  # type: ignore[list-item]

        return await self._serve("page", answer)

    async def list_machines(self) -> dict[str, str]:
        """Every machine."""
        return await self._serve("machines", lambda: dict(self.machines))

    async def add(self, entry: Entry) -> None:
        """Add an entry; 409 if the destination is taken, 400 for IPv6 where not routed."""
        await self._serve("add", lambda: self._add(entry), write=True)

    async def overwrite(self, entry: Entry) -> None:
        """Put an entry in place of whatever holds its destination."""

        def change() -> None:
            self.entries = [e for e in self.entries if e.destination != entry.destination]
            self.entries.append(entry)

        await self._serve("overwrite", change, write=True)

    async def remove(self, destination: str, machine: str | None) -> None:
        """Remove the entry to ``destination`` (via ``machine``, if given); 404 if none."""

        def change() -> None:
            kept = [
                e
                for e in self.entries
                if not (e.destination == destination and machine in (None, e.machine))
            ]
            if len(kept) == len(self.entries):
                raise CloudError(404, "no such route")
            self.entries = kept

        await self._serve("remove", change, write=True)

    async def set_owner(self, destination: str, owner: str) -> None:
        """Mark the entry to ``destination`` as ``owner``'s."""

        def change() -> None:
            for entry in self.entries:
                if entry.destination == destination:
                    entry.owner = owner

        await self._serve("set-owner", change, write=True)

    async def write_table(self, entries: list[Entry]) -> None:
        """Replace the whole table (one request)."""

        def change() -> None:
            self.entries = [dataclasses.replace(e) for e in entries]

        await self._serve("write-table", change, write=True)

    def _add(self, entry: Entry) -> None:
        try:
            ipaddress.ip_network(entry.destination)
        except ValueError:
            raise CloudError(400, f"{entry.destination} is not a network address") from None
        if self.ipv4_only and ipaddress.ip_network(entry.destination).version == 6:
            raise CloudError(400, "IPv6 is not routed here")
        if any(e.destination == entry.destination for e in self.entries):
            raise CloudError(409, "destination taken")
        self.entries.append(entry)

    async def _serve(self, operation: str, action: Callable[[], T], *, write: bool = False) -> T:
        self.requests.append(operation)
        await asyncio.sleep(0)
        if self.faults and (self.faults[0] != "lost-answer" or write):
            if self.delay:
                self.delay -= 1
                return action()
            kind = self.faults.popleft()
            if kind == "lost-answer":
                action()
                raise LostAnswerError(599, "connection reset by peer")
            raise _FAULTS[kind]
        return action()

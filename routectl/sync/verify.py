"""Write verification: what a fresh listing says of the writes the cloud acknowledged.

Promises:

* :meth:`WriteChecks.acknowledged` remembers a sync's acknowledged creates and deletes and
  says when to list again to check them: :data:`VERIFY_AFTER` seconds, doubled for each
  time in a row a write of them was found missing, never more than the cap it is given;
* :meth:`WriteChecks.confirm` takes a fresh listing and returns each remembered write it
  does not show (a create not listed, a delete still listed; a destination deleted and
  created again is checked for the create), with how many times in a row;
  such a write is *in doubt* until a listing shows it (or, for a create, its Node is gone);
* :meth:`WriteChecks.doubted_creates` names the creates in doubt: acknowledged again, they
  do not make their Node routed (:mod:`routectl.sync.condition_stream`).

Pure: no I/O, no clock, no logging; the controller counts and says the misses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from routectl.cidr import canonical
from routectl.model import Route
from routectl.sync.apply import Applied

VERIFY_AFTER = 5.0
"""Seconds after a sync that wrote before the listing that checks its writes."""
_MAX_DOUBLINGS = 30
"""Beyond this the wait is the cap anyway (and 2**n stays a small number)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Miss:
    """An acknowledged write a fresh listing does not show."""

    operation: str
    """``create`` or ``delete``."""
    node: str
    cidr: str
    times: int
    """How many listings in a row did not show it (1: the first)."""


class WriteChecks:
    """The acknowledged writes not checked yet, and those in doubt."""

    def __init__(self) -> None:
        self._unconfirmed: dict[tuple[str, str], str] = {}
        """(target Node, canonical CIDR) -> "create"/"delete": acknowledged, not listed yet."""
        self._doubted: dict[tuple[str, str, str], int] = {}
        """(operation, target Node, canonical CIDR) -> listings in a row that missed it."""

    def acknowledged(self, applied: Applied, *, cap: float) -> float | None:
        """Remember ``applied``'s writes; the seconds until the listing that checks them
        (None: nothing was written)."""
        # A destination deleted and created again (a blackhole or a stale route repaired
        # under the same Node) is checked for what the sync left there: the create.
        for route in applied.deleted:
            self._unconfirmed[_key(route)] = "delete"
        for c in applied.created:
            self._unconfirmed[_key(c.route)] = "create"
        if not applied.changed:
            return None
        misses = max(
            (self._doubted.get((op, *key), 0) for key, op in self._unconfirmed.items()),
            default=0,
        )
        return min(VERIFY_AFTER * (1 << min(misses, _MAX_DOUBLINGS)), max(VERIFY_AFTER, cap))

    def doubted_creates(self) -> frozenset[tuple[str, str]]:
        """(Node, canonical CIDR) of the creates in doubt."""
        return frozenset((node, cidr) for op, node, cidr in self._doubted if op == "create")

    def confirm(self, routes: Sequence[Route], *, exists: Callable[[str], bool]) -> list[Miss]:
        """Check the remembered writes against a fresh listing ``routes``; ``exists`` says
        whether a Node is still there. The writes it does not show, in order."""
        if not self._unconfirmed and not self._doubted:
            return []  # nothing to check: the listing is not even read
        listed = {_key(r) for r in routes if not r.blackhole}
        for op, node, cidr in list(self._doubted):
            gone = op == "create" and not exists(node)  # nothing to route now
            if gone or ((node, cidr) in listed) == (op == "create"):
                del self._doubted[(op, node, cidr)]
        misses = []
        for (node, cidr), operation in sorted(self._unconfirmed.items()):
            if ((node, cidr) in listed) == (operation == "create"):
                continue
            times = self._doubted.get((operation, node, cidr), 0) + 1
            self._doubted[(operation, node, cidr)] = times
            misses.append(Miss(operation=operation, node=node, cidr=cidr, times=times))
        self._unconfirmed.clear()
        return misses


def _key(route: Route) -> tuple[str, str]:
    return route.target_node, canonical(route.destination_cidr)  # unparsable: as it is

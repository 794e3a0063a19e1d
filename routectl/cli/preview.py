"""How ``routectl plan`` shows a plan: a text table for people, JSON for tools; with node
IPAM on, the allocations it would make, the Nodes that would wait and the findings too.

:func:`ownership` says how many routes routectl owns in each table it reads (the tables a
plugin describes with an optional ``route_tables()``, else its listing as one table); a
non-empty table of which it owns none is a warning, the sign of a wrong ``--cluster-name``,
``--cluster-cidr`` or table. :func:`verdict_lines` shows what the mass-delete guard would do,
:func:`condition_changes` the Node conditions a sync would write (``NetworkUnavailable=True``
stops scheduling on a Node: the one change a preview must not hide).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping

from routectl.cidr import Network, canonical, network_or_none
from routectl.ipam.core import Decision, Finding
from routectl.model import Condition, NodeView, Route
from routectl.plan.conditions import desired_condition, routes_created
from routectl.plan.guard import Verdict
from routectl.plan.reconcile import Plan

LISTING = "(the provider's listing)"
"""The one table of a plugin that describes none."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Ownership:
    """One table routectl reads: how many routes it holds, how many are routectl's."""

    table: str
    routes: int
    owned: int

    @property
    def warning(self) -> str:
        """Why this table looks wrong ("" when it does not)."""
        if self.routes and not self.owned:
            return (
                f"routectl owns none of the {self.routes} routes of {self.table}: check "
                "--cluster-name, --cluster-cidr and the provider's table options"
            )
        return ""


def ownership(
    routes: Collection[Route],
    cidrs: Collection[Network],
    tables: Mapping[str, Collection[str]] | None,
) -> list[Ownership]:
    """How many of ``routes`` (the listing) routectl owns (inside ``cidrs``), per table."""

    def inside(text: str) -> bool:
        network = network_or_none(text)
        return network is not None and any(
            c.version == network.version and network.subnet_of(c)  # type: ignore[arg-type]
            for c in cidrs
        )

    owned = {canonical(r.destination_cidr) for r in routes if inside(r.destination_cidr)}
    if tables is None:
        return [Ownership(table=LISTING, routes=len(routes), owned=len(owned))]
    return [
        Ownership(table=name, routes=len(dests), owned=len(owned & set(dests)))
        for name, dests in sorted(tables.items())
    ]


def verdict_lines(verdict: Verdict, result: Plan) -> list[str]:
    """The mass-delete guard's verdict on ``result``, as ``routectl run`` would reach it."""
    if verdict.tripped:
        withheld = len(result.deletes)
        return [f"mass-delete guard: would withhold {withheld} deletes: {verdict.message}"]
    if result.deletes:
        return [f"mass-delete guard: would allow the {len(result.deletes)} deletes"]
    return ["mass-delete guard: nothing to delete"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ConditionChange:
    """A Node's NetworkUnavailable condition that a sync would write."""

    node: str
    now: Condition | None
    then: Condition

    @property
    def line(self) -> str:
        """How ``routectl plan`` shows it."""
        was = f"{self.now.status} ({self.now.reason})" if self.now else "not set"
        return (
            f"condition: node {self.node} NetworkUnavailable would become {self.then.status} "
            f"({self.then.reason}), now {was}"
        )


def condition_changes(
    nodes: Iterable[NodeView], result: Plan, carried: Plan
) -> list[ConditionChange]:
    """The NetworkUnavailable writes a sync of ``carried`` would make, if every create it
    carries out succeeds (a create the mass-delete guard withholds counts as failed)."""
    by_name = {node.name: node for node in nodes}
    withheld = [c for c in result.creates if c not in carried.creates]
    wanted = routes_created(nodes=by_name.values(), plan=carried, failed=withheld)
    changes = []
    for name, created in sorted(wanted.items()):
        now = by_name[name].network_unavailable
        then = desired_condition(now, routes_created=created)
        if then is not None:
            changes.append(ConditionChange(node=name, now=now, then=then))
    return changes


def ownership_lines(tables: Iterable[Ownership]) -> list[str]:
    """One line per table; a warning line for a table routectl owns nothing of."""
    lines = []
    for t in tables:
        lines.append(f"table {t.table}: {t.routes} routes, {t.owned} owned by this cluster")
        if t.warning:
            lines.append(f"WARNING: {t.warning}")
    return lines


WITHHELD_DELETE = "withheld by the mass-delete guard"
WITHHELD_CREATE = "withheld: it waits for a delete the mass-delete guard withholds"


def plan_as_json(result: Plan, carried: Plan | None = None) -> Mapping[str, object]:
    """The plan as plain JSON values (``routectl plan -o json``); a create or delete that
    ``carried`` (the plan the mass-delete guard lets through) leaves out is ``withheld``."""
    carried = carried or result
    return {
        "creates": [
            {
                "node": c.route.target_node,
                "cidr": c.route.destination_cidr,
                "name_hint": c.name_hint,
                "after_deleting": [r.name or r.destination_cidr for r in c.replaces],
                "withheld": c not in carried.creates,
            }
            for c in result.creates
        ],
        "deletes": [
            {
                "name": r.name,
                "node": r.target_node,
                "cidr": r.destination_cidr,
                "blackhole": r.blackhole,
                "withheld": r not in carried.deletes,
            }
            for r in result.deletes
        ],
        "problems": [
            {"node": p.node, "reason": p.reason, "message": p.message} for p in result.problems
        ],
        "owned_routes": result.owned_routes,
    }


def plan_as_table(result: Plan, carried: Plan | None = None) -> str:
    """The plan as a text table (``routectl plan``). The title counts what ``routectl run``
    would carry out (``carried``: the plan the mass-delete guard lets through); the rows it
    withholds stay, marked as withheld."""
    carried = carried or result
    rows = [("action", "node", "CIDR", "route name", "note")]
    rows += [
        (
            "delete",
            r.target_node or "-",
            r.destination_cidr,
            r.name,
            "; ".join(
                [*(["blackhole"] * r.blackhole), *([WITHHELD_DELETE] * (r not in carried.deletes))]
            ),
        )
        for r in result.deletes
    ]
    replaced = "after deleting the route it replaces"
    rows += [
        (
            "create",
            c.route.target_node,
            c.route.destination_cidr,
            "",
            WITHHELD_CREATE if c not in carried.creates else replaced * bool(c.replaces),
        )
        for c in result.creates
    ]
    rows += [
        ("problem", p.node or "-", "", "", f"{p.reason}: {p.message}") for p in result.problems
    ]
    if result.empty and not result.problems:
        rows.append(("-", "", "", "", "the cloud matches the cluster"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    title = f"routectl plan: {len(carried.creates)} to create, {len(carried.deletes)} to delete"
    held = len(result.creates) - len(carried.creates), len(result.deletes) - len(carried.deletes)
    if any(held):
        title += f" ({held[0]} creates and {held[1]} deletes withheld by the mass-delete guard)"
    lines = [
        title,
        *("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows),
    ]
    return "\n".join(lines) + "\n"


def allocations_as_json(decision: Decision, findings: Iterable[Finding]) -> Mapping[str, object]:
    """Node IPAM's part of ``routectl plan -o json``: allocations it would make, who waits."""
    return {
        "allocations": [
            {"node": a.node, "pod_cidrs": [str(c) for c in a.cidrs]} for a in decision.allocations
        ],
        "waiting": [{"node": w.node, "why": w.message} for w in decision.waiting],
        "findings": [{"node": f.node, "reason": f.reason, "message": f.message} for f in findings],
    }


def allocations_as_table(decision: Decision, findings: Iterable[Finding]) -> str:
    """Node IPAM's part of ``routectl plan``: one line per allocation, wait and finding."""
    rows = [("action", "node", "pod CIDRs", "note")]
    rows += [("allocate", a.node, ",".join(map(str, a.cidrs)), "") for a in decision.allocations]
    rows += [("wait", w.node, "", w.message) for w in decision.waiting]
    rows += [("finding", f.node, "", f"{f.reason}: {f.message}") for f in findings]
    if len(rows) == 1:
        rows.append(("-", "", "", "every Node has its pod CIDRs"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    title = f"node IPAM: {len(decision.allocations)} to allocate, {len(decision.waiting)} waiting"
    body = (
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )
    return "\n".join([title, *body]) + "\n"

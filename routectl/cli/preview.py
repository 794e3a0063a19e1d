"""How ``routectl plan`` shows a plan: a text table for people, JSON for tools; with node
IPAM on, the allocations it would make, the Nodes that would wait and the findings too."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from routectl.ipam.core import Decision, Finding
from routectl.plan.reconcile import Plan


def plan_as_json(result: Plan) -> Mapping[str, object]:
    """The plan as plain JSON values (``routectl plan -o json``)."""
    return {
        "creates": [
            {
                "node": c.route.target_node,
                "cidr": c.route.destination_cidr,
                "name_hint": c.name_hint,
                "after_deleting": [r.name or r.destination_cidr for r in c.replaces],
            }
            for c in result.creates
        ],
        "deletes": [
            {
                "name": r.name,
                "node": r.target_node,
                "cidr": r.destination_cidr,
                "blackhole": r.blackhole,
            }
            for r in result.deletes
        ],
        "problems": [
            {"node": p.node, "reason": p.reason, "message": p.message} for p in result.problems
        ],
        "owned_routes": result.owned_routes,
    }


def plan_as_table(result: Plan) -> str:
    """The plan as a text table (``routectl plan``)."""
    rows = [("action", "node", "CIDR", "route name", "note")]
    rows += [
        ("delete", r.target_node or "-", r.destination_cidr, r.name, "blackhole" * r.blackhole)
        for r in result.deletes
    ]
    replaced = "after deleting the route it replaces"
    rows += [
        ("create", c.route.target_node, c.route.destination_cidr, "", replaced * bool(c.replaces))
        for c in result.creates
    ]
    rows += [
        ("problem", p.node or "-", "", "", f"{p.reason}: {p.message}") for p in result.problems
    ]
    if result.empty and not result.problems:
        rows.append(("-", "", "", "", "the cloud matches the cluster"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    title = f"routectl plan: {len(result.creates)} to create, {len(result.deletes)} to delete"
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

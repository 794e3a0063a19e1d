"""``routectl run`` and ``routectl plan``: connect to the cloud and the API server, then serve
or preview. A bad provider or option fails before any I/O; the exit code says how it ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import sys
import uuid
from collections.abc import Collection

from routectl.allocation import pools_of
from routectl.cidr import canonical
from routectl.config import Settings
from routectl.ipam import Claim, Decision, Finding, parse_claim, rebuild
from routectl.ipam.objects import CLAIM_SELECTOR
from routectl.kube import KubeClient, parse_node
from routectl.logs import configure_logging
from routectl.metrics import Metrics
from routectl.model import NodeView, Route
from routectl.preview import (
    allocations_as_json,
    allocations_as_table,
    plan_as_json,
    plan_as_table,
)
from routectl.probes import ProbeServer
from routectl.reconcile import plan
from routectl.service import EXIT_OK
from routectl.wiring import Sources, build_service, gate, load_provider

logger = logging.getLogger("routectl")


def default_identity() -> str:
    """``<pod or host name>_<uuid>``, like client-go's recommended identity."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4()}"


async def run(settings: Settings) -> int:
    """``routectl run``: serve until stopped; the exit code says how it ended."""
    configure_logging(fmt=settings.log_format, verbosity=settings.verbosity)
    metrics, sources = Metrics.create(), Sources.system()
    async with contextlib.AsyncExitStack() as stack:
        plugin = load_provider(settings, metrics=metrics, sources=sources)  # fails before I/O
        stack.push_async_callback(plugin.provider.aclose)
        kube = await KubeClient.connect(kubeconfig=settings.kubeconfig)
        stack.push_async_callback(kube.aclose)
        service = build_service(
            settings,
            kube=kube,
            provider=plugin,
            metrics=metrics,
            identity=default_identity(),
            sources=sources,
        )
        probes = ProbeServer(registry=metrics.registry, ready=service.ready)
        stack.push_async_callback(probes.aclose)
        await probes.start(settings.metrics_bind_address)
        host = settings.metrics_bind_address.rpartition(":")[0]
        logger.info("Serving /metrics, /healthz and /readyz on %s:%d", host, probes.port)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, service.stopping.set)
            stack.callback(loop.remove_signal_handler, signum)
        return await service.run()
    raise AssertionError("unreachable")  # pragma: no cover -- the stack does not swallow


async def plan_once(settings: Settings, *, output: str) -> int:
    """``routectl plan``: read Nodes and routes, print the plan, change nothing."""
    metrics, sources = Metrics.create(), Sources.system()
    plugin = load_provider(settings, metrics=metrics, sources=sources)
    provider = gate(plugin, settings, metrics=metrics, sources=sources)
    try:
        kube = await KubeClient.connect(kubeconfig=settings.kubeconfig)
    except BaseException:
        await provider.aclose()
        raise
    try:
        listing = await kube.list_nodes()
        nodes = [parse_node(item) for item in listing.items]
        routes = await provider.list_routes()
        claims = []
        if settings.allocate_node_cidrs and settings.pod_cidr_claims == "lease":
            namespace = settings.leader_elect_resource_namespace
            raw = await kube.list_leases(namespace, label_selector=CLAIM_SELECTOR)
            claims = [c for c in map(parse_claim, raw) if c is not None]
    finally:
        await provider.aclose()
        await kube.aclose()
    ipam: tuple[Decision, list[Finding]] | None = None
    if settings.allocate_node_cidrs:
        ipam, nodes = _allocations(settings, nodes, routes, claims)
    result = plan(nodes=nodes, routes=routes, cluster_cidrs=settings.route_cidrs)
    if output == "json":
        shown = dict(plan_as_json(result))
        if ipam is not None:
            shown["node_ipam"] = allocations_as_json(*ipam)
        json.dump(shown, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(plan_as_table(result))
        if ipam is not None:
            sys.stdout.write(allocations_as_table(*ipam))
    return EXIT_OK


def _allocations(
    settings: Settings, nodes: list[NodeView], routes: Collection[Route], claims: list[Claim]
) -> tuple[tuple[Decision, list[Finding]], list[NodeView]]:
    """What node IPAM would allocate now, and the Nodes as they would then be."""
    rebuilt = rebuild(
        pools=pools_of(settings),
        nodes=nodes,
        claims=claims,
        routes=frozenset(canonical(r.destination_cidr) for r in routes),
        now=0.0,
        reuse_delay=settings.pod_cidr_reuse_delay,
    )
    decision = rebuilt.allocator.plan()
    findings = sorted(f for fs in rebuilt.allocator.findings.values() for f in fs)
    given = {a.node: tuple(str(c) for c in a.cidrs) for a in decision.allocations}
    after = [
        dataclasses.replace(n, pod_cidrs=given[n.name]) if n.name in given else n for n in nodes
    ]
    return (decision, findings), after

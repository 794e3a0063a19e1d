"""Benchmark: a scale-up of N Nodes against the fake Neutron, batched writes vs per-route calls.

The real ``routectl`` service (``wiring.build_service``, default flags: ``--cloud-qps 2
--cloud-burst 10``, ``--batch-write-interval 10s``) runs against routectl-sim's fake API
server and the ``openstack`` plugin, which talks through openstacksdk to
:class:`~routectl_openstack.testing.FakeOpenStack` under Neutron's documented limits (the
request body limit of 114688 bytes; ``max_routes`` raised to ``--max-routes``, since the
default of 30 caps a cluster at 30 Nodes). N Nodes are added at once; the run ends when the
router holds a route for each. Reported per mode: HTTP requests the fake received (by kind),
router writes, and the wall-clock time until the last route existed.

    python providers/openstack/benchmarks/scale_up.py --nodes 500 [--no-atomic] [--json out.json]

Needs ``routectl-sim`` and ``routectl-openstack`` installed. Real time: the per-route run is
paced by the bucket (two requests a second), so it takes several minutes for 500 Nodes.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import sys
from pathlib import Path
from typing import Any

from routectl_openstack.testing import PASSWORD, FakeOpenStack

from routectl_sim.apiserver import FakeApiServer
from routectl_sim.bench import service_running, until


def node(index: int) -> dict[str, Any]:
    """Node ``index`` with its pod CIDR and its server's address."""
    name, cidr = f"node-{index}", f"10.{100 + index // 256}.{index % 256}.0/24"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
        "status": {"addresses": [{"type": "InternalIP", "address": address(index)}]},
    }


def address(index: int) -> str:
    """The server of Node ``index``: an address in 10.0.0.0/16."""
    return f"10.0.{index // 250}.{index % 250 + 2}"


def kind_of(method: str, path: str) -> str:
    """A request's kind, for the report."""
    for marker, kind in (
        ("/auth/tokens", "token"),
        ("/servers/detail", "servers"),
        ("/extensions", "extensions"),
        ("/add_extraroutes", "write"),
        ("/remove_extraroutes", "write"),
    ):
        if path.endswith(marker):
            return kind
    if "/routers/" in path:
        return "write" if method == "PUT" else "router"
    return "discovery"


async def run(*, nodes: int, batched: bool, atomic: bool, max_routes: int) -> dict[str, Any]:
    """One scale-up; its numbers."""
    async with FakeOpenStack(atomic=atomic, max_routes=max_routes) as cloud, FakeApiServer() as api:
        router = cloud.add_router("10.0.0.0/16")
        for index in range(nodes):
            cloud.add_server(f"node-{index}", address(index))
        os.environ.update(OS_USERNAME="routectl", OS_PASSWORD=PASSWORD, OS_PROJECT_NAME="k8s")
        flags = [
            "--cluster-cidr=10.96.0.0/11",
            "--provider=openstack",
            f"--provider-option=router-id={router.id}",
            "--provider-option=node-cidrs=10.0.0.0/16",
            f"--provider-option=auth-url={cloud.auth_url}",
            "--leader-elect=false",
            "--metrics-bind-address=127.0.0.1:0",
            f"--batch-writes={'true' if batched else 'false'}",
        ]
        async with service_running(api, flags):
            loop = asyncio.get_running_loop()
            cloud.requests.clear()
            cloud.times.clear()
            started = loop.time()
            for index in range(nodes):
                api.create_node(node(index))
            await until(lambda: len(router.routes) >= nodes)
            elapsed = loop.time() - started
    kinds = collections.Counter(kind_of(m, p) for m, p in cloud.requests)
    return {
        "mode": "batched" if batched else "per-route",
        "extraroute_atomic": atomic,
        "nodes": nodes,
        "requests": len(cloud.requests),
        "by_kind": dict(sorted(kinds.items())),
        "seconds_to_all_routes": round(elapsed, 1),
    }


def main(argv: list[str]) -> int:
    """Run both modes and print (or write) the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--max-routes", type=int, default=1000)
    parser.add_argument(
        "--no-atomic", action="store_true", help="Neutron without extraroute-atomic"
    )
    parser.add_argument("--modes", default="batched,per-route")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    results = [
        asyncio.run(
            run(
                nodes=args.nodes,
                batched=mode == "batched",
                atomic=not args.no_atomic,
                max_routes=args.max_routes,
            )
        )
        for mode in args.modes.split(",")
    ]
    text = json.dumps(results, indent=2)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

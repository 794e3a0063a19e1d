"""Fixtures for end-to-end tests: a fake API server over real HTTP, a simulated cloud, and
routectl's real service wired to both through the real kubernetes-asyncio client."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable
from ipaddress import ip_network
from pathlib import Path
from typing import Any

import pytest

from routectl.cloud.gate import CloudGate
from routectl.config import Settings
from routectl.kube import KubeClient
from routectl.observe.metrics import Metrics
from routectl.process.service import Service
from routectl.process.wiring import Sources, build_service
from routectl.testing import CloudSettings, FakeCloud, FakeProvider
from routectl_sim.apiserver import FakeApiServer

CLUSTER = "kubernetes"


def node_object(name: str, *cidrs: str, address: str = "10.0.0.1") -> dict[str, Any]:
    """A Node as a kubelet registers it, with pod CIDRs as the IPAM controller sets them."""
    spec: dict[str, Any] = {"podCIDRs": list(cidrs)} if cidrs else {}
    if cidrs:
        spec["podCIDR"] = cidrs[0]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": address},
                {"type": "Hostname", "address": name},
            ],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "ready",
                    "lastHeartbeatTime": "2026-11-29T00:00:00Z",
                    "lastTransitionTime": "2026-11-29T00:00:00Z",
                }
            ],
        },
    }


def settings(**overrides: Any) -> Settings:
    """Service settings for tests: small batch window, no jitter surprises."""
    base: dict[str, Any] = {
        "cluster_cidrs": (ip_network("10.244.0.0/16"), ip_network("fd00:10:244::/56")),
        "provider": "fake",
        "provider_options": {"demo": "true"},  # the in-memory cloud, on purpose
        "leader_elect": False,
        "batch_window": 0.5,
        "retry_backoff_base": 1.0,
        "retry_backoff_cap": 8.0,
        "metrics_bind_address": "127.0.0.1:0",
        "cloud_call_backoff_base": 0.5,
        "cloud_call_backoff_cap": 2.0,
        "cloud_max_attempts": 2,
        "leader_elect_resource_namespace": "kube-system",
    }
    return Settings(**(base | overrides))


@dataclasses.dataclass
class Running:
    """One routectl service running against the fake API server and cloud."""

    service: Service
    task: asyncio.Task[int]
    provider: CloudGate
    kube: KubeClient

    async def stop(self) -> int:
        """Ask for a graceful shutdown and return the exit code."""
        self.service.stopping.set()
        return await self.task


@dataclasses.dataclass
class Cluster:
    """The fake API server, the simulated cloud, and routectl services started on them."""

    server: FakeApiServer
    cloud: FakeCloud
    kubeconfig: Path
    running: list[Running] = dataclasses.field(default_factory=list)

    async def start(self, *, identity: str = "routectl-a", **overrides: Any) -> Running:
        """Start a routectl service with test settings (``overrides`` win)."""
        config = settings(kubeconfig=str(self.kubeconfig), **overrides)
        kube = await KubeClient.connect(kubeconfig=config.kubeconfig)
        metrics = Metrics.create()
        service = build_service(
            config,
            kube=kube,
            provider=FakeProvider.over(self.cloud, CLUSTER),
            metrics=metrics,
            identity=identity,
            sources=Sources.system(),
        )
        running = Running(
            service=service,
            task=asyncio.create_task(service.run()),
            provider=service.provider,
            kube=kube,
        )
        self.running.append(running)
        return running

    def routes(self) -> set[tuple[str, str]]:
        """The cloud's routes as (node, CIDR)."""
        return {(r.target_node, r.destination_cidr) for r in self.cloud.routes(CLUSTER)}

    def condition(self, node: str) -> tuple[str, str] | None:
        """The node's NetworkUnavailable (status, reason) on the API server."""
        for c in self.server.get_node(node)["status"].get("conditions", []):
            if c["type"] == "NetworkUnavailable":
                return c["status"], c["reason"]
        return None


async def eventually(check: Callable[[], bool], *, within: float = 60.0, step: float = 0.1) -> None:
    """Wait (in loop time) until ``check()`` holds; fail after ``timeout`` loop seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {within}s of loop time")
        await asyncio.sleep(step)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """A fake API server and cloud; services started on it are stopped afterwards."""
    async with FakeApiServer() as server:
        path = tmp_path / "kubeconfig"
        server.kubeconfig(path)
        c = Cluster(
            server=server,
            cloud=FakeCloud(CloudSettings(list_latency=0.2, write_latency=1.0)),
            kubeconfig=path,
        )
        yield c
        for running in c.running:
            if not running.task.done():
                running.task.cancel()
            await asyncio.gather(running.task, return_exceptions=True)
            await running.kube.aclose()

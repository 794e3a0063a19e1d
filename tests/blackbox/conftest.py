"""The real ``routectl run`` process, seen only as a user sees it.

Each test starts ``python -m routectl run ...`` as a child process against the fake API
server and (when it needs one shared by several processes) the fake cloud's HTTP server,
both served from the test's own event loop. It observes only what an operator can: the
process's log lines and exit code, ``/metrics``, ``/healthz`` and ``/readyz`` over HTTP,
the objects in the API server and the requests the cloud received.

These tests run on the real clock (a child process cannot share the test's virtual one).
They wait for conditions, never for fixed times, and assert no durations.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from routectl_sim.apiserver import FakeApiServer
from routectl_sim.cloudserver import CloudServer

REPO = Path(__file__).resolve().parents[2]
SERVING = re.compile(r"Serving /metrics, /healthz and /readyz on (\S+):(\d+)")
_ANY_ADDRESS = frozenset({"", "0.0.0.0", "::"})  # noqa: S104 -- read, never bound
FAST_LEASE = (
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=500ms",
)


@dataclasses.dataclass
class Routectl:
    """One ``routectl`` child process."""

    process: asyncio.subprocess.Process
    name: str
    lines: list[str] = dataclasses.field(default_factory=list)
    url: str = ""
    _reader: asyncio.Task[None] | None = None

    async def read(self) -> None:
        """Collect stderr lines (the log) until the process closes it."""
        assert self.process.stderr is not None
        async for raw in self.process.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            self.lines.append(line)
            if not self.url and (match := SERVING.search(line)):
                host = match.group(1).strip("[]")
                reachable = host if host not in _ANY_ADDRESS else "127.0.0.1"
                self.url = f"http://{reachable}:{match.group(2)}"

    def log(self) -> str:
        """Everything logged so far."""
        return "\n".join(self.lines)

    def logged(self, pattern: str) -> list[str]:
        """Log lines matching ``pattern`` (a regular expression)."""
        return [line for line in self.lines if re.search(pattern, line)]

    async def get(self, path: str) -> tuple[int, str]:
        """GET ``path`` of the probe server: (status, body)."""
        async with aiohttp.ClientSession() as http, http.get(self.url + path) as response:
            return response.status, await response.text()

    async def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """``/metrics`` as {(sample name, sorted labels): value}."""
        _, text = await self.get("/metrics")
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    async def metric(self, name: str, **labels: str) -> float:
        """One sample's value (0 when absent)."""
        return (await self.metrics()).get((name, tuple(sorted(labels.items()))), 0.0)

    def pause(self) -> None:
        """SIGSTOP: the process freezes, as in a long GC or a frozen VM."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT."""
        self.process.send_signal(signal.SIGCONT)

    async def stop(self, sig: int = signal.SIGTERM, *, within: float = 60.0) -> int:
        """Send ``sig`` and return the exit code."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGCONT)
                self.process.send_signal(sig)
        return await self.exit_code(within=within)

    async def exit_code(self, *, within: float = 60.0) -> int:
        """Wait for the process to end; its exit code."""
        code = await asyncio.wait_for(self.process.wait(), within)
        if self._reader is not None:
            await self._reader
        return code


@dataclasses.dataclass
class Bench:
    """The fake API server and fake cloud, and the routectl processes started on them."""

    apiserver: FakeApiServer
    cloud: CloudServer
    kubeconfig: Path
    processes: list[Routectl] = dataclasses.field(default_factory=list)

    def args(self, *extra: str, client: str = "a", **flags: str) -> list[str]:
        """``routectl run`` arguments for this bench; ``extra`` and ``flags`` are added."""
        base = {
            "kubeconfig": str(self.kubeconfig),
            "cluster-cidr": "10.244.0.0/16",
            "provider": "fake",
            "metrics-bind-address": "127.0.0.1:0",
            "leader-elect-resource-namespace": "kube-system",
            "route-sync-batch-window": "100ms",
        } | {key.replace("_", "-"): value for key, value in flags.items()}
        args = [f"--{key}={value}" for key, value in base.items()]
        args += [
            f"--provider-option=endpoint={self.cloud.url}",
            f"--provider-option=client={client}",
        ]
        return [*args, *extra]

    async def start(
        self, args: Sequence[str], *, name: str = "routectl", wait: bool = True
    ) -> Routectl:
        """Start ``python -m routectl run <args>``; by default wait until it serves probes."""
        env = os.environ | {"PYTHONUNBUFFERED": "1", "POD_NAME": name}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "routectl",
            "run",
            *args,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=REPO,
        )
        running = Routectl(process=process, name=name)
        running._reader = asyncio.create_task(running.read())
        self.processes.append(running)
        if wait:
            await until(lambda: bool(running.url) or process.returncode is not None, within=60)
            assert running.url, f"{name} did not start serving:\n{running.log()}"
        return running

    def routes(self, cluster: str = "kubernetes") -> set[tuple[str, str]]:
        """The cloud's routes as (node, CIDR)."""
        return {(r.target_node, r.destination_cidr) for r in self.cloud.cloud.routes(cluster)}

    def condition(self, node: str) -> tuple[str, str] | None:
        """The Node's NetworkUnavailable (status, reason) on the API server."""
        for c in self.apiserver.get_node(node)["status"].get("conditions", []):
            if c["type"] == "NetworkUnavailable":
                return c["status"], c["reason"]
        return None

    def holder(self, name: str = "routectl") -> str:
        """The Lease's holder identity ("" when nobody holds it)."""
        lease = self.apiserver.get_lease("kube-system", name)
        return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


async def until(check: Callable[[], Any], *, within: float = 30.0, step: float = 0.05) -> None:
    """Wait until ``check()`` is true (awaiting it if it returns an awaitable)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {within}s")
        await asyncio.sleep(step)


def node(name: str, *cidrs: str, address: str = "10.0.0.1") -> dict[str, Any]:
    """A Node as a kubelet registers it, with pod CIDRs as an IPAM controller sets them."""
    spec: dict[str, Any] = {"podCIDRs": list(cidrs), "podCIDR": cidrs[0]} if cidrs else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"addresses": [{"type": "InternalIP", "address": address}]},
    }


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    """The fake API server and a fake cloud over HTTP; processes are killed afterwards."""
    async with FakeApiServer() as apiserver, CloudServer() as cloud:
        kubeconfig = tmp_path / "kubeconfig"
        apiserver.kubeconfig(kubeconfig)
        made = Bench(apiserver=apiserver, cloud=cloud, kubeconfig=kubeconfig)
        try:
            yield made
        finally:
            for running in made.processes:
                if running.process.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        running.process.send_signal(signal.SIGCONT)
                        running.process.kill()
                await running.process.wait()
                if running._reader is not None:
                    await running._reader

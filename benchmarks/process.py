"""What ``routectl run`` costs as a real process: memory, CPU, and how soon Nodes are ready.

Runs ``python -m routectl run`` as a child process against the in-repo fake API server and
the fake cloud's HTTP server (both served by this script, in this process, on the real
clock: a child process cannot share a virtual one), and measures the child only, from
``/proc``:

* ``import``: ``python -c 'import routectl.cli.app'`` (CPU seconds, peak RSS), and the number of
  kubernetes-asyncio modules it loads;
* ``start-20``: 20 Nodes without routes at start: seconds from the process's start until
  the first ListRoutes and the first create reach the cloud, and until half of the Nodes,
  and all of them, have ``NetworkUnavailable=False`` (the median of ``--repeat`` runs);
* ``burst-5``: once idle (and its budget's burst is back), 5 Nodes created a few
  milliseconds apart: seconds from each Node's creation to its ``NetworkUnavailable=False``;
* ``nodes-N`` (1,000 and 65,000 by default): N Nodes routed as a CCM left them; CPU seconds
  and RSS when the process is ready and its first sync has ended ("all ready"); then kubelet
  heartbeats (a status PATCH of one Node's Ready condition) at ``--heartbeat-rate`` per
  second for ``--heartbeat-seconds``: CPU per 1,000 heartbeats, as a share of one core, and
  RSS after.

Measured interpreters run with their bytecode compiled, as installed by pip in the image
(:func:`child_env`); one first start, not measured, compiles it.

The cloud answers a ListRoutes in 200 ms and a create in 1 s, within a budget of 2 requests
a second with a burst of 10 (routectl's defaults). Nodes carry what real ones carry (images,
labels, annotations, capacity, kubelet conditions), so decoding them costs what it costs.

``--source DIR`` runs another checkout's ``routectl`` (put first on ``PYTHONPATH``), to
measure two versions side by side on the same machine. The whole run takes a few minutes
and one core at most for routectl; the 65,000-Node part needs about 1.5 GB for the fake
API server. Usage::

    python benchmarks/process.py --json after.json
    git archive 23d48f3 | tar -x -C /tmp/before
    python benchmarks/process.py --source /tmp/before --json before.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import datetime
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp

from routectl.model import NodeAddress, Route
from routectl.testing import CloudSettings, FakeCloud
from routectl_sim.apiserver import FakeApiServer
from routectl_sim.cloudserver import CloudServer

REPO = Path(__file__).resolve().parents[1]
CLUSTER = "kubernetes"
SERVING = re.compile(r"Serving /metrics, /healthz and /readyz on (\S+):(\d+)")
TICK = os.sysconf("SC_CLK_TCK")
PYC = Path(tempfile.gettempdir()) / "routectl-benchmark-pycache"
"""Where measured interpreters keep their bytecode (a first, unmeasured start fills it)."""
LARGE = 10_000
"""Clusters larger than this get half the heartbeat time (the fake API server's own cost)."""
EPOCH = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
IMAGES = [
    {
        "names": [f"registry.k8s.io/component-{i}@sha256:{i:064x}", f"component-{i}:v1.{i}"],
        "sizeBytes": 10_000_000 + i,
    }
    for i in range(8)
]


def stamp(seconds: float = 0.0) -> str:
    return (EPOCH + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_cidr(slot: int) -> str:
    return f"10.{slot // 256}.{slot % 256}.0/24"


def address(slot: int) -> str:
    return f"172.16.{slot // 256}.{slot % 256}"


def node(slot: int, *, routed: bool) -> dict[str, Any]:
    """A Node as a real cluster serves it (about 4 KB of JSON), with its pod CIDR."""
    name = f"node-{slot:05d}"
    cidr = pod_cidr(slot)
    conditions = [
        {
            "type": kind,
            "status": "False",
            "reason": f"No{kind}",
            "message": "fine",
            "lastHeartbeatTime": stamp(),
            "lastTransitionTime": stamp(),
        }
        for kind in ("MemoryPressure", "DiskPressure", "PIDPressure")
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": stamp(),
            "lastTransitionTime": stamp(),
        }
    )
    if routed:
        conditions.insert(
            0,
            {
                "type": "NetworkUnavailable",
                "status": "False",
                "reason": "RouteCreated",
                "message": "RouteController created a route",
                "lastHeartbeatTime": stamp(),
                "lastTransitionTime": stamp(),
            },
        )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "cx32",
                "topology.kubernetes.io/region": "fsn1",
                "topology.kubernetes.io/zone": "fsn1-dc14",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "csi.volume.kubernetes.io/nodeid": json.dumps({"csi.example.com": name}),
            },
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr], "providerID": f"fake://{name}"},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": address(slot)},
                {"type": "Hostname", "address": name},
            ],
            "capacity": {
                "cpu": "4",
                "memory": "16365564Ki",
                "pods": "110",
                "ephemeral-storage": "157197504Ki",
            },
            "allocatable": {
                "cpu": "4",
                "memory": "16263164Ki",
                "pods": "110",
                "ephemeral-storage": "144872091492",
            },
            "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"{slot:032x}",
                "systemUUID": f"{slot:032x}",
                "bootID": f"{slot:032x}",
                "kernelVersion": "6.8.0-49-generic",
                "osImage": "Ubuntu 24.04.1 LTS",
                "containerRuntimeVersion": "containerd://1.7.22",
                "kubeletVersion": "v1.36.0",
                "kubeProxyVersion": "v1.36.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": copy.deepcopy(IMAGES),
        },
    }


def route(slot: int) -> Route:
    name = f"node-{slot:05d}"
    return Route(
        target_node=name,
        destination_cidr=pod_cidr(slot),
        name=f"ccm-{name}",
        target_node_addresses=(NodeAddress(type="InternalIP", address=address(slot)),),
    )


def child_env(source: Path | None) -> dict[str, str]:
    """The environment of a measured interpreter: ``source`` first on the path, and its
    bytecode cached (in :data:`PYC`), as the image's ``pip install`` leaves it compiled. (A
    shell with ``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module of a checkout
    at every start: half a second of CPU that no deployed routectl spends.)"""
    env = os.environ | {"PYTHONPYCACHEPREFIX": str(PYC)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if source is not None:
        env["PYTHONPATH"] = f"{source}{os.pathsep}{env.get('PYTHONPATH', '')}"
    return env


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        raise RuntimeError(f"routectl (pid {pid}) has exited") from None
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def proc_rss(pid: int) -> tuple[float, float]:
    """(RSS now, peak RSS) of ``pid`` in MB."""
    values = {}
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        raise RuntimeError(f"routectl (pid {pid}) has exited") from None
    for line in status.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return round(values["VmRSS"], 1), round(values["VmHWM"], 1)


class Child:
    """One ``routectl run`` process and what it logs."""

    def __init__(self, process: asyncio.subprocess.Process, started: float) -> None:
        self.process = process
        self.started = started
        self.url = ""
        self.lines: list[str] = []
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        if self.process.stderr is None:
            return
        async for raw in self.process.stderr:
            line = raw.decode(errors="replace").rstrip()
            self.lines.append(line)
            if not self.url and (match := SERVING.search(line)):
                self.url = f"http://127.0.0.1:{match.group(2)}"

    @property
    def pid(self) -> int:
        return self.process.pid

    async def ready_and_synced(self, http: aiohttp.ClientSession) -> None:
        """Until /readyz says ok and a route sync has ended."""
        while True:
            if self.process.returncode is not None:
                raise RuntimeError("routectl exited:\n" + "\n".join(self.lines[-20:]))
            if self.url:
                with contextlib.suppress(aiohttp.ClientError):
                    async with http.get(self.url + "/readyz") as answer:
                        if answer.status == 200 and await self._synced(http):  # noqa: PLR2004
                            return
            await asyncio.sleep(0.05)

    async def _synced(self, http: aiohttp.ClientSession) -> bool:
        async with http.get(self.url + "/metrics") as answer:
            text = await answer.text()
        done = re.findall(r"^route_controller_route_sync_total\{[^}]*\} (\S+)$", text, re.M)
        return sum(float(v) for v in done) >= 1

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), 30)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        await self.reader


class Bench:
    """The fake API server and cloud, and the ``routectl run`` flags pointing at them."""

    def __init__(self, apiserver: FakeApiServer, cloud: CloudServer, scratch: Path) -> None:
        self.apiserver = apiserver
        self.cloud = cloud
        self.kubeconfig = scratch / "kubeconfig"
        apiserver.kubeconfig(self.kubeconfig)
        self.ready_at: dict[str, float] = {}
        apiserver.watch_nodes(self._seen)

    def _seen(self, kind: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if name in self.ready_at:
            return
        for condition in obj.get("status", {}).get("conditions") or []:
            if condition.get("type") == "NetworkUnavailable" and condition.get("status") == "False":
                self.ready_at[name] = time.perf_counter()

    async def start(self, source: Path | None) -> Child:
        args = [
            f"--kubeconfig={self.kubeconfig}",
            "--cluster-cidr=10.0.0.0/8",
            "--provider=fake",
            f"--provider-option=endpoint={self.cloud.url}",
            "--metrics-bind-address=127.0.0.1:0",
            "--leader-elect-resource-namespace=kube-system",
        ]
        env = child_env(source) | {"PYTHONUNBUFFERED": "1", "POD_NAME": "bench"}
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "routectl",
            "run",
            *args,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=source or REPO,
        )
        return Child(process, started)


@contextlib.asynccontextmanager
async def bench(*, history: int = 1000) -> Any:
    cloud = FakeCloud(CloudSettings(list_latency=0.2, write_latency=1.0, qps=2.0, burst=10))
    async with FakeApiServer(history_limit=history) as apiserver, CloudServer(cloud) as served:
        with tempfile.TemporaryDirectory() as scratch:
            yield Bench(apiserver, served, Path(scratch))


def place(made: Bench, slots: range, *, routed: bool) -> None:
    for slot in slots:
        made.apiserver.create_node(node(slot, routed=routed))
        if routed:
            made.cloud.cloud.add_route(CLUSTER, route(slot))


async def start_20_once(source: Path | None) -> dict[str, float]:
    """20 unrouted Nodes at start: seconds from the process's start until the first
    ListRoutes and the first create reach the cloud, and until half and all are ready."""
    async with bench() as made:
        place(made, range(20), routed=False)
        child = await made.start(source)
        try:
            while len(made.ready_at) < 20:  # noqa: PLR2004
                if child.process.returncode is not None:
                    raise RuntimeError("\n".join(child.lines[-20:]))
                await asyncio.sleep(0.02)
        finally:
            await child.stop()
        times = sorted(t - child.started for t in made.ready_at.values())
        # The cloud stamps calls with the loop's clock: the same clock as perf_counter's
        # here (CLOCK_MONOTONIC), but convert anyway.
        offset = time.perf_counter() - asyncio.get_running_loop().time()
        calls = made.cloud.cloud.calls

        def first(operation: str) -> float:
            seconds: float = min(c.time for c in calls if c.operation == operation)
            seconds += offset - child.started
            return round(seconds, 2)

        return {
            "first_list_s": first("list"),
            "first_write_s": first("create"),
            "half_ready_s": round(times[9], 2),
            "all_ready_s": round(times[-1], 2),
        }


async def start_20(source: Path | None, *, repeat: int) -> dict[str, Any]:
    """:func:`start_20_once` ``repeat`` times: the median of each number, and every run."""
    runs = [await start_20_once(source) for _ in range(repeat)]
    summary: dict[str, Any] = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    summary["runs"] = runs
    return summary


async def burst_5(source: Path | None) -> dict[str, Any]:
    """Once idle with its burst back: 5 Nodes ms apart, each one's creation to ready."""
    async with bench() as made:
        place(made, range(3), routed=True)
        child = await made.start(source)
        try:
            async with aiohttp.ClientSession() as http:
                await child.ready_and_synced(http)
            await asyncio.sleep(6.0)  # the budget's burst is back, whatever it started with
            created: dict[str, float] = {}
            for slot in range(100, 105):
                made.apiserver.create_node(node(slot, routed=False))
                created[f"node-{slot:05d}"] = time.perf_counter()
                await asyncio.sleep(0.005)
            while not set(created) <= set(made.ready_at):
                if child.process.returncode is not None:
                    raise RuntimeError("\n".join(child.lines[-20:]))
                await asyncio.sleep(0.01)
        finally:
            await child.stop()
        waits = sorted(round(made.ready_at[n] - t, 2) for n, t in created.items())
        return {"ready_after_s": waits}


async def heartbeats(made: Bench, slots: int, *, rate: float, seconds: float) -> int:
    """Status PATCHes of one Node's Ready condition after another, ``rate`` a second."""
    sent, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        due = int(elapsed * rate)
        while sent < due:
            slot = sent % slots
            ready = {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": stamp(60 + sent),
                "lastTransitionTime": stamp(),
            }
            made.apiserver.patch_node_status(
                f"node-{slot:05d}", {"status": {"conditions": [ready]}}
            )
            sent += 1
        await asyncio.sleep(0.01)
    return sent


async def nodes_n(source: Path | None, n: int, *, rate: float, seconds: float) -> dict[str, Any]:
    """N routed Nodes: CPU and RSS at all ready; CPU per 1,000 heartbeats; RSS after."""
    async with bench(history=max(1000, int(rate * seconds) + 100)) as made:
        place(made, range(n), routed=True)
        child = await made.start(source)
        try:
            async with aiohttp.ClientSession() as http:
                await child.ready_and_synced(http)
                ready_cpu = proc_cpu(child.pid)
                ready_rss, _ = proc_rss(child.pid)
                ready_wall = time.perf_counter() - child.started
                await asyncio.sleep(2.0)  # anything the first sync left behind settles
                before = proc_cpu(child.pid)
                sent = await heartbeats(made, n, rate=rate, seconds=seconds)
                await asyncio.sleep(1.0)  # the last ones arrive
                spent = proc_cpu(child.pid) - before
                rss, peak = proc_rss(child.pid)
        except RuntimeError:
            await child.stop()
            print("\n".join(child.lines[-30:]), file=sys.stderr)  # noqa: T201
            raise
        finally:
            await child.stop()
        return {
            "nodes": n,
            "all_ready_wall_s": round(ready_wall, 2),
            "all_ready_cpu_s": round(ready_cpu, 2),
            "rss_at_ready_mb": ready_rss,
            "heartbeats": sent,
            "cpu_per_1000_heartbeats_s": round(spent / sent * 1000, 3),
            "heartbeat_cpu_share_pct": round(100 * spent / (seconds + 3.0), 2),
            "rss_after_heartbeats_mb": rss,
            "peak_rss_mb": peak,
        }


def import_cost(source: Path | None) -> dict[str, Any]:
    """``import routectl.cli.app`` in a fresh interpreter: CPU, peak RSS, kubernetes modules."""
    code = (
        "import resource, sys, routectl.cli.app\n"
        "u = resource.getrusage(resource.RUSAGE_SELF)\n"
        "k = sum(m.startswith('kubernetes_asyncio') for m in sys.modules)\n"
        "print(u.ru_utime + u.ru_stime, u.ru_maxrss / 1024, k)\n"
    )
    env = child_env(source)
    runs = []
    for _ in range(3):
        out = subprocess.run(  # noqa: S603 -- our own interpreter
            [sys.executable, "-c", code],
            env=env,
            check=True,
            capture_output=True,
            text=True,
            cwd=source or REPO,
        ).stdout.split()
        runs.append((float(out[0]), float(out[1]), int(out[2])))
    best = min(runs)
    return {"cpu_s": round(best[0], 3), "rss_mb": round(best[1], 1), "kubernetes_modules": best[2]}


@contextlib.contextmanager
def timed(label: str) -> Iterator[None]:
    start = time.perf_counter()
    print(f"... {label}", file=sys.stderr, flush=True)  # noqa: T201
    yield
    print(f"    {label}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)  # noqa: T201


async def run(args: argparse.Namespace, source: Path | None) -> dict[str, Any]:
    results: dict[str, Any] = {"source": str(source or REPO)}

    def save() -> None:  # after each part: a later part that fails loses nothing
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")

    with timed("warm-up"):
        await start_20_once(source)  # compiles the bytecode (see child_env); not counted
    if not args.only_nodes:
        with timed("import"):
            results["import"] = import_cost(source)
        with timed("start-20"):
            results["start_20"] = await start_20(source, repeat=args.repeat)
        save()
        with timed("burst-5"):
            results["burst_5"] = await burst_5(source)
        save()
    for n in args.nodes:
        seconds = args.heartbeat_seconds if n <= LARGE else max(10.0, args.heartbeat_seconds / 2)
        with timed(f"nodes-{n}"):
            results[f"nodes_{n}"] = await nodes_n(
                source, n, rate=args.heartbeat_rate, seconds=seconds
            )
        save()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--source", help="another checkout's root, to measure that version")
    parser.add_argument(
        "--nodes",
        type=lambda t: [int(x) for x in t.split(",")],
        default=[1000, 65000],
        help="comma-separated cluster sizes (default 1000,65000)",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="start-20 runs (their median is reported)"
    )
    parser.add_argument("--heartbeat-rate", type=float, default=50.0)
    parser.add_argument("--heartbeat-seconds", type=float, default=60.0)
    parser.add_argument("--json", help="write the results here too (after each part)")
    parser.add_argument(
        "--only-nodes", action="store_true", help="only the nodes-N parts (--nodes)"
    )
    args = parser.parse_args(argv)
    source = Path(args.source).resolve() if args.source else None
    results = asyncio.run(run(args, source))
    print(json.dumps(results, indent=2))  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

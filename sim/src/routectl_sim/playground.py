"""``routectl playground``: a fake cluster and a simulated cloud to try ``routectl run`` on.

One command starts, on 127.0.0.1 and the real clock:

* the fake kube-apiserver (:class:`~routectl_sim.apiserver.FakeApiServer`), with a few
  Nodes that have pod CIDRs and no routes yet, and discovery enough for kubectl
  (``get``, ``apply``, ``describe``);
* the simulated cloud over HTTP (:class:`~routectl_sim.cloudserver.CloudServer`), with a
  server-side budget and per-call latency, which the ``fake`` provider plugin reaches
  through ``--provider-option endpoint=<url>``;

writes a kubeconfig and an example ``node.yaml`` into a directory, prints the commands
that point kubectl and ``routectl run`` at them, and then prints the life of every route
as it happens: a Node gets a pod CIDR, the cloud creates its route, the Node's
``NetworkUnavailable`` condition turns False, the route is deleted when the Node goes.
It runs until interrupted (SIGINT or SIGTERM), then stops both servers and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import shlex
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TextIO

from routectl.config import parse_duration
from routectl.testing import CloudSettings, FakeCloud, RouteChange
from routectl_sim.apiserver import FakeApiServer
from routectl_sim.cloudserver import CloudServer

CLUSTER_CIDR = "10.244.0.0/16"
CLUSTER = "kubernetes"
"""routectl's default ``--cluster-name``: the cloud table its routes go to."""


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:  # noqa: PLR2004 -- the TCP port range
        raise argparse.ArgumentTypeError(f"{text}: not a TCP port (0..65535, 0: a free one)")
    return value


def add_playground(commands: Any) -> None:
    """Add ``playground`` to a subparsers object."""
    p = commands.add_parser(
        "playground",
        help="start a fake API server and a simulated cloud to point kubectl and routectl at",
        description="Starts a fake Kubernetes API server (with a few Nodes) and a simulated "
        "cloud on 127.0.0.1, writes a kubeconfig, prints the kubectl and `routectl run` "
        "commands that use them, then prints each route's life until interrupted.",
    )
    p.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where to write kubeconfig and node.yaml (default: a new temporary directory)",
    )
    p.add_argument(
        "--api-port", type=_port, default=0, help="the API server's port (default: a free one)"
    )
    p.add_argument(
        "--cloud-port", type=_port, default=0, help="the cloud's port (default: a free one)"
    )
    p.add_argument(
        "--nodes", type=int, default=3, help="Nodes with pod CIDRs at the start (default: 3)"
    )
    p.add_argument(
        "--cloud-write-latency", type=_duration, default=1.0, help="per create/delete (1s)"
    )
    p.add_argument("--cloud-list-latency", type=_duration, default=0.2, help="per listing (200ms)")
    p.add_argument(
        "--cloud-qps", type=float, default=1.0, help="the cloud's budget per second (default: 1)"
    )
    p.add_argument(
        "--cloud-burst", type=int, default=10, help="the cloud's budget burst (default: 10)"
    )


def check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Refuse impossible values, one line naming the flag (exit 2)."""
    if not 0 <= args.nodes <= 255:  # noqa: PLR2004 -- one /24 of 10.244.0.0/16 each
        parser.error("--nodes: must be within 0..255 (one /24 of 10.244.0.0/16 each)")
    if args.cloud_qps <= 0 or args.cloud_burst < 1:
        parser.error("--cloud-qps must be > 0 and --cloud-burst >= 1")


def node(index: int, *, now: str) -> dict[str, Any]:
    """Node ``playground-<index>`` as a kubelet and KCM's IPAM would leave it: Ready, with a
    pod CIDR, no route yet (so no NetworkUnavailable condition)."""
    name = f"playground-{index}"
    cidr = _cidr(index)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr], "providerID": f"fake://{name}"},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": f"192.168.0.{index + 10}"},
                {"type": "Hostname", "address": name},
            ],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "nodeInfo": {"kubeletVersion": "v1.36.2"},
        },
    }


def node_lease(name: str, *, now: datetime.datetime) -> dict[str, Any]:
    """The kubelet's heartbeat Lease of Node ``name`` (``kubectl describe node`` shows it)."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-node-lease"},
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": 40,
            "renewTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        },
    }


NODE_YAML = """\
# kubectl apply -f {path}   (then watch the playground print its route's life)
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels:
    kubernetes.io/hostname: {name}
spec:
  podCIDR: {cidr}
  podCIDRs:
  - {cidr}
  providerID: fake://{name}
"""


class Narrator:
    """Prints the life of each route: pod CIDR, route created, Node ready, route deleted."""

    def __init__(self, out: TextIO, *, clock: Callable[[], datetime.datetime]) -> None:
        self._out, self._clock = out, clock
        self._seen: dict[str, tuple[str, str]] = {}
        """Per Node: its pod CIDRs and its NetworkUnavailable status, as last printed."""

    def say(self, text: str) -> None:
        """One line, stamped with the wall-clock time."""
        print(f"{self._clock():%H:%M:%S}  {text}", file=self._out, flush=True)

    def node_written(self, kind: str, obj: dict[str, Any]) -> None:
        """FakeApiServer listener: a Node's pod CIDR or NetworkUnavailable changed."""
        name = obj.get("metadata", {}).get("name", "?")
        if kind == "DELETED":
            self._seen.pop(name, None)
            self.say(f"node {name}: deleted")
            return
        cidrs = ",".join((obj.get("spec") or {}).get("podCIDRs") or [])
        condition = next(
            (
                c
                for c in (obj.get("status") or {}).get("conditions") or []
                if c.get("type") == "NetworkUnavailable"
            ),
            None,
        )
        network = "" if condition is None else f"{condition.get('status')}"
        before = self._seen.get(name)
        self._seen[name] = (cidrs, network)
        if before is None:
            self.say(f"node {name}: {'pod CIDR ' + cidrs if cidrs else 'no pod CIDR yet'}")
        elif before[0] != cidrs:
            self.say(f"node {name}: pod CIDR {cidrs or '(none)'}")
        if condition is not None and (before is None or before[1] != network):
            self.say(f"node {name}: NetworkUnavailable={network} ({condition.get('reason', '')})")

    def route_changed(self, change: RouteChange) -> None:
        """FakeCloud listener: a route was created or deleted."""
        route = change.route
        self.say(
            f"cloud: {change.operation}d route {route.destination_cidr} -> "
            f"{route.target_node or 'blackhole'} ({route.name})"
        )


class PortError(Exception):
    """A server could not listen on the port a flag asked for."""

    def __init__(self, flag: str, exc: OSError) -> None:
        super().__init__(f"{flag}: cannot listen on it: {exc.strerror or exc}")


@contextlib.asynccontextmanager
async def _cloud_server(cloud: FakeCloud, *, port: int) -> AsyncIterator[CloudServer]:
    try:
        server = await CloudServer(cloud, port=port).__aenter__()
    except OSError as exc:
        raise PortError("--cloud-port", exc) from None
    try:
        yield server
    finally:
        await server.__aexit__(None, None, None)


def _stamp(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


async def serve(args: argparse.Namespace, *, out: TextIO, stop: asyncio.Event) -> None:
    """Run the playground until ``stop`` is set."""
    narrator = Narrator(out, clock=lambda: datetime.datetime.now().astimezone())
    cloud = FakeCloud(
        CloudSettings(
            list_latency=args.cloud_list_latency,
            write_latency=args.cloud_write_latency,
            qps=args.cloud_qps,
            burst=args.cloud_burst,
        )
    )
    cloud.listeners.append(narrator.route_changed)
    directory = (args.dir or Path(tempfile.mkdtemp(prefix="routectl-playground-"))).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    server = FakeApiServer()
    try:
        await server.start(port=args.api_port)
    except OSError as exc:
        raise PortError("--api-port", exc) from None
    try:
        async with _cloud_server(cloud, port=args.cloud_port) as cloud_server:
            kubeconfig = directory / "kubeconfig"
            server.kubeconfig(kubeconfig)
            example = directory / "node.yaml"
            example.write_text(
                NODE_YAML.format(
                    path=example, name=f"playground-{args.nodes}", cidr=_cidr(args.nodes)
                ),
                encoding="utf-8",
            )
            _instructions(
                out,
                api=server.url,
                cloud=cloud_server.url,
                kubeconfig=kubeconfig,
                example=example,
                nodes=args.nodes,
            )
            server.watch_nodes(narrator.node_written)
            for index in range(args.nodes):
                server.create_node(node(index, now=_stamp(_now())))
                server.create_lease(node_lease(f"playground-{index}", now=_now()))
            await stop.wait()
    finally:
        await server.aclose()
    narrator.say("playground stopped")


def _cidr(index: int) -> str:
    return f"10.244.{index}.0/24"


def _instructions(
    out: TextIO, *, api: str, cloud: str, kubeconfig: Path, example: Path, nodes: int
) -> None:
    run = shlex.join(
        [
            "routectl",
            "run",
            f"--kubeconfig={kubeconfig}",
            "--provider=fake",
            f"--provider-option=endpoint={cloud}",
            f"--cluster-cidr={CLUSTER_CIDR}",
            "--leader-elect=false",
            "--metrics-bind-address=127.0.0.1:0",
        ]
    )
    lines = [
        f"Fake API server: {api}   simulated cloud: {cloud} (budget, latency as flagged)",
        f"{nodes} Nodes with pod CIDRs and no routes yet.",
        f"Kubeconfig: {kubeconfig}",
        "",
        "Point routectl at it (in another terminal):",
        f"  {run}",
        "",
        "and kubectl:",
        f"  export KUBECONFIG={shlex.quote(str(kubeconfig))}",
        "  kubectl get nodes",
        f"  kubectl apply -f {shlex.quote(str(example))}",
        f"  kubectl describe node playground-{nodes}",
        f"  kubectl delete node playground-{nodes}",
        "",
        "Each route's life is printed below. Ctrl-C stops the playground.",
    ]
    print("\n".join(lines), file=out, flush=True)


def run_playground(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Check the flags, then serve until SIGINT or SIGTERM."""
    check(args, parser)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await serve(args, out=sys.stdout, stop=stop)

    with contextlib.suppress(KeyboardInterrupt):
        try:
            asyncio.run(main())
        except PortError as exc:
            parser.error(str(exc))
    return 0


class PlaygroundCommand:
    """``routectl playground``, added to routectl's command line through an entry point."""

    name = "playground"

    def add(self, commands: Any) -> None:
        """Add the subcommand and its flags."""
        add_playground(commands)

    def run(self, args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        """Serve the playground until interrupted."""
        return run_playground(args, parser)


COMMAND = PlaygroundCommand()

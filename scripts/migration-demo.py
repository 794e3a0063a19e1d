"""Run the migration of docs/deploy.md §4.1 against the project's fakes and print what it shows.

The real ``routectl plan`` and ``routectl run`` commands, with an AWS cloud-controller-manager's
arguments and cloud-provider-aws's ``cloud.conf`` pasted, against the fake API server
(``routectl_sim.apiserver``), moto's EC2 server and kube-controller-manager's range allocator
simulated beside them (``routectl_sim.kcm``). Its output is what docs/deploy.md quotes; the
AWS ids are moto's, so they change from run to run. Needs routectl-aws, routectl-sim and moto.

    python scripts/migration-demo.py
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import logging
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from moto.server import ThreadedMotoServer
from routectl_aws.ec2 import new_session
from routectl_aws.testing import Vpc

from routectl_sim.apiserver import FakeApiServer
from routectl_sim.kcm import start_kcm

REGION = "us-east-1"
WORK = Path(tempfile.mkdtemp(prefix="routectl-migration-"))


def node(name: str, *cidrs: str) -> dict[str, object]:
    spec = {"podCIDRs": list(cidrs), "podCIDR": cidrs[0]} if cidrs else {}
    return {"metadata": {"name": name}, "spec": spec, "status": {"addresses": []}}


def say(text: str) -> None:
    """One line (or more) of the demo's output."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def show(title: str, command: list[str]) -> None:
    shown = " ".join(a if " " not in a else f"'{a}'" for a in command)
    say(f"\n### {title}\n$ {shown}")


async def run(
    command: list[str],
    title: str,
    *,
    until: str = "",
    lines: tuple[str, ...] = (),
    when: tuple[str, Callable[[], object]] | None = None,
) -> int:
    """Run ``routectl <command>``; for ``run``, stop it once ``until`` is logged (and call
    ``when[1]`` once ``when[0]`` is logged)."""
    show(title, ["routectl", *command])
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "routectl", *command,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    if command[0] == "plan":
        out, err = await process.communicate()
        say(out.decode() + err.decode() + f"$ echo $?\n{process.returncode}")
        return process.returncode or 0
    if process.stderr is None:
        raise RuntimeError("no stderr pipe")
    async with asyncio.timeout(90):
        while raw := await process.stderr.readline():
            text = raw.decode().rstrip()
            if any(key in text for key in lines):
                say(text)
            if when is not None and when[0] in text:
                when[1]()
            if until and until in text:
                break
    process.terminate()
    await process.wait()
    return 0


async def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    os.environ |= {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    moto_url = f"http://{host}:{port}"
    async with (
        FakeApiServer() as api,
        new_session().create_client("ec2", region_name=REGION, endpoint_url=moto_url) as ec2,
    ):
        kubeconfig = WORK / "kubeconfig"
        api.kubeconfig(kubeconfig)
        vpc = await Vpc.create(ec2)
        table = await vpc.route_table()
        instances = await vpc.launch(4)
        for i, instance in enumerate(instances[:2]):
            api.create_node(node(instance.dns, f"10.244.{i}.0/24"))
        cloud_conf = WORK / "cloud.conf"
        cloud_conf.write_text(
            f"[Global]\nZone = {REGION}a\nVPC = {vpc.id}\nKubernetesClusterTag = prod\n"
            f"RouteTableID = {table}\nSubnetID = {vpc.subnet_id}\n"
            f'[ServiceOverride "1"]\nService = ec2\nRegion = {REGION}\nURL = {moto_url}\n'
            f"SigningRegion = {REGION}\n"
        )
        say(f"$ cat {cloud_conf}\n{cloud_conf.read_text().rstrip()}")
        ccm = [
            "--cloud-provider=aws", f"--cloud-config={cloud_conf}", f"--kubeconfig={kubeconfig}",
            "--cluster-name=prod", "--cluster-cidr=10.244.0.0/16", "--allocate-node-cidrs=true",
            "--configure-cloud-routes=true", "--controllers=*,-cloud-node,-service",
            "--allow-untagged-cloud=true", "--use-service-account-credentials=true", "--v=2",
        ]  # fmt: skip
        run_flags = [
            "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
        ]  # fmt: skip
        kcm = await start_kcm(
            kubeconfig=str(kubeconfig),
            cluster_cidr=ipaddress.ip_network("10.244.0.0/16"),
            node_mask=24,
            wall_clock=lambda: datetime.datetime.now(datetime.UTC),
            seed=19,
        )
        await run(["plan", *ccm, "--detailed-exitcode"], "A. Without routectl allocating: preview")
        keys = ("Ignoring --allocate", "Ignoring [Global]", "Serving", "Created route", "Node IPAM")
        await run(
            ["run", *ccm, *run_flags],
            "A. Run (KCM keeps allocating)",
            until="Created route for node " + instances[1].dns,
            lines=keys,
        )
        await run(["plan", *ccm, "--detailed-exitcode"], "A. After the first sync")

        kcm[1].cancel()  # B: KCM's --allocate-node-cidrs=false
        await asyncio.gather(kcm[1], return_exceptions=True)
        await kcm[0].kube.aclose()
        api.create_node(node(instances[2].dns))
        own = [*ccm, "--routectl-allocate-node-cidrs"]
        await run(["plan", *own, "--detailed-exitcode"], "B. routectl allocating: preview")
        await run(
            ["run", *own, *run_flags],
            "B. Run with routectl allocating",
            until="Created route for node " + instances[2].dns,
            lines=(*keys, "Set node"),
        )

        kcm = await start_kcm(
            kubeconfig=str(kubeconfig),
            cluster_cidr=ipaddress.ip_network("10.244.0.0/16"),
            node_mask=24,
            wall_clock=lambda: datetime.datetime.now(datetime.UTC),
            seed=20,
        )
        registers = ("Node IPAM rebuilt", lambda: api.create_node(node(instances[3].dns)))
        await run(
            ["run", *own, *run_flags],
            "C. Done wrong: KCM's allocator left on",
            until="Node IPAM stopped",
            lines=(*keys, "Set node"),
            when=registers,
        )
        kcm[1].cancel()
        await asyncio.gather(kcm[1], return_exceptions=True)
        await kcm[0].kube.aclose()
    moto.stop()


def free_port() -> int:
    import socket  # noqa: PLC0415

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


if __name__ == "__main__":
    asyncio.run(main())

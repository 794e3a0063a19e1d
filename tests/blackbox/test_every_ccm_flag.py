"""Every flag of the real cloud-controller-manager v1.36, on the real ``routectl run``.

The flags and their values come from ``tests/fixtures/ccm-v1.36-flags.json`` (the binary's
``--help``, deprecated flags included, with pflag's types and defaults): each flag is given
its CCM default, written back in pflag's syntax (``[a,b]`` slices as ``a,b``). Only values
that must point at something real are replaced, each by another value the CCM accepts: the
API server, the cloud, the cluster's CIDR, a free port, a certificate pair, the Lease name
(routectl refuses the CCM's own Lease on purpose), and a namedCertKey (pflag has no empty
one). The process must start, program routes, serve over HTTPS, and name once each flag
given a value that does not concern routes (an empty value is "not set", as in the CCM).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from routectl.config.ccm import IGNORED_FLAGS
from routectl.observe.serving import self_signed
from tests.blackbox.conftest import REPO, Bench, node, until

pytestmark = pytest.mark.blackbox

REFERENCE = json.loads((REPO / "tests" / "fixtures" / "ccm-v1.36-flags.json").read_text())
ACTIONS = {"help", "version"}
"""Flags that print and exit when true: given with their default (false)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def pflag_text(flag: dict[str, Any]) -> str:
    """The flag's default as a command-line value (slices without their brackets)."""
    default: str = flag["default"]
    if flag["type"].endswith("Slice") and default.startswith("["):
        return default[1:-1]
    return default


def every_flag(bench: Bench, tmp_path: Path) -> tuple[list[str], int]:
    """``--name=value`` for each of the real CCM's flags, and the secure port chosen."""
    cloud_config = tmp_path / "cloud.conf"
    cloud_config.write_text(f"[Global]\nendpoint = {bench.cloud.url}\nclient = a\n")
    cert, key = self_signed(cert_dir=str(tmp_path / "pki"), bind_address="127.0.0.1")
    port = free_port()
    real = {
        "cloud-provider": "fake",
        "cloud-config": str(cloud_config),
        "kubeconfig": str(bench.kubeconfig),
        "authentication-kubeconfig": str(bench.kubeconfig),
        "authorization-kubeconfig": str(bench.kubeconfig),
        "cluster-cidr": "10.244.0.0/16",
        "bind-address": "127.0.0.1",
        "secure-port": str(port),
        "tls-cert-file": cert,
        "tls-private-key-file": key,
        "leader-elect-resource-name": "routectl",
        "tls-sni-cert-key": f"{cert},{key}",
        "webhook-tls-sni-cert-key": f"{cert},{key}",
    }
    args = [f"--{f['name']}={real.get(f['name'], pflag_text(f))}" for f in REFERENCE["flags"]]
    return args, port


async def test_routectl_run_takes_every_flag_of_the_real_ccm(bench: Bench, tmp_path: Path) -> None:
    bench.apiserver.create_node(node("n1", "10.244.1.0/24"))
    flags, port = every_flag(bench, tmp_path)
    assert len(flags) == 86  # 84 flags, --help and --version
    harness = ["--metrics-bind-address=127.0.0.1:0"]  # where the harness finds the probes
    process = await bench.start([*flags, *harness])
    await until(lambda: bench.routes() == {("n1", "10.244.1.0/24")}, within=60)
    await until(lambda: bench.condition("n1") == ("False", "RouteCreated"), within=60)
    assert bench.holder().startswith("routectl_")  # the Lease routectl was given
    assert process.logged(f"Serving /metrics, /healthz, /readyz and /livez securely on https://127.0.0.1:{port}")  # fmt: skip
    named = {flag for flag in IGNORED_FLAGS if process.logged(f"Ignoring {flag}: ")}
    valued = {a.partition("=")[0] for a in flags if a.partition("=")[2]}  # empty: not set
    assert named == set(IGNORED_FLAGS) & valued
    assert len(named) > 30  # most have a default worth naming
    for flag in named:
        assert len(process.logged(f"Ignoring {flag}: ")) == 1
    # "--use-service-account-credentials: routectl runs ..." is prose, not a credential field
    assert not process.logged("Ignoring .*<redacted>")
    assert await process.stop() == 0

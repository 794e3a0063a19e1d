"""docs/ccm-flags.md names every CCM flag routectl takes, and routectl takes every flag named."""

from __future__ import annotations

import json
import re
from pathlib import Path

from routectl.config import OPTIONS
from routectl.config.ccm import IGNORED_FLAGS
from routectl.config.option import RUN

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "ccm-flags.md").read_text()
REFERENCE = json.loads((REPO / "tests" / "fixtures" / "ccm-v1.36-flags.json").read_text())
"""Every flag of the real cloud-controller-manager v1.36 (its --help and deprecated ones)."""
REAL_CCM_FLAGS = {f"--{f['name']}" for f in REFERENCE["flags"]} - {"--help", "--version"}
RUN_FLAGS = {n for o in OPTIONS if o.flag and RUN in o.commands for n in (o.flag, *o.aliases)}
CCM_FLAGS_THAT_ACT = {
    "--cloud-provider", "--cloud-config", "--cluster-cidr", "--cluster-name",
    "--configure-cloud-routes", "--route-reconciliation-period", "--controllers",
    "--feature-gates", "--kubeconfig", "--kube-api-qps", "--kube-api-burst", "--leader-elect",
    "--leader-elect-lease-duration", "--leader-elect-renew-deadline",
    "--leader-elect-retry-period", "--leader-elect-resource-lock", "--leader-elect-resource-name",
    "--leader-elect-resource-namespace", "--bind-address", "--secure-port", "--tls-cert-file",
    "--tls-private-key-file", "--cert-dir", "--tls-min-version", "--authentication-kubeconfig",
    "--authorization-kubeconfig", "--authentication-token-webhook-cache-ttl",
    "--authorization-webhook-cache-authorized-ttl",
    "--authorization-webhook-cache-unauthorized-ttl", "--authorization-always-allow-paths",
    "--logging-format", "--v", "-v",
}  # fmt: skip


def named_in_tables() -> set[str]:
    """The flags in the first column of the document's tables."""
    cells = re.findall(r"^\| ([^|]+) \|", DOC, flags=re.MULTILINE)
    return {flag for cell in cells for flag in re.findall(r"`(--?[a-z0-9-]+)`", cell)}


def test_every_flag_in_the_doc_is_taken_by_routectl_run() -> None:
    """No row promises a flag the command line refuses."""
    assert named_in_tables() - RUN_FLAGS == set()


def test_every_ccm_flag_has_a_row() -> None:
    """The flags that act and the ignored ones are all in the tables."""
    assert (CCM_FLAGS_THAT_ACT | set(IGNORED_FLAGS)) - named_in_tables() == set()


def test_every_flag_of_the_real_ccm_has_a_row_and_is_taken() -> None:
    """All 84 flags of the v1.36 binary (--help and --version aside) are rows here, and
    routectl run takes each of them."""
    assert len(REAL_CCM_FLAGS) == 84
    assert REAL_CCM_FLAGS - named_in_tables() == set()
    assert not REAL_CCM_FLAGS - RUN_FLAGS

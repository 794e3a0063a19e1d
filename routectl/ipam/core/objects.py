"""The allocator's Kubernetes objects: claim Leases, the Node patch, Event texts.

* A **claim** is a ``coordination.k8s.io/v1`` Lease in routectl's namespace, one per
  allocated CIDR, named from the canonical CIDR (:func:`claim_name`: ``10.244.3.0/24`` is
  ``podcidr-v4-10-244-3-0-24``). The API server refuses a second object of that name, so
  two writers (a split brain, two deployments) can never both hand the CIDR out. The
  holder is the Node's name; the Node's UID and the pool are annotations, so a restart
  between the claim and the Node patch resumes to the same CIDR, and a pool no longer
  configured is known to drain.
* The **Node patch** is what kube-controller-manager writes: a strategic-merge PATCH of
  ``spec.podCIDR`` and ``spec.podCIDRs``, canonical, in ``--cluster-cidr`` family order.
* **Event texts** keep KCM's reasons and its ``Node <name> status is now: <reason>``.
* **ServiceCIDRs** (``networking.k8s.io/v1``) are read for their ranges, excluded from pools.

Pure: no I/O, no clock, no logging.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from routectl.cidr import Network, network_or_none

CLAIM_LABEL = "routectl.io/pod-cidr-claim"
CLAIM_SELECTOR = f"{CLAIM_LABEL}=true"
CIDR_ANNOTATION = "routectl.io/pod-cidr"
UID_ANNOTATION = "routectl.io/node-uid"
POOL_ANNOTATION = "routectl.io/pool"
CIDR_NOT_AVAILABLE = "CIDRNotAvailable"
CIDR_ASSIGNMENT_FAILED = "CIDRAssignmentFailed"
POOL_FILLING = "PodCIDRPoolFilling"
OTHER_ALLOCATOR = "OtherPodCIDRAllocator"
"""A pod CIDR in routectl's pools that routectl did not write: its allocation stops."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A claim Lease as read back: the CIDR, the Node that holds it, and its pool."""

    network: Network
    node: str
    uid: str
    pool: Network | None = None

    @property
    def name(self) -> str:
        """The Lease's name."""
        return claim_name(self.network)


def claim_name(network: Network) -> str:
    """The Lease name of ``network``'s claim: one name per canonical CIDR, and back."""
    address = str(network.network_address).replace(".", "-").replace(":", "-")
    return f"podcidr-v{network.version}-{address}-{network.prefixlen}"


def claim_body(claim: Claim, *, namespace: str) -> dict[str, Any]:
    """The Lease to create for ``claim``."""
    annotations = {CIDR_ANNOTATION: str(claim.network), UID_ANNOTATION: claim.uid}
    if claim.pool is not None:
        annotations[POOL_ANNOTATION] = str(claim.pool)
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": claim.name,
            "namespace": namespace,
            "labels": {CLAIM_LABEL: "true", "app.kubernetes.io/managed-by": "routectl"},
            "annotations": annotations,
        },
        "spec": {"holderIdentity": claim.node},
    }


def parse_claim(raw: Mapping[str, Any]) -> Claim | None:
    """A claim Lease read back; None if it is not one (or is damaged)."""
    metadata = raw.get("metadata")
    spec = raw.get("spec")
    if not isinstance(metadata, Mapping) or not isinstance(spec, Mapping):
        return None
    annotations = metadata.get("annotations")
    annotations = annotations if isinstance(annotations, Mapping) else {}
    network = network_or_none(str(annotations.get(CIDR_ANNOTATION, "")))
    if network is None or claim_name(network) != metadata.get("name"):
        return None
    pool = network_or_none(str(annotations.get(POOL_ANNOTATION, "")))
    return Claim(
        network=network,
        node=str(spec.get("holderIdentity") or ""),
        uid=str(annotations.get(UID_ANNOTATION, "")),
        pool=pool,
    )


def node_patch(cidrs: Sequence[Network]) -> dict[str, Any]:
    """KCM's write: ``{"spec": {"podCIDR": c0, "podCIDRs": [c0, c1]}}``, canonical."""
    texts = [str(c) for c in cidrs]
    return {"spec": {"podCIDR": texts[0], "podCIDRs": texts}}


def status_message(node: str, reason: str, detail: str = "") -> str:
    """KCM's Event message (``Node n1 status is now: CIDRNotAvailable``), and why."""
    text = f"Node {node} status is now: {reason}"
    return f"{text}: {detail}" if detail else text


def service_cidrs(objects: Iterable[Mapping[str, Any]]) -> list[Network]:
    """The ranges of networking.k8s.io/v1 ServiceCIDR objects (unparsable ones skipped)."""
    found = []
    for obj in objects:
        spec = obj.get("spec")
        cidrs = spec.get("cidrs") if isinstance(spec, Mapping) else None
        for text in cidrs if isinstance(cidrs, list) else []:
            network = network_or_none(str(text))
            if network is not None:
                found.append(network)
    return found

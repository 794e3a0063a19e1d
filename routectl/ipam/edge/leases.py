"""Claims: a Lease per allocated pod CIDR, so two writers never hand one CIDR out twice.

A claim is created before the Node patch that hands its CIDR out, in routectl's namespace,
named from the canonical CIDR (:mod:`routectl.ipam.core.objects`). Promises: :meth:`take` is
True only when the Node holds the claim (created now, or its own from before a crash, which
resumes to the same CIDR); someone else's claim makes the block foreign and is False. A
released block's claim is deleted before the block is reused ("gone already" is fine).
Claims are read without the fence and written through it.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any, Protocol

from routectl.cidr import Network
from routectl.errors import KubeError
from routectl.ipam.core import Allocation, Allocator, Claim
from routectl.ipam.core.objects import CLAIM_SELECTOR, claim_body, claim_name, parse_claim
from routectl.kube.node_status import IpamWriter
from routectl.model import NodeView

__all__ = ["ClaimLeases", "IpamReader"]

logger = logging.getLogger("routectl.ipam")


class IpamReader(Protocol):
    """The reads node IPAM makes (not fenced)."""

    async def list_leases(self, namespace: str, *, label_selector: str) -> list[dict[str, Any]]: ...

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def list_service_cidrs(self) -> list[dict[str, Any]]: ...


class ClaimLeases:
    """The claim Leases this allocator knows of (none with ``--pod-cidr-claims=none``)."""

    def __init__(
        self, *, reader: IpamReader, writer: IpamWriter, namespace: str, enabled: bool
    ) -> None:
        self._reader, self._writer = reader, writer
        self.namespace, self.enabled = namespace, enabled
        self._claims: dict[str, Claim] = {}

    async def load(self) -> list[Claim]:
        """Read every claim afresh (at a rebuild) and remember them."""
        claims: list[Claim] = []
        if self.enabled:
            raw = await self._reader.list_leases(self.namespace, label_selector=CLAIM_SELECTOR)
            claims = [c for c in map(parse_claim, raw) if c is not None]
        self._claims = {c.name: c for c in claims}
        return claims

    async def holds(self, node: NodeView, network: Network) -> bool | KubeError:
        """Whether ``node`` (same UID) holds the claim of ``network`` (read afresh when this
        allocator does not know it)."""
        if not self.enabled:
            return False
        known = self._claims.get(claim_name(network))
        if known is not None and known.uid == node.uid:
            return True
        try:
            raw = await self._reader.get_lease(self.namespace, claim_name(network))
        except KubeError as exc:
            return exc
        theirs = parse_claim(raw) if raw is not None else None
        return theirs is not None and theirs.uid == node.uid and theirs.network == network

    async def release(self, network: Network) -> KubeError | None:
        """Delete ``network``'s claim before its block is reused; the error, if that failed."""
        claim = next((c for c in self._claims.values() if c.network == network), None)
        if claim is None and not self.enabled:
            return None
        name = claim.name if claim is not None else claim_name(network)
        try:
            await self._writer.delete_lease(self.namespace, name)
        except KubeError as exc:
            if exc.status != HTTPStatus.NOT_FOUND:
                return exc
        self._claims.pop(name, None)
        return None

    async def take(self, state: Allocator, a: Allocation, network: Network) -> bool | KubeError:
        """Make sure ``a.node`` holds the claim of ``network``; False if someone else does."""
        pool = state.pool_of(network)
        claim = Claim(network=network, node=a.node, uid=a.uid, pool=pool.network if pool else None)
        known = self._claims.get(claim.name)
        if known is not None and known.uid == a.uid:
            return True
        try:
            await self._writer.create_lease(
                self.namespace, claim_body(claim, namespace=self.namespace)
            )
        except KubeError as exc:
            if exc.status != HTTPStatus.CONFLICT:
                return exc
            try:
                raw = await self._reader.get_lease(self.namespace, claim.name)
            except KubeError as read_error:
                return read_error
            theirs = parse_claim(raw) if raw is not None else None
            if theirs is not None and theirs.uid == a.uid:
                self._claims[claim.name] = theirs
                return True
            holder = theirs.node if theirs is not None else "unknown"
            logger.warning("Pod CIDR %s is claimed by %s elsewhere; not using it", network, holder)
            state.claimed_elsewhere(network, holder)
            return False
        self._claims[claim.name] = claim
        return True

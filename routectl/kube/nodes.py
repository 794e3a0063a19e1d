"""The calls about Nodes: list (paginated), watch, patch status and spec; ServiceCIDRs.

Promises: a listing is one consistent snapshot of every page; a watch yields events until
the server ends the stream, an ERROR event or a cut connection raising KubeError (410 as
ResourceVersionGoneError).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from http import HTTPStatus

import aiohttp

from routectl.errors import ImpossibleObjectError, KubeError
from routectl.kube.base import CORE, NETWORKING, STRATEGIC_MERGE, ApiBase
from routectl.kube.decode import NodeEvent, decode_page, node_events
from routectl.kube.stream import ReadPacer, events
from routectl.kube.transport import JsonObj, error, read_body, read_json, translated
from routectl.model import NodeView

__all__ = ["WATCH_GRACE", "NodeCalls", "NodeListing", "NodeViews"]

WATCH_GRACE = 30
"""Seconds past its ``timeoutSeconds`` after which a watch the server has not ended is
taken for dead (a half-open connection)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NodeListing:
    """All Nodes at one resourceVersion (every page of a paginated list)."""

    items: list[JsonObj]
    resource_version: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NodeViews:
    """All Nodes at one resourceVersion, decoded into what routing reads; ``skipped`` says
    why each Node that cannot be routed (no name) was left out."""

    nodes: list[NodeView]
    skipped: list[str]
    impossible: list[ImpossibleObjectError]
    """Nodes the API server never serves (``spec: null``...): what they say is unknown."""
    resource_version: str


class NodeCalls(ApiBase):
    """Reading Nodes, writing their status and spec; reading ServiceCIDRs."""

    async def list_nodes(self, *, page_size: int = 500) -> NodeListing:
        """List every Node, page by page, as one consistent snapshot."""
        items: list[JsonObj] = []
        token: str | None = None
        resource_version = ""
        while True:
            with translated("list nodes"):
                query: dict[str, str | int | bool] = {"limit": page_size}
                if token:
                    query["continue"] = token
                response = await self.api.request(
                    "GET", f"{CORE}/nodes", query=query, timeout=self._timeout()
                )
                page = await read_json(response, what="list nodes")
            page_items = page.get("items") or []
            if not isinstance(page_items, list):
                raise KubeError("list nodes: the answer's items are not a list")
            items.extend(page_items)
            metadata = page.get("metadata") or {}
            if not isinstance(metadata, dict):
                raise KubeError("list nodes: the answer's metadata is not an object")
            resource_version = str(metadata.get("resourceVersion", resource_version))
            token = metadata.get("continue")
            if not token:
                return NodeListing(items=items, resource_version=resource_version)

    async def list_node_views(self, *, page_size: int = 500) -> NodeViews:
        """List every Node as :meth:`list_nodes` does, decoding only what routing reads."""
        nodes: list[NodeView] = []
        skipped: list[str] = []
        impossible: list[ImpossibleObjectError] = []
        token = ""
        resource_version = ""
        while True:
            with translated("list nodes"):
                query: dict[str, str | int | bool] = {"limit": page_size}
                if token:
                    query["continue"] = token
                response = await self.api.request(
                    "GET", f"{CORE}/nodes", query=query, timeout=self._timeout()
                )
                page = decode_page(await read_body(response, what="list nodes"))
            nodes.extend(page.nodes)
            skipped.extend(page.skipped)
            impossible.extend(page.impossible)
            resource_version = page.resource_version or resource_version
            token = page.continue_token
            if not token:
                return NodeViews(
                    nodes=nodes,
                    skipped=skipped,
                    impossible=impossible,
                    resource_version=resource_version,
                )

    async def watch_node_events(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[NodeEvent]:
        """:meth:`watch_nodes`, each event decoded into only what routing reads.

        The whole watch has one deadline (the server's timeout plus :data:`WATCH_GRACE`)
        rather than a read timeout re-armed on every chunk (a timer per heartbeat): the
        caller must not await anything else between two events, so that the deadline
        lands inside this generator (the informer does not). A busy watch is read in
        batches (:class:`~routectl.kube.stream.ReadPacer`).
        """
        with translated("watch nodes"):
            async with asyncio.timeout(timeout_seconds + WATCH_GRACE):
                response = await self._watch(
                    resource_version,
                    timeout_seconds,
                    limits=aiohttp.ClientTimeout(total=None, sock_connect=self.request_timeout),
                )
                async with response:
                    if response.status != 200:  # noqa: PLR2004 -- a watch answers 200 or fails
                        raise error(response.status, await response.read(), what="watch nodes")
                    connection = response.connection
                    pacer = ReadPacer(connection.protocol if connection else None)
                    async for event in node_events(
                        response.content, limit=self.max_event_bytes, pacer=pacer
                    ):
                        yield event

    async def _watch(
        self, resource_version: str, timeout_seconds: int, *, limits: aiohttp.ClientTimeout
    ) -> aiohttp.ClientResponse:
        query: dict[str, str | int | bool] = {
            "watch": True,
            "resourceVersion": resource_version,
            "allowWatchBookmarks": True,
            "timeoutSeconds": timeout_seconds,
        }
        return await self.api.request(
            "GET",
            f"{CORE}/nodes",
            query=query,
            timeout=limits,
        )

    async def watch_nodes(
        self, *, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[JsonObj]:
        """Yield watch events after ``resource_version`` until the server ends the stream.

        An ERROR event raises (410 as ResourceVersionGoneError); a cut connection raises
        KubeError. A clean end (the server's timeout) just returns.
        """
        with translated("watch nodes"):
            response = await self._watch(
                resource_version,
                timeout_seconds,
                limits=aiohttp.ClientTimeout(
                    sock_connect=self.request_timeout, sock_read=timeout_seconds + WATCH_GRACE
                ),
            )
            async with response:
                if response.status != HTTPStatus.OK:  # a watch answers 200 or fails
                    raise error(response.status, await response.read(), what="watch nodes")
                async for event in events(response.content, limit=self.max_event_bytes):
                    yield event

    async def patch_node_status(self, name: str, patch: JsonObj) -> None:
        """Strategic-merge PATCH of ``nodes/<name>/status``."""
        what = f"patch status of node {name}"
        with translated(what):
            response = await self.api.request(
                "PATCH",
                f"{CORE}/nodes/{name}/status",
                body=patch,
                content_type=STRATEGIC_MERGE,
                timeout=self._timeout(),
            )
            await read_json(response, what=what)

    async def patch_node(self, name: str, patch: JsonObj) -> JsonObj:
        """Strategic-merge PATCH of ``nodes/<name>`` (its spec); returns the Node."""
        what = f"patch node {name}"
        with translated(what):
            response = await self.api.request(
                "PATCH",
                f"{CORE}/nodes/{name}",
                body=patch,
                content_type=STRATEGIC_MERGE,
                timeout=self._timeout(),
            )
            return await read_json(response, what=what)

    async def list_service_cidrs(self) -> list[JsonObj]:
        """Every networking.k8s.io/v1 ServiceCIDR (404 on clusters older than 1.33)."""
        with translated("list servicecidrs"):
            response = await self.api.request(
                "GET", f"{NETWORKING}/servicecidrs", timeout=self._timeout()
            )
            page = await read_json(response, what="list servicecidrs")
        found = page.get("items") or []
        return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []

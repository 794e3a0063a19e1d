"""Instance look-ups: the URL of a Node's instance, learned or looked up, and cached.

A create needs the instance's URL (its next hop): learned from the listing (a listed route's
next hop is its instance's URL, free), else looked up and cached (a filtered
``instances.list`` in ``local-zone``, or ``instances.aggregatedList`` over every zone when
``multizone``/``regional`` or no zone is set); look-ups asked for at once share one request
(:mod:`routectl_gce.batch`), so an instance costs one request at most. An instance whose
route warns that it is gone, or that an insert's operation no longer finds, is forgotten.

Promises: no instance is an error a retry may cure (it may show up); one name in several
zones is terminal (the Node cannot be told apart); every look-up is a paced request of
:class:`~routectl_gce.cloud.GceCloud`, a page each.
"""

from __future__ import annotations

import re
from typing import Any

from google.cloud import compute_v1

from routectl.errors import ProviderError, ProviderTerminalError
from routectl_gce.batch import Batch, Coalescer
from routectl_gce.cloud import REQUEST_SECONDS, Clients, GceCloud
from routectl_gce.names import instance_name
from routectl_gce.options import GceOptions

BATCH = 100
"""Names or destinations one look-up asks for at most (its filter stays short)."""


class Instances:
    """Instance name -> URL, learned from listings and look-ups; look-ups shared."""

    def __init__(self, cloud: GceCloud, options: GceOptions) -> None:
        self._cloud = cloud
        self.options = options
        self._urls: dict[str, str] = {}
        self._lookups = Coalescer(self._instances_named, limit=BATCH)

    def learn(self, instance: str, url: str) -> None:
        """``instance`` is at ``url`` (a listed route's next hop)."""
        self._urls[instance] = url

    def forget(self, instance: str) -> None:
        """``instance`` may be gone: look it up anew when next needed."""
        self._urls.pop(instance, None)

    async def url(self, node: str) -> str:
        """The URL of the Node's instance: cached, else looked up (with any other instances
        asked for at the same time, in one request)."""
        name = instance_name(node)
        if name not in self._urls:
            links = await self._lookups.get(name) or []
            if not links:
                raise ProviderError(f"no instance named {name!r} (yet){self._where()}")
            if len(links) > 1:
                raise ProviderTerminalError(
                    f"instances named {name!r} in several zones ({', '.join(links)}): set "
                    "local-zone and multizone=false, or give Nodes unique names"
                )
            self._urls[name] = links[0]
        return self._urls[name]

    async def aclose(self) -> None:
        """Stop the look-ups under way."""
        await self._lookups.aclose()

    def _where(self) -> str:
        return f" in zone {self.options.local_zone}" if self.options.zonal else ""

    async def _instances_named(self, batch: Batch[str, list[str]]) -> dict[str, list[str]]:
        """The instances of each name of ``batch``: ``instances.list`` in ``local-zone``, or
        one ``instances.aggregatedList`` over every zone; a page each."""
        clients = await self._cloud.clients()
        project, zone = clients.project, self.options.local_zone
        keys: list[str] = []

        def close() -> None:
            keys[:] = batch.close()

        def names() -> str:
            return f'name eq "({"|".join(re.escape(k) for k in keys)})"'

        found: dict[str, list[str]] = {}
        token = ""
        while True:

            def send(c: Clients, token: str = token) -> Any:
                if self.options.zonal:
                    request = compute_v1.ListInstancesRequest(
                        project=project, zone=zone, filter=names(), page_token=token
                    )
                    return c.instances.list(request=request, retry=None, timeout=REQUEST_SECONDS)
                aggregated = compute_v1.AggregatedListInstancesRequest(
                    project=project, filter=names(), page_token=token
                )
                return c.instances.aggregated_list(
                    request=aggregated, retry=None, timeout=REQUEST_SECONDS
                )

            what = "instances.list" if self.options.zonal else "instances.aggregatedList"
            page = await self._cloud.request(what, send, before_send=close)
            close = _nothing
            listed = (
                page.items
                if self.options.zonal
                else [i for scoped in page.items.values() for i in scoped.instances]
            )
            for instance in listed:
                found.setdefault(str(instance.name), []).append(str(instance.self_link))
            token = page.next_page_token
            if not token:
                return {name: sorted(links) for name, links in found.items()}


def _nothing() -> None:
    return None

"""The calls about Leases: the leader's Lease and node IPAM's claims.

Promises: a missing Lease reads as None; create and replace are optimistic (409 when
someone was faster, or the resourceVersion is old).
"""

from __future__ import annotations

from http import HTTPStatus

from routectl.errors import KubeError
from routectl.kube.base import COORDINATION, ApiBase
from routectl.kube.transport import JsonObj, read_json, translated

__all__ = ["LeaseCalls"]


class LeaseCalls(ApiBase):
    """Read, create, replace, list and delete Leases."""

    async def get_lease(self, namespace: str, name: str) -> JsonObj | None:
        """Read a Lease; None if it does not exist."""
        with translated("get lease"):
            response = await self.api.request(
                "GET", _path(namespace, name), timeout=self._timeout()
            )
            try:
                return await read_json(response, what="get lease")
            except KubeError as exc:
                if exc.status == HTTPStatus.NOT_FOUND:
                    return None
                raise

    async def create_lease(self, namespace: str, lease: JsonObj) -> JsonObj:
        """Create a Lease (409 AlreadyExists if someone was faster)."""
        with translated("create lease"):
            response = await self.api.request(
                "POST", _path(namespace), body=lease, timeout=self._timeout()
            )
            return await read_json(response, what="create lease")

    async def replace_lease(self, namespace: str, lease: JsonObj) -> JsonObj:
        """Replace a Lease; its resourceVersion makes this optimistic (409 Conflict)."""
        name = lease["metadata"]["name"]
        with translated("update lease"):
            response = await self.api.request(
                "PUT", _path(namespace, name), body=lease, timeout=self._timeout()
            )
            return await read_json(response, what="update lease")

    async def list_leases(
        self, namespace: str, *, label_selector: str, page_size: int = 500
    ) -> list[JsonObj]:
        """Every Lease in ``namespace`` with the labels asked for, page by page."""
        items: list[JsonObj] = []
        token: str | None = None
        while True:
            with translated("list leases"):
                query: dict[str, str | int | bool] = {
                    "limit": page_size,
                    "labelSelector": label_selector,
                }
                if token:
                    query["continue"] = token
                response = await self.api.request(
                    "GET", _path(namespace), query=query, timeout=self._timeout()
                )
                page = await read_json(response, what="list leases")
            found = page.get("items") or []
            if isinstance(found, list):
                items.extend(i for i in found if isinstance(i, dict))
            metadata = page.get("metadata")
            token = metadata.get("continue") if isinstance(metadata, dict) else None
            if not token:
                return items

    async def delete_lease(self, namespace: str, name: str) -> None:
        """Delete a Lease (404 if it is gone already)."""
        with translated("delete lease"):
            response = await self.api.request(
                "DELETE", _path(namespace, name), timeout=self._timeout()
            )
            await read_json(response, what="delete lease")


def _path(namespace: str, name: str = "") -> str:
    leases = f"{COORDINATION}/namespaces/{namespace}/leases"
    return f"{leases}/{name}" if name else leases

"""The calls about Events and access reviews (what is told, and who may ask).

Promises: Events are created, read and patched as client-go's correlator does; a
TokenReview's or SubjectAccessReview's answer is its status (empty when it has none).
"""

from __future__ import annotations

from routectl.kube.base import CORE, STRATEGIC_MERGE, ApiBase
from routectl.kube.transport import JsonObj, read_json, translated

__all__ = ["EventCalls", "ReviewCalls"]


class EventCalls(ApiBase):
    """Create, read and patch core/v1 Events."""

    async def create_event(self, event: JsonObj) -> JsonObj:
        """Create a core/v1 Event in its namespace (409 AlreadyExists if the name is taken)."""
        namespace = event["metadata"]["namespace"]
        with translated("create event"):
            response = await self.api.request(
                "POST", _events(namespace), body=event, timeout=self._timeout()
            )
            return await read_json(response, what="create event")

    async def get_event(self, namespace: str, name: str) -> JsonObj:
        """Read a core/v1 Event."""
        with translated("get event"):
            response = await self.api.request(
                "GET", _events(namespace, name), timeout=self._timeout()
            )
            return await read_json(response, what="get event")

    async def patch_event(self, namespace: str, name: str, patch: JsonObj) -> JsonObj:
        """Strategic-merge PATCH of a core/v1 Event (client-go's correlator's update)."""
        with translated("patch event"):
            response = await self.api.request(
                "PATCH",
                _events(namespace, name),
                body=patch,
                content_type=STRATEGIC_MERGE,
                timeout=self._timeout(),
            )
            return await read_json(response, what="patch event")


class ReviewCalls(ApiBase):
    """TokenReviews and SubjectAccessReviews, for delegated authentication."""

    async def review_token(self, token: str) -> JsonObj:
        """POST a TokenReview of ``token``; the review's status."""
        body = _review("authentication.k8s.io/v1", "TokenReview", {"token": token})
        with translated("review token"):
            response = await self.api.request(
                "POST",
                "/apis/authentication.k8s.io/v1/tokenreviews",
                body=body,
                timeout=self._timeout(),
            )
            return _status(await read_json(response, what="review token"))

    async def review_access(self, spec: JsonObj) -> JsonObj:
        """POST a SubjectAccessReview of ``spec``; the review's status."""
        body = _review("authorization.k8s.io/v1", "SubjectAccessReview", spec)
        with translated("review access"):
            response = await self.api.request(
                "POST",
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                body=body,
                timeout=self._timeout(),
            )
            return _status(await read_json(response, what="review access"))


def _review(api_version: str, kind: str, spec: JsonObj) -> JsonObj:
    """A review object of ``kind`` asking about ``spec``."""
    return {"apiVersion": api_version, "kind": kind, "spec": spec}


def _status(review: JsonObj) -> JsonObj:
    """A review's answer: its status, empty when it has none."""
    status = review.get("status")
    return status if isinstance(status, dict) else {}


def _events(namespace: str, name: str = "") -> str:
    events = f"{CORE}/namespaces/{namespace}/events"
    return f"{events}/{name}" if name else events

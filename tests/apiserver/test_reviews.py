"""TokenReview and SubjectAccessReview on the fake API server, as kube-apiserver answers them.

No recording of these exists in ``tests/fixtures/kube-api``; the answers follow the v1 types
(``omitempty`` fields left out, ``allowed`` always present) and the REST handlers' checks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from routectl_sim.apiserver import FakeApiServer
from tests.apiserver.harness import TOKEN

pytestmark = [pytest.mark.integration, pytest.mark.looptime]
TOKENREVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SARS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@pytest.fixture
async def server() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer(token=TOKEN) as fake:
        fake.add_review_token("t1", username="alice", groups=("team",))
        fake.grant_review("team", verb="get", path="/metrics")
        yield fake


async def post(session: aiohttp.ClientSession, server: FakeApiServer, path: str, body: Any) -> tuple[int, Any]:  # fmt: skip
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    async with session.post(server.url + path, json=body, headers=headers) as response:
        return response.status, await response.json()


def review(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    group = "authentication" if kind == "TokenReview" else "authorization"
    return {"apiVersion": f"{group}.k8s.io/v1", "kind": kind, "spec": spec}


async def test_a_known_token_is_authenticated(server, session) -> None:
    """201, authenticated, the user with system:authenticated among the groups."""
    status, body = await post(session, server, TOKENREVIEWS, review("TokenReview", {"token": "t1"}))
    assert status == 201
    assert body["metadata"] == {"creationTimestamp": None}
    assert body["status"]["authenticated"] is True
    assert body["status"]["user"]["username"] == "alice"
    assert body["status"]["user"]["groups"] == ["team", "system:authenticated"]


async def test_an_unknown_token_is_not_authenticated(server, session) -> None:
    """201 with status {"user": {}}: authenticated is omitted, as Go omits a false omitempty."""
    status, body = await post(
        session, server, TOKENREVIEWS, review("TokenReview", {"token": "nope"})
    )
    assert (status, body["status"]) == (201, {"user": {}})


async def test_an_empty_token_is_a_bad_request(server, session) -> None:
    """400 with the REST handler's text."""
    status, body = await post(session, server, TOKENREVIEWS, review("TokenReview", {"token": ""}))
    assert status == 400
    assert body["message"] == "token is required for TokenReview in authentication"


async def test_access_is_allowed_by_a_group_grant_and_denied_otherwise(server, session) -> None:
    """allowed true with RBAC's reason for the group; allowed false (present) for another path."""
    spec: dict[str, Any] = {"user": "alice", "groups": ["team"], "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}  # fmt: skip
    status, body = await post(session, server, SARS, review("SubjectAccessReview", spec))
    assert status == 201
    assert body["status"]["allowed"] is True
    assert body["status"]["reason"].startswith("RBAC: allowed by ClusterRoleBinding")
    spec["nonResourceAttributes"]["path"] = "/debug"
    _, body = await post(session, server, SARS, review("SubjectAccessReview", spec))
    assert body["status"] == {"allowed": False}


async def test_a_review_without_attributes_or_subject_is_invalid(server, session) -> None:
    """422 naming both problems."""
    status, body = await post(session, server, SARS, review("SubjectAccessReview", {}))
    assert status == 422
    fields = {cause["field"] for cause in body["details"]["causes"]}
    assert fields == {"spec.resourceAttributes", "spec.user"}


async def test_reviews_need_rbac_like_any_request(server, session) -> None:
    """The caller needs create on the review resources (403 when denied)."""
    server.forbid(verb="create", resource="tokenreviews")
    status, _ = await post(session, server, TOKENREVIEWS, review("TokenReview", {"token": "t1"}))
    assert status == 403

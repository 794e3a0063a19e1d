"""TokenReview and SubjectAccessReview: the delegated authentication and authorization API.

Promises (``k8s.io/kubernetes/pkg/registry/authentication/tokenreview``,
``pkg/registry/authorization/subjectaccessreview``, their v1 types):

* ``POST /apis/authentication.k8s.io/v1/tokenreviews`` answers 201 with the review, its
  ``metadata`` ``{"creationTimestamp": null}`` and ``status``: for a known token
  ``authenticated: true`` and the user (username, uid, groups with
  ``system:authenticated``), the audiences asked for; for an unknown token
  ``{"user": {}}`` (``authenticated`` omitted, as Go omits a false ``omitempty`` field). An
  empty ``spec.token`` is a 400 ``token is required for TokenReview in authentication``;
* ``POST /apis/authorization.k8s.io/v1/subjectaccessreviews`` answers 201 with
  ``status.allowed`` (always present) and, when allowed, RBAC's reason. Exactly one of
  ``resourceAttributes`` and ``nonResourceAttributes`` must be given, and a user or a
  group, else 422 with the validation's texts;
* a review is never stored: no resourceVersion, no watch event;
* which tokens exist and who may do what are set by the test:
  :meth:`Reviews.add_token` and :meth:`Reviews.grant`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aiohttp import web

from routectl_sim.apiserver.encoding import json_response
from routectl_sim.apiserver.routes import read_json
from routectl_sim.apiserver.status import FieldError, bad_request, invalid

AUTHENTICATION = "/apis/authentication.k8s.io/v1/tokenreviews"
AUTHORIZATION = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
AUTHENTICATED = "system:authenticated"


@dataclasses.dataclass(frozen=True, slots=True)
class Identity:
    """Who a token stands for."""

    username: str
    uid: str
    groups: tuple[str, ...]


@dataclasses.dataclass(slots=True)
class Reviews:
    """Known tokens and granted (subject, verb, path-or-resource) triples."""

    tokens: dict[str, Identity] = dataclasses.field(default_factory=dict)
    grants: set[tuple[str, str, str]] = dataclasses.field(default_factory=set)

    def add_token(self, token: str, *, username: str, groups: tuple[str, ...] = ()) -> None:
        """Make ``token`` authenticate as ``username`` (in ``groups`` and system:authenticated)."""
        uid = f"uid-{len(self.tokens) + 1}"
        self.tokens[token] = Identity(username, uid, (*groups, AUTHENTICATED))

    def grant(self, subject: str, *, verb: str, path: str) -> None:
        """Allow a user or group (``subject``) ``verb`` on a path or resource (``nodes``)."""
        self.grants.add((subject, verb, path))

    def routes(self) -> list[web.RouteDef]:
        """The two POST endpoints."""
        return [web.post(AUTHENTICATION, self.token_review), web.post(AUTHORIZATION, self.access)]

    async def token_review(self, request: web.Request) -> web.StreamResponse:
        """POST tokenreviews."""
        review = await read_json(request, kind="TokenReview")
        spec = dict(review.get("spec") or {})
        token = str(spec.get("token") or "")
        if not token:
            raise bad_request("token is required for TokenReview in authentication")
        identity = self.tokens.get(token)
        status: dict[str, Any] = {"user": {}}
        if identity is not None:
            status = {
                "authenticated": True,
                "user": {
                    "username": identity.username,
                    "uid": identity.uid,
                    "groups": list(identity.groups),
                },
            }
            if spec.get("audiences"):
                status["audiences"] = list(spec["audiences"])
        body = {
            "kind": "TokenReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }
        return json_response(body, status=201)

    async def access(self, request: web.Request) -> web.StreamResponse:
        """POST subjectaccessreviews."""
        review = await read_json(request, kind="SubjectAccessReview")
        spec = dict(review.get("spec") or {})
        _validate(spec)
        subjects = [spec.get("user") or "", *(spec.get("groups") or [])]
        verb, target = _target(spec)
        allowed = next((s for s in subjects if s and (s, verb, target) in self.grants), None)
        status: dict[str, Any] = {"allowed": allowed is not None}
        if allowed is not None:
            status["reason"] = (
                f'RBAC: allowed by ClusterRoleBinding "{allowed}-reader" of ClusterRole '
                f'"{allowed}-reader" to {"Group" if allowed in subjects[1:] else "User"} '
                f'"{allowed}"'
            )
        body = {
            "kind": "SubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }
        return json_response(body, status=201)


def _target(spec: dict[str, Any]) -> tuple[str, str]:
    non_resource = spec.get("nonResourceAttributes")
    if non_resource:
        return str(non_resource.get("verb", "")), str(non_resource.get("path", ""))
    resource = spec.get("resourceAttributes") or {}
    return str(resource.get("verb", "")), str(resource.get("resource", ""))


def _validate(spec: dict[str, Any]) -> None:
    errors = []
    both = bool(spec.get("resourceAttributes")) == bool(spec.get("nonResourceAttributes"))
    if both and spec.get("resourceAttributes"):
        errors.append(
            FieldError(
                field="spec.nonResourceAttributes",
                type="Invalid",
                value=spec["nonResourceAttributes"],
                detail="cannot be specified in combination with resourceAttributes",
            )
        )
    elif both:
        errors.append(
            FieldError(
                field="spec.resourceAttributes",
                type="Invalid",
                value=None,
                detail="exactly one of nonResourceAttributes or resourceAttributes must be "
                "specified",
            )
        )
    if not spec.get("user") and not spec.get("groups"):
        errors.append(
            FieldError(
                field="spec.user",
                type="Invalid",
                value="",
                detail="at least one of user or group must be specified",
            )
        )
    if errors:
        raise invalid(
            group="authorization.k8s.io", kind="SubjectAccessReview", name="", errors=errors
        )

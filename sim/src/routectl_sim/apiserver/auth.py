"""Who is asking and may they: bearer-token authentication and an RBAC-like deny list.

Promises (fixtures ``60-*``/``61-*``):

* :func:`request_info` derives the verb (``get``/``list``/``watch``/``create``/``update``/
  ``patch``/``delete``/``deletecollection``), API group, resource, subresource, namespace and
  name of a request the way kube-apiserver's ``RequestInfoFactory`` does;
* with a token configured, a request without ``Authorization`` is ``system:anonymous`` and
  is refused with 403 (anonymous has no RBAC rights), a wrong token is 401 ``Unauthorized``
  (no details), and the right token is the configured user;
* a denied request gets RBAC's 403 text, e.g. ``nodes "n" is forbidden: User "u" cannot
  patch resource "nodes/status" in API group "" at the cluster scope``;
* ``/version``, ``/healthz``, ``/livez`` and ``/readyz`` are open to everyone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from routectl_sim.apiserver.status import ApiError, GroupResource, build_status, forbidden

ANONYMOUS = "system:anonymous"
PUBLIC_PATHS = frozenset({"/version", "/healthz", "/livez", "/readyz"})
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclasses.dataclass(frozen=True, slots=True)
class RequestInfo:
    """The authorization attributes of a request."""

    verb: str
    path: str
    is_resource: bool = False
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def full_resource(self) -> str:
        """``resource`` or ``resource/subresource``."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """Parse a request the way ``RequestInfoFactory.NewRequestInfo`` does."""
    parts = [p for p in path.split("/") if p]
    match parts:
        case ["api", _, *rest]:
            group = ""
        case ["apis", group, _, *rest]:
            pass
        case _:
            return RequestInfo(verb=method.lower(), path=path)
    watch_prefix = rest[:1] == ["watch"]
    if watch_prefix:
        rest = rest[1:]
    namespace = ""
    match rest:
        case ["namespaces", namespace, resource, *tail]:
            rest = [resource, *tail]
    resource, name, subresource = [*rest, "", "", ""][:3]
    watch = query.get("watch", "0").lower() not in ("0", "false")
    if method == "GET":
        verb = "get" if name else "watch" if watch or watch_prefix else "list"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    return RequestInfo(
        verb=verb,
        path=path,
        is_resource=True,
        api_group=group,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )


def unauthorized() -> ApiError:
    """401 for an unknown bearer token."""
    return ApiError(build_status(code=401, message="Unauthorized"))


def deny(info: RequestInfo, user: str) -> ApiError:
    """RBAC's 403 for ``user`` doing ``info``."""
    if not info.is_resource:
        why = f'User "{user}" cannot {info.verb} path "{info.path}"'
        return ApiError(build_status(code=403, message=f"forbidden: {why}", details={}))
    scope = f'in the namespace "{info.namespace}"' if info.namespace else "at the cluster scope"
    why = (
        f'User "{user}" cannot {info.verb} resource "{info.full_resource}" '
        f'in API group "{info.api_group}" {scope}'
    )
    exc = forbidden(GroupResource(info.api_group, info.resource), info.name, why)
    exc.headers["X-Content-Type-Options"] = "nosniff"
    return exc


@dataclasses.dataclass(slots=True, kw_only=True)
class Authorizer:
    """Authentication by one bearer token, authorization by a deny list."""

    token: str | None
    user: str
    denied: set[tuple[str, str]] = dataclasses.field(default_factory=set)

    def authenticate(self, header: str | None) -> str:
        """The user name for an ``Authorization`` header (401 for a wrong token)."""
        if self.token is None:
            return self.user
        if not header:
            return ANONYMOUS
        scheme, _, credential = header.partition(" ")
        if scheme.lower() != "bearer" or credential.strip() != self.token:
            raise unauthorized()
        return self.user

    def authorize(self, info: RequestInfo, user: str) -> None:
        """Raise 403 unless ``user`` may do ``info``."""
        if info.path in PUBLIC_PATHS:
            return
        if user == ANONYMOUS:
            raise deny(info, user)
        for verb, resource in ((info.verb, info.full_resource), ("*", info.full_resource)):
            if (verb, resource) in self.denied or (verb, "*") in self.denied:
                raise deny(info, user)

"""Shared helpers for the FakeApiServer tests (this module holds no tests).

* :func:`recorded` loads a kube-apiserver v1.36.2 exchange from ``tests/fixtures/kube-api``;
* :func:`replay` sends a recorded request to the fake server over real HTTP and returns
  status, headers and parsed body, so a test can compare them with the recorded response;
* :func:`normalized` drops what legitimately differs between two servers (uids, timestamps,
  resourceVersion values, managedFields) so whole objects can be compared;
* :func:`seed_cluster` creates the seven Nodes the recordings were made against.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client

from routectl_sim.apiserver import FakeApiServer

FIXTURES = Path(__file__).parent.parent / "fixtures" / "kube-api"
TOKEN = "admin-token"  # noqa: S105 - a throwaway test credential
"""The token the fixtures call the "admin static token"."""

SEED_FIXTURES = (
    "01-node-create-kind-1",
    "01-node-create-kubeadm-1",
    "01-node-create-openshift-gcp-1",
    "01-node-create-openshift-aws-1",
    "01-node-create-rke2-1",
    "01-node-create-gke-1",
    "01-node-create-eks-1",
)
"""The creates that built the recorded cluster, in recording order."""

_VOLATILE_META = ("uid", "resourceVersion", "creationTimestamp", "managedFields")


def recorded(name: str) -> dict[str, Any]:
    """One recorded exchange (``request``, ``response``, ``note``)."""
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


def request_body(name: str) -> Any:
    """The recorded request body."""
    return copy.deepcopy(recorded(name)["request"]["body"])


def response_body(name: str) -> Any:
    """The recorded response body (a list of events for watches)."""
    return copy.deepcopy(recorded(name)["response"]["body"])


def seed_cluster(server: FakeApiServer) -> None:
    """Create the seven recorded Nodes through the server's own POST logic."""
    for name in SEED_FIXTURES:
        server.create_node(request_body(name))


def _walk(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for child in value.values():
            yield from _walk(child)
    elif isinstance(value, list):
        for child in value:
            yield from _walk(child)


def normalized(value: Any) -> Any:
    """A copy without the fields that differ between any two servers."""
    result = copy.deepcopy(value)
    for node in _walk(result):
        meta = node.get("metadata")
        if isinstance(meta, dict):
            for key in _VOLATILE_META:
                meta.pop(key, None)
            if "deletionTimestamp" in meta:
                meta["deletionTimestamp"] = "<time>"
            if meta.get("generateName"):
                meta["name"] = "<generated>"
            meta.pop("continue", None)
        details = node.get("details")
        if isinstance(details, dict):
            details.pop("uid", None)
        if node.get("kind") == "Status" and isinstance(node.get("message"), str):
            node["message"] = re.sub(r"\d+", "N", node["message"])
    return result


def same_json(actual: Any, expected: Any) -> bool:
    """Equal after :func:`normalized`, key order included."""
    return json.dumps(normalized(actual)) == json.dumps(normalized(expected))


async def replay(
    session: aiohttp.ClientSession,
    server: FakeApiServer,
    name: str,
    *,
    body: Any = None,
    path: str | None = None,
) -> tuple[int, dict[str, str], Any]:
    """Send a recorded request (optionally with another body or path); parse the answer."""
    request = recorded(name)["request"]
    headers = dict(request["headers"])
    if request["auth"] == "admin static token":
        headers["Authorization"] = f"Bearer {TOKEN}"
    payload = request["body"] if body is None else body
    data = None
    if payload is not None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
    async with session.request(
        request["method"],
        server.url + (path or request["path_and_query"]),
        headers=headers,
        data=data,
    ) as response:
        raw = await response.read()
        parsed = json.loads(raw) if raw.strip() else None
        return response.status, dict(response.headers), parsed


def status_of(exc: client.ApiException) -> dict[str, Any]:
    """The ``Status`` body carried by a kubernetes-asyncio ``ApiException``."""
    assert exc.body is not None
    body: dict[str, Any] = json.loads(exc.body)
    return body


def watch_lines(raw: bytes) -> list[dict[str, Any]]:
    """Split a watch body into events, checking every event is one ``\\n``-ended line."""
    assert raw.endswith(b"\n") or raw == b""
    return [json.loads(line) for line in raw.split(b"\n") if line]


def admin_client(server: FakeApiServer) -> client.ApiClient:
    """kubernetes-asyncio's ApiClient against ``server`` with the admin token."""
    config = client.Configuration()
    config.host = server.url
    config.api_key = {"BearerToken": TOKEN}
    config.api_key_prefix = {"BearerToken": "Bearer"}
    return client.ApiClient(config)

"""What the ``gce`` plugin's tests share: Node UIDs, the options of a cluster in the fake's
project, anonymous credentials, and the routes routectl would ask for."""

from __future__ import annotations

from typing import Any

from google.auth.credentials import AnonymousCredentials
from routectl_gce.testing import FakeCompute

from routectl.model import Route

UID_A = "0b6a4a44-9f0e-4e1c-8a47-6f1c2d3e4f50"
UID_B = "5d2c7a10-1b2c-4d3e-9f40-a1b2c3d4e5f6"
ROUTES = "/global/routes"


def credentials() -> Any:
    """Anonymous credentials: the fake API asks for none."""
    return AnonymousCredentials()  # type: ignore[no-untyped-call]


def options(fake: FakeCompute, **extra: str) -> dict[str, str]:
    """The options of a cluster in the fake's project and network (and ``extra``)."""
    return {
        "project-id": fake.project,
        "network-name": "default",
        "api-endpoint": fake.url,
        **extra,
    }


def route(node: str, cidr: str) -> Route:
    """The route routectl would ask for."""
    return Route(target_node=node, destination_cidr=cidr)

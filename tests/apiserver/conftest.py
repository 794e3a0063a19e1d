"""Fixtures for the fake API server's own tests: plain HTTP and kubernetes-asyncio clients."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from kubernetes_asyncio import client

from routectl_sim.apiserver import FakeApiServer
from tests.apiserver.harness import admin_client


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    """A plain HTTP client, for wire-level checks of the fake API server."""
    async with aiohttp.ClientSession() as http:
        yield http


@pytest.fixture
async def core(server: FakeApiServer) -> AsyncIterator[client.CoreV1Api]:
    """kubernetes-asyncio's CoreV1Api against the module's ``server`` (admin token)."""
    async with admin_client(server) as api:
        yield client.CoreV1Api(api)

"""The elector opens the write fence while it holds the Lease, and shuts it when it stops."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from routectl.cloud.fence import Fence
from routectl.errors import LeadershipLostError, WriteFencedError
from routectl.kube import KubeClient
from routectl.process.election import ElectionSettings, LeaderElector
from routectl_sim.apiserver import FakeApiServer
from tests.fakes import EPOCH_CLOCK

pytestmark = [pytest.mark.integration, pytest.mark.looptime]


async def test_fence_follows_the_lease(tmp_path: Path) -> None:
    """Closed before acquiring, open while renewing, shut on loss and on release."""
    async with FakeApiServer() as server:
        server.kubeconfig(tmp_path / "kubeconfig")
        kube = await KubeClient.connect(kubeconfig=str(tmp_path / "kubeconfig"))
        fence = Fence(open_=False)
        elector = LeaderElector(
            kube=kube,
            settings=ElectionSettings(namespace="kube-system", name="routectl", identity="a"),
            rng=random.Random(1),
            wall_clock=EPOCH_CLOCK,
            fence=fence,
        )
        try:
            with pytest.raises(WriteFencedError):
                fence.admit(timeout=5.0, what="create")
            await elector.acquire()
            assert 13.0 < fence.left() <= 15.0
            holding = asyncio.create_task(elector.hold())
            await asyncio.sleep(30)
            assert 11.0 < fence.left() <= 15.0  # renewed all along
            server.unavailable = True
            with pytest.raises(LeadershipLostError):
                await holding
            with pytest.raises(WriteFencedError):
                fence.admit(timeout=5.0, what="create")
            server.unavailable = False
            await elector.acquire()
            assert fence.left() > 10.0
            await elector.release()
            with pytest.raises(WriteFencedError):
                fence.admit(timeout=5.0, what="create")
        finally:
            await kube.aclose()

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


async def test_a_new_leader_learns_when_its_predecessor_can_last_have_spent(
    tmp_path: Path,
) -> None:
    """The first holder had no predecessor; one taking over a dead holder's Lease learns
    that holder stopped at most a lease duration after its last renewal was seen; one
    taking a released Lease learns the holder stopped before the release was seen."""
    async with FakeApiServer() as server:
        server.kubeconfig(tmp_path / "kubeconfig")
        kube = await KubeClient.connect(kubeconfig=str(tmp_path / "kubeconfig"))
        loop = asyncio.get_running_loop()

        def elector(identity: str) -> LeaderElector:
            return LeaderElector(
                kube=kube,
                settings=ElectionSettings(
                    namespace="kube-system", name="routectl", identity=identity
                ),
                rng=random.Random(1),
                wall_clock=EPOCH_CLOCK,
                fence=Fence(open_=False),
            )

        try:
            a, b, c = elector("a"), elector("b"), elector("c")
            await a.acquire()
            assert a.quiet_since is None  # created the Lease: nobody led before
            holding = asyncio.create_task(a.hold())
            await asyncio.sleep(5)
            holding.cancel()  # "a" dies without a word
            died = loop.time()
            await b.acquire()  # waits out a's lease
            assert b.quiet_since is not None
            assert died - 2.0 <= b.quiet_since - 15.0 <= died  # a's last renewal was seen
            assert b.quiet_since <= loop.time()
            await b.release()
            released = loop.time()
            await asyncio.sleep(20)
            await c.acquire()
            assert c.quiet_since is not None
            # c saw the released record only now: it cannot know how long ago that was
            # (the holder's clock is not ours), so it counts from now.
            assert released < loop.time() - 0.5 <= c.quiet_since <= loop.time()
        finally:
            await kube.aclose()


async def test_a_leader_whose_lease_another_took_says_who_holds_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The Lease edited to another holder: one WARNING names the holder, and the loss at
    the renew deadline says it too, not that the process was paused."""
    async with FakeApiServer() as server:
        server.kubeconfig(tmp_path / "kubeconfig")
        kube = await KubeClient.connect(kubeconfig=str(tmp_path / "kubeconfig"))
        elector = LeaderElector(
            kube=kube,
            settings=ElectionSettings(namespace="kube-system", name="routectl", identity="a"),
            rng=random.Random(1),
            wall_clock=EPOCH_CLOCK,
            fence=Fence(open_=False),
        )
        try:
            await elector.acquire()
            holding = asyncio.create_task(elector.hold())
            await asyncio.sleep(5)
            lease = await kube.get_lease("kube-system", "routectl")
            assert lease is not None
            spec = lease["spec"] | {"holderIdentity": "thief", "leaseDurationSeconds": 60}
            await kube.replace_lease("kube-system", lease | {"spec": spec})
            with pytest.raises(LeadershipLostError, match="held by thief"):
                await holding
        finally:
            await kube.aclose()
    said = [r.getMessage() for r in caplog.records if "is held by thief" in r.getMessage()]
    assert len(said) == 1, said
    assert not [r for r in caplog.records if "paused or starved" in r.getMessage()]

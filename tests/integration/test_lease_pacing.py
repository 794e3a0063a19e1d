"""The leader election is never starved by ``--kube-api-qps``: it has a client and a bucket
of its own, sized so an attempt never waits for a token; and a candidate whose own Lease
requests fail says so once at WARNING, with the cause, then at DEBUG."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import random
from collections.abc import AsyncIterator

import pytest

from routectl.cloud.fence import Fence
from routectl.errors import LeadershipLostError
from routectl.kube import KubeClient, Pacing
from routectl.process.election import ElectionSettings, LeaderElector, election_pacing
from tests.integration.conftest import Cluster

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

SETTINGS = ElectionSettings(namespace="kube-system", name="routectl", identity="a")


def elector(kube: KubeClient, settings: ElectionSettings = SETTINGS) -> LeaderElector:
    """A candidate on ``kube`` with the default client-go timings."""
    return LeaderElector(
        kube=kube,
        settings=settings,
        rng=random.Random(1),
        wall_clock=lambda: datetime.datetime.now(datetime.UTC),
        fence=Fence(open_=False),
    )


@contextlib.asynccontextmanager
async def client(cluster: Cluster, pacing: Pacing) -> AsyncIterator[KubeClient]:
    """A client of the fake API server, paced as asked."""
    kube = await KubeClient.connect(kubeconfig=str(cluster.kubeconfig), pacing=pacing)
    try:
        yield kube
    finally:
        await kube.aclose()


@pytest.mark.parametrize(
    ("qps", "burst", "settings"),
    [
        (0.5, 1, SETTINGS),
        (
            1.0,
            1,
            ElectionSettings(
                namespace="kube-system",
                name="routectl",
                identity="a",
                lease_duration=4.0,
                renew_deadline=3.0,
                retry_period=0.5,
            ),
        ),
    ],
)
async def test_a_low_kube_api_qps_never_starves_the_election(
    cluster: Cluster, qps: float, burst: int, settings: ElectionSettings
) -> None:
    """With the main client's bucket busy at the red team's values, a candidate on the
    election's own client acquires on its first attempt and renews for minutes."""
    main_pacing = Pacing(qps=qps, burst=burst)
    async with (
        client(cluster, main_pacing) as main,
        client(cluster, election_pacing(settings.retry_period)) as own,
    ):
        busy = [asyncio.create_task(main.list_nodes()) for _ in range(20)]
        candidate = elector(own, settings)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await candidate.acquire()
        assert loop.time() - started < settings.retry_period  # the first attempt won
        holding = asyncio.create_task(candidate.hold())
        await asyncio.sleep(120)
        assert not holding.done(), holding
        holding.cancel()
        await asyncio.gather(holding, *busy, return_exceptions=True)


async def test_one_attempt_never_waits_for_a_token() -> None:
    """A whole attempt (a refused renewal, a GET and a PUT) fits the burst, and the bucket
    is full again one retry period later."""
    for retry_period in (0.5, 2.0, 10.0):
        pacing = election_pacing(retry_period)
        assert pacing.burst >= 3
        assert pacing.qps * retry_period >= pacing.burst


async def test_a_candidate_whose_requests_time_out_says_so_once(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """No answer to its Lease requests: one WARNING naming the cause and that it cannot
    lead, then DEBUG; once answers come back it leads, and a new failure is said again."""
    caplog.set_level(logging.DEBUG, logger="routectl.lease")
    async with client(cluster, election_pacing(SETTINGS.retry_period)) as own:
        candidate = elector(own)
        cluster.server.hang = True
        acquiring = asyncio.create_task(candidate.acquire())
        await asyncio.sleep(30)
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        repeats = [r for r in caplog.records if r.levelno == logging.DEBUG]
        assert len(warnings) == 1, warnings
        assert "no answer from the API server within 2s" in warnings[0]
        assert "this candidate cannot lead" in warnings[0]
        assert len(repeats) >= 5
        cluster.server.hang = False
        await asyncio.wait_for(acquiring, 30)
        assert candidate.is_leader
        cluster.server.hang = True
        with pytest.raises(LeadershipLostError):
            await candidate.hold()
        cluster.server.hang = False
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert "the leader cannot renew" in warnings[1]


async def test_waiting_for_another_holder_is_not_a_failure(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A standby kept out by a valid holder logs nothing at WARNING."""
    caplog.set_level(logging.DEBUG, logger="routectl.lease")
    async with client(cluster, election_pacing(SETTINGS.retry_period)) as own:
        first = elector(own)
        await first.acquire()
        holding = asyncio.create_task(first.hold())
        second = elector(
            own, ElectionSettings(namespace="kube-system", name="routectl", identity="b")
        )
        standby = asyncio.create_task(second.acquire())
        await asyncio.sleep(60)
        assert not standby.done()
        for task in (holding, standby):
            task.cancel()
        await asyncio.gather(holding, standby, return_exceptions=True)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]

"""``--kube-api-qps``/``--kube-api-burst`` really limit the requests the API server receives,
and every request is reported by method and code (client-go's ``rest_client_*``)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from routectl.errors import KubeError
from routectl.kube import KubeClient, Pacing
from tests.integration.conftest import Cluster

pytestmark = [pytest.mark.integration, pytest.mark.looptime]


class Recorder:
    """A RequestObserver that keeps every record."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.waits: list[float] = []

    def api_request(self, *, method: str, host: str, code: str, seconds: float) -> None:
        self.requests.append((method, code))

    def api_rate_limited(self, *, method: str, host: str, seconds: float) -> None:
        self.waits.append(seconds)


async def test_requests_never_exceed_burst_plus_qps_times_the_window(cluster: Cluster) -> None:
    """Twenty LISTs at qps 2, burst 3: at any moment, the server has seen at most
    3 + 2 x (virtual seconds since the first)."""
    observer = Recorder()
    kube = await KubeClient.connect(
        kubeconfig=str(cluster.kubeconfig), pacing=Pacing(qps=2.0, burst=3), observer=observer
    )
    loop = asyncio.get_running_loop()
    arrivals: list[float] = []
    start = loop.time()
    before = len(cluster.server.requests)

    async def one() -> None:
        await kube.list_nodes()
        arrivals.append(loop.time() - start)

    try:
        await asyncio.gather(*(one() for _ in range(20)))
    finally:
        await kube.aclose()
    assert len(cluster.server.requests) - before == 20
    for count, at in enumerate(sorted(arrivals), start=1):
        assert count <= 3 + 2 * at + 1e-6, (count, at)
    assert max(arrivals) >= (20 - 3) / 2 - 0.01  # really held back, on the virtual clock
    assert observer.requests == [("GET", "200")] * 20
    assert sum(1 for w in observer.waits if w > 0) >= 17


async def test_one_client_has_one_bucket_whatever_the_resource(cluster: Cluster) -> None:
    """Lease requests (node IPAM's claims) queue behind Node requests on the same client:
    only the leader election has a bucket of its own, on a client of its own (see
    ``tests/integration/test_lease_pacing.py``)."""
    kube = await KubeClient.connect(
        kubeconfig=str(cluster.kubeconfig), pacing=Pacing(qps=1.0, burst=1)
    )
    loop = asyncio.get_running_loop()
    try:
        lists = [asyncio.create_task(kube.list_nodes()) for _ in range(3)]
        await asyncio.sleep(0)
        start = loop.time()
        await kube.get_lease("kube-system", "routectl")
        lease_took = loop.time() - start
        await asyncio.gather(*lists)
    finally:
        await kube.aclose()
    assert lease_took >= 3.0 - 1e-6


async def test_failed_requests_are_reported_with_their_code(cluster: Cluster) -> None:
    """A 503 is counted as code 503; an unreachable server as <error>."""
    observer = Recorder()
    kube = await KubeClient.connect(kubeconfig=str(cluster.kubeconfig), observer=observer)
    cluster.server.unavailable = True
    try:
        with contextlib.suppress(KubeError):
            await kube.patch_node_status("n1", {"status": {}})
    finally:
        cluster.server.unavailable = False
        await kube.aclose()
    assert observer.requests == [("PATCH", "503")]

"""What the plugins' scale-up benchmarks share: routectl's real service against the fake API
server, built as ``routectl run`` builds it.

:func:`service_running` writes a kubeconfig for the fake API server, parses the benchmark's
flags after ``--kubeconfig``, builds the service (the plugin loaded by name, or one the
benchmark builds over the same metrics and sources), starts it and gives its informer a
second for the first, empty, sync; on leaving it stops the service, then closes the
provider and the Kubernetes client, as the CLI does. :func:`until` polls the fake cloud's
state until a condition holds. Times are the benchmark's to take: nothing here measures.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

from routectl.cli.flags import parse_run_flags
from routectl.config import Settings
from routectl.kube import KubeClient
from routectl.observe.metrics import Metrics
from routectl.process.service import Service
from routectl.process.wiring import Plugin, Sources, build_service, load_provider
from routectl_sim.apiserver import FakeApiServer

__all__ = ["MakePlugin", "service_running", "until"]

MakePlugin = Callable[[Settings, Metrics, Sources], Plugin]
"""Builds the plugin the service runs (default: the one ``--provider`` names)."""
SETTLE_SECONDS = 1.0
"""Time for the informer's first list and the first (empty) sync, before Nodes come."""


def _load(settings: Settings, metrics: Metrics, sources: Sources) -> Plugin:
    return load_provider(settings, metrics=metrics, sources=sources)


@contextlib.asynccontextmanager
async def service_running(
    api: FakeApiServer,
    flags: Sequence[str],
    *,
    plugin: MakePlugin = _load,
    settings_of: Callable[[Settings], Settings] | None = None,
) -> AsyncIterator[Service]:
    """routectl running with ``flags`` against ``api``, until the block is left.

    ``settings_of`` may rework the parsed settings (a ``--cloud-config`` read as the CLI
    reads it).
    """
    with tempfile.TemporaryDirectory() as scratch:
        kubeconfig = Path(scratch) / "kubeconfig"
        api.kubeconfig(kubeconfig)
        settings = parse_run_flags([f"--kubeconfig={kubeconfig}", *flags])
        if settings_of is not None:
            settings = settings_of(settings)
        metrics, sources = Metrics.create(), Sources.system()
        kube = await KubeClient.connect(kubeconfig=str(kubeconfig))
        try:
            made = plugin(settings, metrics, sources)
            try:
                service = build_service(
                    settings,
                    kube=kube,
                    provider=made,
                    metrics=metrics,
                    identity="bench",
                    sources=sources,
                )
                task = asyncio.create_task(service.run())
                try:
                    await asyncio.sleep(SETTLE_SECONDS)
                    yield service
                finally:
                    service.stopping.set()
                    await task
            finally:
                await made.provider.aclose()
        finally:
            await kube.aclose()


async def until(done: Callable[[], bool], *, every: float = 0.05) -> None:
    """Return once ``done()`` holds, asking every ``every`` seconds."""
    while not done():  # noqa: ASYNC110 -- polling a fake's state, which has no event to wait on
        await asyncio.sleep(every)

"""The chaos soak: churn plus faults on both sides, then a quiet period to converge.

Until ``duration - quiet``, a fault is injected every one to four simulated minutes:
on the Kubernetes side dropped and expired watches, 5xx answers, slow (hanging) answers,
an outage of minutes; on the cloud side 5xx, throttling with retry-after, timeouts, calls
that time out although they succeeded, a quota hit for two minutes; and the leader
replica is killed (no lease release) so another must take over, also right after a burst
of Nodes joined at once (:func:`burst_failover`: the successor must not spend a second
burst on top of the one its predecessor spent). Nodes are replaced all along. Listings
lag a few seconds behind writes for the whole run (eventual consistency).
The quiet period (one backoff cap plus one resync, and a margin) lets the cloud converge.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from collections.abc import Awaitable, Callable

from routectl.errors import ProviderError, ProviderThrottledError
from routectl.testing import Fault
from routectl_sim.pool import Pool
from routectl_sim.workload import MAX_SLOTS, Sim, join

Injector = Callable[[Sim, Pool], Awaitable[str]]


async def _watch_drop(sim: Sim, pool: Pool) -> str:
    sim.server.drop_watches()
    return "watch connections cut"


async def _watch_expire(sim: Sim, pool: Pool) -> str:
    sim.server.expire_history()
    sim.server.end_watches()
    return "watch resourceVersion expired"


async def _api_errors(sim: Sim, pool: Pool) -> str:
    times = sim.rng.randint(1, 6)
    sim.server.fail_next(
        method=sim.rng.choice(["GET", "PATCH", "PUT"]), path_regex=".*", status=500, times=times
    )
    return f"{times} API 5xx"


async def _api_slow(sim: Sim, pool: Pool) -> str:
    sim.server.hang = True
    await asyncio.sleep(sim.rng.uniform(5.0, 25.0))
    sim.server.hang = False
    return "API server hung"


async def _api_outage(sim: Sim, pool: Pool) -> str:
    sim.server.unavailable = True
    await asyncio.sleep(sim.rng.uniform(60.0, 240.0))
    sim.server.unavailable = False
    return "API server outage"


def _cloud_fault(make: Callable[[Sim], Fault], name: str) -> Injector:
    async def inject(sim: Sim, pool: Pool) -> str:
        operation = sim.rng.choice(["list", "create", "delete"])
        sim.cloud.fail_next(operation, make(sim), times=sim.rng.randint(1, 4))
        return f"cloud {name} on {operation}"

    return inject


async def _cloud_quota(sim: Sim, pool: Pool) -> str:
    before = sim.cloud.settings
    sim.cloud.settings = dataclasses.replace(
        before, route_quota=len(sim.cloud.routes("kubernetes"))
    )
    await asyncio.sleep(120.0)
    sim.cloud.settings = before
    return "cloud route quota hit"


async def _failover(sim: Sim, pool: Pool) -> str:
    await pool.kill_leader()
    return "leader killed"


async def burst_failover(sim: Sim, pool: Pool) -> str:
    """Twice the cloud burst of Nodes join at once (pod CIDRs set), and while their creates
    go out the leader is restarted (it finishes, hands the Lease back, and the standby takes
    over at once) or killed (the standby waits the Lease out): either way, the successor
    must not spend a burst on top of the one its predecessor just spent."""
    start = max(sim.names.values(), default=-1) + 1
    slots = range(start, min(start + 2 * pool.settings.cloud_burst, MAX_SLOTS))
    for slot in slots:
        name = f"node-{slot:05d}-b"
        sim.register(slot, name)
        sim.assign(name)
    await asyncio.sleep(sim.rng.uniform(0.2, 2.0))
    if sim.rng.random() < 0.5:  # noqa: PLR2004 -- a fair coin
        await pool.kill_leader()
        return f"{len(slots)} Nodes joined at once, leader killed"
    await pool.restart_leader()
    return f"{len(slots)} Nodes joined at once, leader restarted"


FAULTS: tuple[Injector, ...] = (
    _watch_drop,
    _watch_expire,
    _api_errors,
    _api_slow,
    _api_outage,
    _cloud_fault(lambda sim: Fault(error=ProviderError("503 service unavailable")), "5xx"),
    _cloud_fault(
        lambda sim: Fault(
            error=ProviderThrottledError("throttled", retry_after=sim.rng.uniform(5, 30))
        ),
        "throttling",
    ),
    _cloud_fault(lambda sim: Fault(hang=True), "timeout"),
    _cloud_fault(lambda sim: Fault(hang_after_success=True), "lost answer"),
    _cloud_quota,
    _failover,
    burst_failover,
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Injection:
    """One fault of the timeline: when, which, and the seed of its own parameters."""

    at: float
    fault: int
    seed: int

    def name(self) -> str:
        """The injector's name, for reports."""
        return FAULTS[self.fault].__name__.strip("_")


def timeline(seed: int, *, start: float, until: float) -> list[Injection]:
    """The whole fault timeline of a seed, drawn before the run: the same seed always gives
    the same faults at the same (simulated) times, whatever the controller does."""
    rng = random.Random(f"chaos-faults-{seed}")  # noqa: S311 -- a seeded simulation
    injections, at = [], start
    while (at := at + rng.uniform(60.0, 240.0)) < until:
        injections.append(
            Injection(at=at, fault=rng.randrange(len(FAULTS)), seed=rng.randrange(2**32))
        )
    return injections


async def _churn(sim: Sim, rng: random.Random) -> None:
    """Replace a random Node every 20-60 s (its CIDR freed and reused)."""
    generation = 0
    joining: set[asyncio.Task[None]] = set()
    while True:
        await asyncio.sleep(rng.uniform(20.0, 60.0))
        if not sim.names:
            continue
        generation += 1
        name = rng.choice(sorted(sim.names))
        slot = sim.names[name]
        sim.delete(name)
        task = asyncio.create_task(join(sim, slot, f"node-{slot:05d}-g{generation}", rng=rng))
        joining.add(task)
        task.add_done_callback(joining.discard)


async def run_chaos(
    sim: Sim,
    pool: Pool,
    *,
    seed: int,
    until: float,
    injected: list[str],
    only: Injector | None = None,
) -> None:
    """Churn and inject the seed's faults until loop time ``until``, noting each in
    ``injected`` as ``"<time>s <description>"``; ``only``: that fault at each time."""
    churn_rng = random.Random(f"chaos-churn-{seed}")  # noqa: S311 -- a seeded simulation
    churn = asyncio.create_task(_churn(sim, churn_rng))
    try:
        for injection in timeline(seed, start=sim.now(), until=until):
            await asyncio.sleep(max(0.0, injection.at - sim.now()))
            own = dataclasses.replace(sim, rng=random.Random(injection.seed))  # noqa: S311
            text = await (only or FAULTS[injection.fault])(own, pool)
            injected.append(f"{injection.at:.0f}s {text}")
            sim.recorder.faulted(sim.now())
    finally:
        churn.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await churn

"""Leader election on a coordination.k8s.io/v1 Lease, the way client-go does it, but safe.

The algorithm is client-go's ``tryAcquireOrRenew``: a Lease held by someone else is
respected until ``lease_duration`` has passed since *we observed* it change (our monotonic
loop clock, never the holder's timestamps); taking it over increments
``leaseTransitions``; every write is a PUT carrying the resourceVersion we read, so two
candidates cannot both win. Times are MicroTime with exactly six fractional digits.

Unlike kubernetes-asyncio's shipped elector, every attempt is bounded by a timeout, any
failure counts as a failed renewal, and :meth:`LeaderElector.hold` raises
:class:`LeadershipLostError` as soon as ``renew_deadline`` passes without a successful
renewal, which is before any other candidate may take over (``renew_deadline <
lease_duration``). :meth:`release` hands the Lease back on a graceful shutdown.

Each successful acquire or renewal grants the :class:`~routectl.cloud.fence.Fence` until the
attempt's start plus ``lease_duration``; losing or releasing the Lease revokes it first, so
no write starts once another candidate may hold the Lease.

The elector's requests must never wait behind the rest of routectl's: like client-go's
leader-election client, it gets an API client of its own, paced by :func:`election_pacing`
(enough for one attempt every retry period, whatever ``--kube-api-qps`` says), so an
attempt's time limit is never spent waiting for a token.

A candidate whose own requests fail (403, no answer in time, 5xx) says so at WARNING once
per kind of failure, with the cause, and at DEBUG while it repeats; an attempt that gets an
answer (taken, or held by another) ends that streak. Waiting for another holder is silent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import random
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from routectl.cloud.fence import Fence
from routectl.config.syntax import format_duration
from routectl.errors import KubeError, LeadershipLostError
from routectl.kube import KubeClient, Pacing, format_micro_time

MIN_ATTEMPT = 0.01
"""Seconds below which an attempt cannot be said to have waited for an answer."""
logger = logging.getLogger("routectl.lease")

ATTEMPT_REQUESTS = 3
"""The most requests one attempt sends: a renewal refused (409), then a GET and a PUT."""


def election_pacing(retry_period: float) -> Pacing:
    """The election client's own bucket: one whole attempt at once, refilled within a retry
    period. Attempts start at least a retry period apart, so none ever waits for a token."""
    return Pacing(qps=ATTEMPT_REQUESTS / retry_period, burst=ATTEMPT_REQUESTS)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ElectionSettings:
    """client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retry period."""

    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class LeaderElector:
    """Acquires, renews and releases one Lease for one identity."""

    def __init__(
        self,
        *,
        kube: KubeClient,
        settings: ElectionSettings,
        rng: random.Random,
        wall_clock: Callable[[], datetime.datetime],
        fence: Fence,
    ) -> None:
        self.kube = kube
        self.settings = settings
        self.fence = fence
        self.lease_seconds = max(1, int(settings.lease_duration))
        """What the Lease says (whole seconds, truncated as client-go does)."""
        self.is_leader = False
        self.quiet_since: float | None = None
        """Set on acquiring: the loop time after which no predecessor can have spent the
        cloud's budget (None: there was none); see :mod:`routectl.cloud.budget`."""
        self._rng = rng
        self._now = wall_clock
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._lease: dict[str, Any] | None = None
        self._last_complaint: tuple[str, ...] = ()
        self._taken_by = ""
        """Another holder found on the Lease while this replica led (said once)."""

    @property
    def _lease_name(self) -> str:
        """``namespace/name``: the ``lease`` field of its log lines."""
        return f"{self.settings.namespace}/{self.settings.name}"

    def _loop_time(self) -> float:
        return asyncio.get_running_loop().time()

    async def acquire(self) -> None:
        """Try every retry period (jittered) until this identity holds the Lease."""
        while not await self._attempt():  # noqa: ASYNC110 -- a retry loop, not a wait for a flag
            await asyncio.sleep(self.settings.retry_period * self._rng.uniform(1.0, 1.2))
        self.is_leader = True
        logger.info(
            "Acquired lease %s/%s as %s",
            self.settings.namespace,
            self.settings.name,
            self.settings.identity,
            extra={"lease": self._lease_name},
        )

    async def hold(self) -> None:
        """Renew every retry period; raise LeadershipLostError past the renew deadline."""
        last_success = self._loop_time()
        while True:
            await asyncio.sleep(self.settings.retry_period)
            deadline = last_success + self.settings.renew_deadline
            if await self._attempt(deadline=deadline):
                last_success = self._loop_time()
            elif self._loop_time() >= deadline:
                self.is_leader = False
                self.fence.revoke()
                held = f" (it is held by {self._taken_by})" if self._taken_by else ""
                raise LeadershipLostError(
                    f"failed to renew lease {self.settings.namespace}/{self.settings.name} "
                    f"within {self.settings.renew_deadline:g}s{held}"
                )

    async def release(self) -> None:
        """Give the Lease up (holder cleared, 1 s duration), if we still hold it and no cloud
        write was cut off lately (then it is left to expire)."""
        self.fence.revoke()  # first: no write may start once we hand the Lease back
        if not self.is_leader:
            return
        self.is_leader = False
        if self.fence.in_doubt(within=self.lease_seconds):
            logger.warning(
                "Not releasing lease %s/%s: a cloud write was cut off without an answer and "
                "the cloud may still carry it out; the Lease expires within %gs instead, so "
                "the next leader starts after it",
                self.settings.namespace,
                self.settings.name,
                self.lease_seconds,
                extra={"lease": self._lease_name},
            )
            return
        try:
            async with asyncio.timeout(self.settings.renew_deadline):
                lease = await self.kube.get_lease(self.settings.namespace, self.settings.name)
                if lease is None or _spec(lease).get("holderIdentity") != self.settings.identity:
                    return
                now = format_micro_time(self._now())
                spec = _spec(lease) | {
                    "holderIdentity": "",
                    "leaseDurationSeconds": 1,
                    "acquireTime": now,
                    "renewTime": now,
                }
                await self.kube.replace_lease(self.settings.namespace, lease | {"spec": spec})
                logger.info(
                    "Released lease %s/%s",
                    self.settings.namespace,
                    self.settings.name,
                    extra={"lease": self._lease_name},
                )
        except (KubeError, TimeoutError) as exc:
            logger.warning(
                "Could not release the lease (it will expire): %s",
                exc,
                extra={"lease": self._lease_name},
            )

    async def _attempt(self, *, deadline: float | None = None) -> bool:
        """One bounded tryAcquireOrRenew; any failure is a False."""
        started = self._loop_time()
        budget = max(self.settings.retry_period if deadline is None else deadline - started, 0)
        try:
            async with asyncio.timeout(max(budget, 0.001)):
                acquired = await self._try_acquire_or_renew()
        except (KubeError, TimeoutError) as exc:
            self._complain(exc, budget=budget)
            return False
        self._last_complaint = ()  # an answer, whatever it said: the failure streak is over
        if acquired:
            # Nobody can have seen this renewal before we sent it: others wait at least
            # lease_duration from then before they may take over.
            self.fence.grant(started + self.lease_seconds)
        return acquired

    def _complain(self, exc: Exception, *, budget: float) -> None:
        """Log a failed attempt: at WARNING when its kind is new (RBAC, an outage, no answer
        in time), with the cause; at DEBUG while the same kind repeats."""
        if isinstance(exc, KubeError):
            kind: tuple[str, ...] = ("kube", str(exc.status), exc.reason)
            text = str(exc) or type(exc).__name__
        elif budget < MIN_ATTEMPT and self._taken_by:
            kind = ("taken", self._taken_by)
            text = f"the renew deadline has passed; the Lease is held by {self._taken_by}"
        elif budget < MIN_ATTEMPT:
            kind = ("late",)
            text = (
                "the renew deadline had passed before the attempt could start (was the "
                "process paused or starved?)"
            )
        else:
            kind = ("timeout",)
            text = f"no answer from the API server within {format_duration(budget)}"
        if kind == self._last_complaint:
            logger.debug("Lease attempt failed again: %s", text, extra={"lease": self._lease_name})
            return
        self._last_complaint = kind
        logger.warning(
            "Lease %s/%s: attempt failed: %s; %s until its own Lease requests succeed "
            "(retrying every %gs; repeats are logged at DEBUG)",
            self.settings.namespace,
            self.settings.name,
            text,
            "the leader cannot renew" if self.is_leader else "this candidate cannot lead",
            self.settings.retry_period,
            extra={"lease": self._lease_name},
        )

    async def _try_acquire_or_renew(self) -> bool:
        s = self.settings
        now = format_micro_time(self._now())
        if self.is_leader and self._lease is not None and await self._renew(now):
            return True
        lease = await self.kube.get_lease(s.namespace, s.name)
        if lease is None:
            return await self._create(now)
        spec = _spec(lease)
        self._note(spec)
        holder = spec.get("holderIdentity") or ""
        valid = self._observed_at + float(spec.get("leaseDurationSeconds") or 0) > self._loop_time()
        if holder and holder != s.identity and valid:
            if self.is_leader:
                self._taken(holder)
            return False
        if not self.is_leader:
            self.quiet_since = self._predecessor_gone(holder, spec)
        if holder != s.identity:
            spec = spec | {
                "acquireTime": now,
                "leaseTransitions": int(spec.get("leaseTransitions") or 0) + 1,
            }
        spec = spec | {
            "holderIdentity": s.identity,
            "leaseDurationSeconds": self.lease_seconds,
            "renewTime": now,
        }
        self._lease = await self.kube.replace_lease(s.namespace, lease | {"spec": spec})
        return True

    async def _renew(self, now: str) -> bool:
        """client-go's fast path: update the Lease we hold, with its resourceVersion."""
        assert self._lease is not None  # noqa: S101 -- checked by the caller
        try:
            self._lease = await self.kube.replace_lease(
                self.settings.namespace,
                self._lease | {"spec": _spec(self._lease) | {"renewTime": now}},
            )
        except KubeError:
            return False
        return True

    async def _create(self, now: str) -> bool:
        s = self.settings
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": s.name, "namespace": s.namespace},
            "spec": {
                "holderIdentity": s.identity,
                "leaseDurationSeconds": self.lease_seconds,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        self.quiet_since = None  # no Lease: no leader before us
        try:
            self._lease = await self.kube.create_lease(s.namespace, lease)
        except KubeError as exc:
            if exc.status == HTTPStatus.CONFLICT:  # another candidate created it first
                return False
            raise
        return True

    def _predecessor_gone(self, holder: str, spec: dict[str, Any]) -> float:
        """When the holder of the Lease we are taking can last have spent (loop time).

        A Lease handed back (no holder) was released after its holder stopped: it stopped
        before we saw that record. A holder that stopped renewing stops working within its
        renew deadline of its last renewal, which is before we saw it, and which is shorter
        than the lease duration; the one that is ourselves (a restart with the same
        identity) is taken as spending until now or later.
        """
        if not holder:
            return self._observed_at
        duration = float(spec.get("leaseDurationSeconds") or self.lease_seconds)
        gone = self._observed_at + duration
        if holder == self.settings.identity:
            gone = max(gone, self._loop_time())
        return gone

    def _taken(self, holder: str) -> None:
        """The leader found the Lease held by ``holder``: say so, once per holder."""
        if holder == self._taken_by:
            return
        self._taken_by = holder
        logger.warning(
            "Lease %s/%s is held by %s, not by this leader (%s): another controller took it "
            "(a second deployment with the same Lease name, or the Lease was edited); this "
            "leader exits when its renew deadline passes (%gs after its last renewal)",
            self.settings.namespace,
            self.settings.name,
            holder,
            self.settings.identity,
            self.settings.renew_deadline,
            extra={"lease": self._lease_name},
        )

    def _note(self, spec: dict[str, Any]) -> None:
        """Remember when the record last changed, by our own clock (client-go's rule)."""
        record = tuple(sorted((k, str(v)) for k, v in spec.items()))
        if record != self._observed:
            self._observed = record
            self._observed_at = self._loop_time()


def _spec(lease: dict[str, Any]) -> dict[str, Any]:
    spec = lease.get("spec")
    return dict(spec) if isinstance(spec, dict) else {}

"""Small fakes shared by unit tests: a recording Kubernetes writer, a gate with an open fence."""

from __future__ import annotations

import asyncio
import collections
import datetime
import random
from typing import Any

from routectl.cloud.budget import Budget
from routectl.cloud.fence import Fence
from routectl.cloud.gate import CloudGate
from routectl.cloud.policy import CallPolicy
from routectl.errors import KubeError
from routectl.provider import RouteProvider


class RecordingKube:
    """Records status patches and Events; ``fail`` makes writes fail with a KubeError."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.patched_at: dict[str, float] = {}
        """Node name -> loop time of its last status patch."""
        self.events: list[dict[str, Any]] = []
        """Every occurrence of an Event, in order (a repeat raises the stored one's count)."""
        self.stored: dict[tuple[str, str], dict[str, Any]] = {}
        """The Event objects as the API server would hold them, by namespace and name."""
        self.fail: dict[str, KubeError] = {}
        """Node name (or ``"event"``) -> the error its next writes raise."""
        self.calls: collections.Counter[str] = collections.Counter()

    async def patch_node_status(self, name: str, patch: dict[str, Any]) -> None:
        """Record (or fail) one NetworkUnavailable patch."""
        self.calls["patch"] += 1
        if name in self.fail:
            raise self.fail[name]
        self.patches.append((name, patch))
        self.patched_at[name] = asyncio.get_running_loop().time()

    async def create_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """Record (or fail) one Event, stored by name (a later one of the same name replaces it)."""
        self.calls["event"] += 1
        if "event" in self.fail:
            raise self.fail["event"]
        key = (event["metadata"].get("namespace", ""), event["metadata"].get("name", ""))
        self.stored[key] = event
        self.events.append(event)
        return event

    async def get_event(self, namespace: str, name: str) -> dict[str, Any]:
        """The Event as stored (404 if there is none)."""
        try:
            return self.stored[(namespace, name)]
        except KeyError:
            raise KubeError("events: not found", status=404) from None

    async def patch_event(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        """Raise an Event's count (or fail): recorded as one more occurrence."""
        self.calls["event"] += 1
        if "event" in self.fail:
            raise self.fail["event"]
        event = {**await self.get_event(namespace, name), **patch}
        self.stored[(namespace, name)] = event
        self.events.append(event)
        return event

    def conditions(self) -> dict[str, tuple[str, str]]:
        """Node name -> (status, reason) of the last patch written for it."""
        result = {}
        for name, patch in self.patches:
            (condition,) = patch["status"]["conditions"]
            result[name] = (condition["status"], condition["reason"])
        return result

    def reasons(self) -> list[str]:
        """The reasons of the recorded Events, in order."""
        return [event["reason"] for event in self.events]


def gated(
    provider: RouteProvider,
    policy: CallPolicy,
    *,
    fence: Fence | None = None,
    budget: Budget | None = None,
    max_pause: float = 120.0,
    seed: int = 1,
) -> CloudGate:
    """``provider`` behind a gate with ``policy``: an open fence and a budget of its own."""
    return CloudGate(
        provider,
        policy=policy,
        rng=random.Random(seed),
        budget=budget
        or Budget(qps=policy.qps, burst=policy.burst, max_pause=max_pause, wall_clock=EPOCH_CLOCK),
        fence=fence or Fence(open_=True),
        plugin_paces=budget is not None,
    )


def EPOCH_CLOCK() -> datetime.datetime:  # noqa: N802 -- a constant clock
    """A wall clock stopped at the Unix epoch."""
    return datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

"""Small fakes shared by unit tests: a Kubernetes writer that records what it is asked."""

from __future__ import annotations

import collections
from typing import Any

from routectl.errors import KubeError


class RecordingKube:
    """Records status patches and Events; ``fail`` makes writes fail with a KubeError."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.events: list[dict[str, Any]] = []
        self.fail: dict[str, KubeError] = {}
        """Node name (or ``"event"``) -> the error its next writes raise."""
        self.calls: collections.Counter[str] = collections.Counter()

    async def patch_node_status(self, name: str, patch: dict[str, Any]) -> None:
        """Record (or fail) one NetworkUnavailable patch."""
        self.calls["patch"] += 1
        if name in self.fail:
            raise self.fail[name]
        self.patches.append((name, patch))

    async def create_event(self, event: dict[str, Any]) -> None:
        """Record (or fail) one Event."""
        self.calls["event"] += 1
        if "event" in self.fail:
            raise self.fail["event"]
        self.events.append(event)

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

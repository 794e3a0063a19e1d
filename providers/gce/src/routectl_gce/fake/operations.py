"""The fake's global operations: an insert or delete answers an operation, which makes the
change when it ends.

``GET .../global/operations/{op}`` reports ``RUNNING`` then ``DONE``, ``POST .../wait``
returns it ``DONE`` (after ``waits_per_operation`` waits); an operation nobody follows ends
before the next routes read (GCE finishes its operations on its own). With
``operation_seconds``, an operation ends that long (loop time) after it began, and a
``wait`` is held until then (at most :data:`WAIT_LIMIT` seconds, as the API).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import itertools
from typing import Any

from aiohttp import web

from routectl_gce.fake.shapes import BASE, not_found, operation_failure

WAIT_LIMIT = 120.0
"""``globalOperations.wait`` returns after about two minutes even if not DONE (API docs)."""


@dataclasses.dataclass(slots=True)
class Operation:
    body: dict[str, Any]
    effect: Any  # Callable[[], dict | None]: makes the change, or returns the error body
    waits_left: int
    polls: int = 0
    due: float = 0.0


class OperationsApi:
    """Global operations' handlers, and the operations the routes' writes start."""

    project: str
    operations: dict[str, Operation]
    waits_per_operation: int
    operation_seconds: float
    _operation_errors: collections.deque[tuple[str, str, int]]
    _ids: itertools.count[int]

    def _operation(self, kind: str, route: str, effect: Any) -> dict[str, Any]:
        name = f"operation-{next(self._ids)}-fake"
        body: dict[str, Any] = {
            "kind": "compute#operation",
            "id": str(next(self._ids)),
            "name": name,
            "operationType": kind,
            "targetLink": f"{BASE}/projects/{self.project}/global/routes/{route}",
            "status": "PENDING",
            "progress": 0,
            "insertTime": "2026-12-01T00:00:00.000-08:00",
            "selfLink": f"{BASE}/projects/{self.project}/global/operations/{name}",
        }
        if self._operation_errors:
            code, message, status = self._operation_errors.popleft()
            error = operation_failure(code, message, status)
            op = Operation(body, lambda: error, self.waits_per_operation)
        else:
            op = Operation(body, effect, self.waits_per_operation)
        op.due = asyncio.get_running_loop().time() + self.operation_seconds
        self.operations[name] = op
        return dict(body)

    def _pending(self, route: str) -> bool:
        return any(
            op.body["status"] != "DONE"
            and op.body["targetLink"].endswith(f"/routes/{route}")
            and op.body["operationType"] == "insert"
            for op in self.operations.values()
        )

    def _finish(self, op: Operation) -> None:
        if op.body["status"] == "DONE":
            return
        failure = op.effect()
        op.body.update(status="DONE", progress=100, endTime="2026-12-01T00:00:01.000-08:00")
        if failure is not None:
            op.body.update(failure)

    def _finish_all(self) -> None:
        """Operations nobody follows end on their own before the next read (when due)."""
        now = asyncio.get_running_loop().time()
        for op in list(self.operations.values()):
            if not self.operation_seconds or op.due <= now:
                self._finish(op)

    async def _get_operation(self, request: web.Request) -> web.Response:
        op = self.operations.get(request.match_info["op"])
        if op is None:
            return not_found(self.project, "operations", request.match_info["op"])
        op.polls += 1
        if self.operation_seconds:
            if op.due <= asyncio.get_running_loop().time():
                self._finish(op)
            elif op.body["status"] == "PENDING":
                op.body.update(status="RUNNING", startTime="2026-12-01T00:00:00.500-08:00")
        elif op.polls > op.waits_left:
            self._finish(op)
        elif op.body["status"] == "PENDING":
            op.body.update(status="RUNNING", startTime="2026-12-01T00:00:00.500-08:00")
        return web.json_response(op.body)

    async def _wait_operation(self, request: web.Request) -> web.Response:
        op = self.operations.get(request.match_info["op"])
        if op is None:
            return not_found(self.project, "operations", request.match_info["op"])
        if self.operation_seconds:
            loop = asyncio.get_running_loop()
            await asyncio.sleep(min(max(op.due - loop.time(), 0.0), WAIT_LIMIT))
            if op.due <= loop.time():
                self._finish(op)
        elif op.waits_left > 1:
            op.waits_left -= 1
        else:
            self._finish(op)
        if op.body["status"] != "DONE":
            op.body.update(status="RUNNING", startTime="2026-12-01T00:00:00.500-08:00")
        return web.json_response(op.body)

"""Look-ups asked for at the same time become one request: :class:`Coalescer`.

When routectl creates many routes at once, each create needs the routes to its destination
and, for a new Node, its instance. Asked one by one that is a request per route; the
Compute API's filters take a regular expression, so one request can answer many.

Promises:

* a caller asking for a key that a batch already asks for (open or sent) waits for that
  batch's answer; a caller asking for another key while a batch is open joins it; else it
  opens a batch and sends its request; the batch closes when the request is about to go
  out (the fetch calls :meth:`Batch.close` after the budget let it go), and holds at most
  ``limit`` keys;
* every caller gets its own key's answer, or the batch's error;
* the request is sent by a task of the coalescer's own, so a caller cancelled while
  waiting (its call timed out) cancels neither the request nor the others' wait; a caller
  that asks again joins the batch still under way. Only reads are coalesced: a request
  that goes out after its first caller gave up changes nothing;
* when the last caller waiting for a batch is cancelled, the batch is dropped and its
  request cancelled (not sent, if it was still waiting for the budget): nobody is left to
  use the answer, and a caller that comes later opens a batch of its own instead of
  waiting for a stale one.
  :meth:`Coalescer.aclose` cancels the requests under way (their callers get a transient
  ``ProviderError``).

No I/O here: ``fetch`` does it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

from routectl.errors import ProviderError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclasses.dataclass(slots=True, eq=False)
class Batch(Generic[K, V]):
    """The keys of one request, and its answer once there."""

    keys: list[K]
    answer: asyncio.Future[dict[K, V]]
    open: bool = True
    waiting: int = 0
    """Callers waiting for the answer."""
    sender: asyncio.Task[None] | None = None

    def close(self) -> list[K]:
        """No more keys join: the request is about to be sent. The keys it asks for."""
        self.open = False
        return list(self.keys)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # a batch nobody else waited for: its error is the sender's


class Coalescer(Generic[K, V]):
    """Concurrent :meth:`get` calls share one ``fetch`` of all their keys."""

    def __init__(
        self, fetch: Callable[[Batch[K, V]], Awaitable[dict[K, V]]], *, limit: int
    ) -> None:
        self._fetch = fetch
        self._limit = limit
        self._open: Batch[K, V] | None = None
        self._asked: dict[K, Batch[K, V]] = {}
        """Each key some batch asks for, until that batch is answered."""
        self._sending: set[asyncio.Task[None]] = set()

    async def get(self, key: K) -> V | None:
        """``key``'s answer (None when the answer does not hold it)."""
        batch = self._asked.get(key) or self._open
        if batch is not None and (
            key in batch.keys or (batch.open and len(batch.keys) < self._limit)
        ):
            if key not in batch.keys:
                batch.keys.append(key)
                self._asked[key] = batch
            return await self._wait(batch, key)
        batch = Batch(keys=[key], answer=asyncio.get_running_loop().create_future())
        batch.answer.add_done_callback(_retrieve)
        self._open = batch
        self._asked[key] = batch
        batch.sender = asyncio.create_task(self._send(batch))
        self._sending.add(batch.sender)
        batch.sender.add_done_callback(self._sending.discard)
        return await self._wait(batch, key)

    async def _wait(self, batch: Batch[K, V], key: K) -> V | None:
        """``key``'s part of ``batch``'s answer; the last caller to give up drops it."""
        batch.waiting += 1
        try:
            answer = await asyncio.shield(batch.answer)
        except asyncio.CancelledError:
            batch.waiting -= 1
            if not batch.waiting and not batch.answer.done():
                self._drop(batch)
            raise
        batch.waiting -= 1
        return answer.get(key)

    def _drop(self, batch: Batch[K, V]) -> None:
        """Nobody waits for ``batch`` any more: forget it and cancel its request."""
        self._forget(batch)
        if batch.sender is not None:
            batch.sender.cancel()

    def _forget(self, batch: Batch[K, V]) -> None:
        """No caller joins ``batch`` from now on."""
        batch.open = False
        if self._open is batch:
            self._open = None
        for asked in batch.keys:
            if self._asked.get(asked) is batch:
                del self._asked[asked]

    async def _send(self, batch: Batch[K, V]) -> None:
        """Fetch ``batch``'s answer and hand it (or the error) to every caller."""
        try:
            answer = await self._fetch(batch)
        except asyncio.CancelledError:
            batch.answer.set_exception(ProviderError("a shared look-up was stopped; ask again"))
            raise
        except Exception as exc:  # noqa: BLE001 -- every caller gets it, whatever it is
            batch.answer.set_exception(exc)
        else:
            batch.answer.set_result(answer)
        finally:
            self._forget(batch)

    async def aclose(self) -> None:
        """Stop the requests under way."""
        tasks = list(self._sending)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

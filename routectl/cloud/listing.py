"""The cloud's routes as last listed, kept current with routectl's own writes.

* :meth:`ListingCache.get` lists afresh when asked to, when nothing was listed yet, or with
  ``max_age`` 0 (upstream's behaviour); otherwise it hands out the cached routes, so a burst
  of syncs costs one ListRoutes, even when they are older than ``max_age`` (then marked
  ``stale``): correctness does not hang on the listing's age, since a create that finds its
  route there already succeeds, and the caller lists again behind its writes.
* :meth:`ListingCache.prefetch` starts a listing before anyone asks (a new leader's, while
  its first Node list is still on the way); the next :meth:`ListingCache.get` takes it,
  fresh or not, instead of listing again, unless it started more than ``max_age`` ago; a
  failed one fails that ``get``.
* :meth:`ListingCache.remember` applies a sync's successful deletes and creates to the
  cache. A route routectl created is *synthetic* until the cloud lists it: the cloud's
  name for it is unknown, so a plan that wants to delete one lists afresh first
  (:meth:`ListingCache.must_relist`).
* ``owned`` counts the cached routes inside the cluster CIDRs (what the mass-delete guard
  compares with), kept current the same way; after a fresh listing it is counted when first
  asked for, or taken from the full plan made on that listing (:meth:`ListingCache.counted`),
  which counts the same routes with the same CIDRs: a large listing is not counted twice.
* :class:`~routectl.plan.scope.RouteIndex` finds a change's routes without scanning them all;
  a fresh listing equal to the cached one (none of routectl's own routes waiting to be
  listed) keeps the cached routes, their index and their count: relisting a table at rest
  costs a comparison, not an index.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Collection, Iterable, Sequence

from routectl.cidr import Clusters, Network
from routectl.model import Route
from routectl.plan.reconcile import Plan
from routectl.plan.scope import RouteIndex
from routectl.provider import RouteProvider


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Listing:
    """Routes to plan against: ``fresh`` when just listed, ``stale`` when older than the
    maximum age (used anyway: a fresh listing is due behind the sync's writes)."""

    routes: Sequence[Route]
    index: RouteIndex
    fresh: bool
    stale: bool = False


class ListingCache:
    """One provider's routes, listed at most once per ``max_age`` (0: every time)."""

    def __init__(
        self,
        *,
        provider: RouteProvider,
        cluster_cidrs: Sequence[Network],
        max_age: float,
        clock: Callable[[], float],
    ) -> None:
        self._provider = provider
        self._clusters = Clusters(cluster_cidrs)
        self._max_age = max_age
        self._clock = clock
        self._routes: list[Route] | None = None
        self._index = RouteIndex()
        self._listed_at = 0.0
        self._synthetic: set[Route] = set()
        self._early: asyncio.Task[Collection[Route]] | None = None
        self._early_at = 0.0
        self._owned: int | None = 0
        self.version = 0
        """Goes up whenever the cached routes change (a fresh listing unlike them, routectl's
        own writes, invalidation): equal versions, the same routes."""

    def prefetch(self) -> None:
        """Start listing now, for the next :meth:`get` (no-op if one is under way, or with
        ``max_age`` 0: every sync lists for itself then)."""
        if self._early is None and self._max_age > 0:
            self._early_at = self._clock()
            self._early = asyncio.create_task(self._list())
            self._early.add_done_callback(_retrieved)

    async def _list(self) -> Collection[Route]:
        return await self._provider.list_routes()

    async def get(self, *, fresh: bool) -> Listing:
        """The routes: listed now if ``fresh``, if never listed, or if ``max_age`` is 0;
        otherwise the cached ones, marked ``stale`` when older than ``max_age``. A
        prefetched listing is taken instead of listing again."""
        now = self._clock()
        if self._early is not None and now - self._early_at > self._max_age:
            self.cancel()  # started too long ago (the Node list took that long): list anew
        if self._early is not None or fresh or self._max_age <= 0 or self._routes is None:
            early, self._early = self._early, None
            listed_at = now if early is None else self._early_at
            routes = list(await (early if early is not None else self._list()))
            self._listed_at = listed_at
            if self._synthetic or routes != self._routes:
                self._routes, self._index = routes, RouteIndex(routes)
                self._synthetic.clear()
                self.version += 1
                self._owned = None  # counted when asked, or by the full plan on these routes
            # else: the same routes as the cached ones (none of ours in doubt): their index
            # and count stand (a cluster at rest relisted every period costs a comparison)
            return Listing(routes=list(self._routes), index=self._index, fresh=True)
        stale = now - self._listed_at > self._max_age
        return Listing(routes=list(self._routes), index=self._index, fresh=False, stale=stale)

    @property
    def owned(self) -> int:
        """How many cached routes lie inside the cluster CIDRs."""
        if self._owned is None:
            self._owned = sum(map(self._owns, self._routes or ()))
        return self._owned

    def counted(self, owned: int) -> None:
        """A full plan on the cached routes, as :meth:`get` last handed them out and with
        this cache's cluster CIDRs, counted ``owned`` of them inside: no need to count."""
        if self._owned is None:
            self._owned = owned

    def invalidate(self) -> None:
        """Forget the cached routes: the next :meth:`get` lists afresh."""
        self._routes = None
        self.version += 1

    def cancel(self) -> None:
        """Drop a prefetch under way (the leader stops)."""
        if self._early is not None:
            self._early.cancel()
            self._early = None

    def must_relist(self, plan: Plan) -> bool:
        """True if ``plan`` deletes a route whose cloud name is unknown (we made it)."""
        return not self._synthetic.isdisjoint(plan.deletes)

    def remember(self, *, deleted: Iterable[Route], created: Iterable[Route]) -> None:
        """Apply our own successful writes to the cached listing."""
        if self._routes is None:
            return
        before = self.version
        gone = {id(route) for route in deleted}
        if gone:
            kept = [r for r in self._routes if id(r) not in gone]
            for route in self._routes:
                if id(route) in gone:
                    self._index.remove(route)
                    if self._owned is not None:
                        self._owned -= self._owns(route)
            self._routes = kept
            self.version = before + 1
        for made in created:
            # Marked as carrying node addresses: should a later plan want to replace it,
            # the sync lists afresh first (it is synthetic), so the cloud's view decides.
            route = dataclasses.replace(made, enable_node_addresses=True)
            self._routes.append(route)
            self._index.add(route)
            self._synthetic.add(route)
            self.version = before + 1
            if self._owned is not None:
                self._owned += self._owns(route)

    def _owns(self, route: Route) -> bool:
        return self._clusters.hold_text(route.destination_cidr)  # is_responsible, made once


def _retrieved(task: asyncio.Task[Collection[Route]]) -> None:
    """Read a prefetch's failure, so an unused one is not reported as never retrieved."""
    if not task.cancelled():
        with contextlib.suppress(BaseException):
            task.exception()

"""A reference provider over :class:`SharedCloud`, and wrong ones the contract must catch.

:class:`GoodProvider` follows every rule of the guide. Each wrong provider changes one
behaviour (the first is the one issue 15 describes: it overwrites another Node's route on
create, deletes foreign routes with ours, and never reports a missing route), so that the
suite's own tests can check each fails the contract for its reason.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import inspect
from collections.abc import Awaitable, Collection, Sequence
from http import HTTPStatus
from typing import TypeVar

from routectl.cidr import canonical
from routectl.errors import (
    MalformedAnswerError,
    ProviderError,
    ProviderTerminalError,
    ProviderThrottledError,
    RouteAlreadyExistsError,
    RouteNotFoundError,
)
from routectl.model import Route
from routectl.provider import BatchResult, RequestBudget
from tests.contract.shared_cloud import CloudError, Entry, SharedCloud

T = TypeVar("T")


def mapped(exc: CloudError) -> ProviderError:
    """The error of routectl's tree for an answer of the shared cloud."""
    if exc.status == HTTPStatus.TOO_MANY_REQUESTS:
        return ProviderThrottledError(str(exc), retry_after=exc.retry_after or 1.0)
    if exc.status in {400, 403}:
        return ProviderTerminalError(str(exc))
    return ProviderError(str(exc))


class GoodProvider:
    """Routes marked with the cluster's name, in the shared table; every rule kept."""

    supports_batch = True
    supports_replace = True

    def __init__(self, *, cluster_name: str, cloud: SharedCloud, budget: RequestBudget) -> None:
        self.cluster = cluster_name
        self.cloud = cloud
        self.budget = budget

    # -- the contract ---------------------------------------------------------------------

    async def list_routes(self) -> Collection[Route]:
        """The cluster's entries, machines resolved to Nodes (gone: a blackhole)."""
        entries = await self.entries()
        machines = await self.call("machines", self.cloud.list_machines())
        return [self.as_route(e, machines) for e in entries if self.ours(e)]

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Add the entry; a taken destination is ours already, another Node's, or foreign."""
        self.refuse_unroutable(route)
        machine = await self.machine_of(route.target_node)
        entry = self.entry(route, machine, name_hint)
        try:
            await self.call("add", self.cloud.add(entry))
        except ProviderError as exc:
            if "409" not in str(exc):
                raise
            await self.explain_conflict(route, machine)

    async def delete_route(self, route: Route) -> None:
        """Remove our entry to the CIDR if it still leads where ``route`` says."""
        held = await self.held(route)
        await self.call("remove", self.cloud.remove(held.destination, held.machine))

    async def apply_routes(
        self, *, deletes: Sequence[Route], creates: Sequence[tuple[Route, str]]
    ) -> BatchResult:
        """Edit the table in memory, then write it once."""
        table = await self.entries()
        machines = await self.call("machines", self.cloud.list_machines())
        by_node = {node: m for m, node in machines.items()}
        failed: dict[int, ProviderError] = {}
        for route in deletes:
            table = [e for e in table if not self.matches(e, route, machines)]
        for index, (route, hint) in enumerate(creates):
            error = self.add_to(table, route, hint, by_node)
            if error is not None:
                failed[index] = error
        await self.call("write-table", self.cloud.write_table(table))
        return BatchResult(failed_creates=self.report(failed))

    async def replace_route(self, old: Route, new: Route, *, name_hint: str) -> None:
        """Repoint our entry if ``old`` still holds the CIDR."""
        held = await self.held(old)
        machine = await self.machine_of(new.target_node)
        await self.call("remove", self.cloud.remove(held.destination, held.machine))
        await self.call("add", self.cloud.add(self.entry(new, machine, name_hint)))

    async def aclose(self) -> None:
        """Nothing to release."""

    # -- pieces the wrong providers change ------------------------------------------------

    async def call(self, operation: str, request: Awaitable[T]) -> T:
        """Spend the budget, then send one request; its errors leave mapped."""
        try:
            await self.budget.spend(operation)
        except BaseException:  # cancelled while waiting: the request is never sent
            if inspect.iscoroutine(request):
                request.close()
            raise
        try:
            return await request
        except CloudError as exc:
            raise mapped(exc) from exc

    async def entries(self) -> list[Entry]:
        """Every entry, page by page."""
        found: list[Entry] = []
        number, more = 0, True
        while more:
            page, more = await self.page(number)
            found.extend(page)
            number += 1
        return found

    async def page(self, number: int) -> tuple[list[Entry], bool]:
        """One page of entries, and whether more follow; through the budget."""
        entries, more = await self.call("page", self.cloud.page(number))
        return self.checked(entries), more

    def checked(self, entries: list[Entry]) -> list[Entry]:
        """The entries, each field of the type the cloud documents, or MalformedAnswerError."""
        for index, entry in enumerate(entries):
            for field in ("destination", "machine", "owner", "name"):
                value: object = getattr(entry, field, None)
                if not isinstance(value, str):
                    raise MalformedAnswerError(
                        f"page entry {index}: {field} is {value!r:.40}, expected a string",
                        field=field,
                    )
        return entries

    def ours(self, entry: Entry) -> bool:
        """Whether the entry is marked as this cluster's."""
        return entry.owner == self.cluster

    def as_route(self, entry: Entry, machines: dict[str, str]) -> Route:
        """The entry as routectl sees it."""
        node = machines.get(entry.machine, "")
        return Route(
            target_node=node,
            destination_cidr=entry.destination,
            name=entry.name,
            blackhole=not node,
        )

    def refuse_unroutable(self, route: Route) -> None:
        """IPv6 is refused before any request where the cloud does not route it."""
        if self.cloud.ipv4_only and ":" in route.destination_cidr:
            raise ProviderTerminalError("this cloud does not route IPv6")

    async def machine_of(self, node: str) -> str:
        """The machine of ``node`` (a transient error until it exists)."""
        machines = await self.call("machines", self.cloud.list_machines())
        for machine, name in machines.items():
            if name == node:
                return machine
        raise ProviderError(f"no machine for node {node}")

    def entry(self, route: Route, machine: str, hint: str) -> Entry:
        """A new entry of this cluster, named per CIDR."""
        key = canonical(route.destination_cidr)
        digest = hashlib.sha256(key.encode()).hexdigest()[:8]
        return Entry(destination=key, machine=machine, owner=self.cluster, name=f"{hint}-{digest}")

    async def explain_conflict(self, route: Route, machine: str) -> None:
        """A taken destination: ours to the same machine is fine; another Node's raises
        RouteAlreadyExistsError naming it; a foreign one is refused."""
        key = canonical(route.destination_cidr)
        entries = await self.entries()
        machines = await self.call("machines", self.cloud.list_machines())
        for entry in entries:
            if entry.destination != key:
                continue
            if not self.ours(entry):
                self.refuse_foreign(entry)
            if entry.machine == machine:
                return
            raise RouteAlreadyExistsError(
                f"{key} is routed to {entry.machine}", holder=self.as_route(entry, machines)
            )
        raise ProviderError(f"{key} was taken, then freed while this create ran")

    def refuse_foreign(self, entry: Entry) -> None:
        """A foreign route holds the destination: refused, naming its owner."""
        raise ProviderTerminalError(
            f"{entry.destination} is routed by {entry.owner or 'an operator'}"
        )

    async def held(self, route: Route) -> Entry:
        """Our entry that ``route`` names, or RouteNotFoundError."""
        machines = await self.call("machines", self.cloud.list_machines())
        for entry in await self.entries():
            if self.matches(entry, route, machines):
                return entry
        raise RouteNotFoundError(f"no route to {route.destination_cidr} via {route.target_node}")

    def matches(self, entry: Entry, route: Route, machines: dict[str, str]) -> bool:
        """Whether ``entry`` is the route ``route`` names (ours, same CIDR, same target)."""
        return (
            self.ours(entry)
            and entry.destination == canonical(route.destination_cidr)
            and machines.get(entry.machine, "") == route.target_node
        )

    def add_to(
        self, table: list[Entry], route: Route, hint: str, by_node: dict[str, str]
    ) -> ProviderError | None:
        """Add a create to the in-memory table; the error that stops it, if any."""
        key = canonical(route.destination_cidr)
        machine = by_node.get(route.target_node)
        if machine is None:
            return ProviderError(f"no machine for node {route.target_node}")
        held = next((e for e in table if e.destination == key), None)
        if held is None:
            table.append(self.entry(route, machine, hint))
            return None
        if self.ours(held) and held.machine == machine:
            return None
        return RouteAlreadyExistsError(f"{key} is routed elsewhere")

    def report(self, failed: dict[int, ProviderError]) -> dict[int, ProviderError]:
        """The failures a batch reports."""
        return failed


class IssueProvider(GoodProvider):
    """Issue 15's provider: overwrites on create, deletes foreign routes, hides misses."""

    supports_replace = False

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Put the entry in place of whatever holds the destination."""
        machine = await self.machine_of(route.target_node)
        await self.call("overwrite", self.cloud.overwrite(self.entry(route, machine, name_hint)))

    async def delete_route(self, route: Route) -> None:
        """Remove every entry to the CIDR, whoever made it; say nothing if there was none."""
        try:
            await self.call("remove", self.cloud.remove(canonical(route.destination_cidr), None))
        except ProviderError:
            return


class OverwritesOnCreate(GoodProvider):
    """Takes over another Node's (or anyone's) destination on create."""

    supports_replace = False

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Overwrite."""
        machine = await self.machine_of(route.target_node)
        await self.call("overwrite", self.cloud.overwrite(self.entry(route, machine, name_hint)))


class DeletesForeignRoutes(GoodProvider):
    """Deletes every entry to the CIDR, whoever made it."""

    async def delete_route(self, route: Route) -> None:
        """Remove by destination alone; a 404 is reported as not found."""
        try:
            await self.call("remove", self.cloud.remove(canonical(route.destination_cidr), None))
        except ProviderError as exc:
            if "404" in str(exc):
                raise RouteNotFoundError(str(exc)) from exc
            raise


class HidesMissingRoutes(GoodProvider):
    """Returns silently when the route to delete is gone."""

    async def delete_route(self, route: Route) -> None:
        """Swallow not-found."""
        try:
            await super().delete_route(route)
        except RouteNotFoundError:
            return


class DropsRetryHints(GoodProvider):
    """Reports throttling with a fixed pause instead of the cloud's hint."""

    async def call(self, operation: str, request: Awaitable[T]) -> T:
        """Replace every retry hint by one second."""
        try:
            return await super().call(operation, request)
        except ProviderThrottledError as exc:
            raise ProviderThrottledError(str(exc), retry_after=1.0) from exc


class AsksAboutIPv6(GoodProvider):
    """Lets the cloud refuse IPv6 (a wasted request) instead of refusing it itself."""

    def refuse_unroutable(self, route: Route) -> None:
        """Refuse nothing."""


class ListsNoBlackholes(GoodProvider):
    """Lists a route whose machine is gone under the machine's id, as if it were a Node."""

    def as_route(self, entry: Entry, machines: dict[str, str]) -> Route:
        """Fall back to the machine id."""
        return dataclasses.replace(
            super().as_route(entry, machines),
            target_node=machines.get(entry.machine, entry.machine),
            blackhole=False,
        )


class ListsNoneForGoneMachines(GoodProvider):
    """Lists a route whose machine is gone with ``target_node=None`` (``dict.get``'s
    default), where the guide asks for a string."""

    def as_route(self, entry: Entry, machines: dict[str, str]) -> Route:
        """Leave the target unresolved as None."""
        route = super().as_route(entry, machines)
        if entry.machine in machines:
            return route
        return dataclasses.replace(route, target_node=machines.get(entry.machine))  # type: ignore[arg-type]


class RemembersNodeNames(GoodProvider):
    """Names Nodes from what this process remembers of its creates (issue 12's AWS bug)."""

    supports_batch = False
    supports_replace = False

    def __init__(self, *, cluster_name: str, cloud: SharedCloud, budget: RequestBudget) -> None:
        super().__init__(cluster_name=cluster_name, cloud=cloud, budget=budget)
        self.remembered: dict[str, str] = {}

    def as_route(self, entry: Entry, machines: dict[str, str]) -> Route:
        """A remembered name, else the machine id."""
        route = super().as_route(entry, machines)
        if route.blackhole:
            return route
        return dataclasses.replace(
            route, target_node=self.remembered.get(entry.machine, entry.machine)
        )

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Remember the name after a successful create."""
        await super().create_route(route, name_hint=name_hint)
        self.remembered[await self.machine_of(route.target_node)] = route.target_node


class MarksAfterCreating(GoodProvider):
    """Marks a route as the cluster's with a second request: a lost answer leaks it."""

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """Add unmarked, then mark."""
        machine = await self.machine_of(route.target_node)
        entry = dataclasses.replace(self.entry(route, machine, name_hint), owner="")
        try:
            await self.call("add", self.cloud.add(entry))
        except ProviderError as exc:
            if "409" not in str(exc):
                raise
            await self.explain_conflict(route, machine)
            return
        await self.call("set-owner", self.cloud.set_owner(entry.destination, self.cluster))


class UnpacedPages(GoodProvider):
    """Spends the budget for the first page of a listing only."""

    async def page(self, number: int) -> tuple[list[Entry], bool]:
        """Later pages bypass the budget."""
        if number == 0:
            return await super().page(number)
        try:
            return await self.cloud.page(number)
        except CloudError as exc:
            raise mapped(exc) from exc


class SpendsAfterSending(GoodProvider):
    """Spends the budget after each request instead of before it."""

    async def call(self, operation: str, request: Awaitable[T]) -> T:
        """Send, then spend."""
        try:
            return await request
        except CloudError as exc:
            raise mapped(exc) from exc
        finally:
            await self.budget.spend(operation)


class BatchHidesFailures(GoodProvider):
    """Reports no failure from a batch, whatever could not be made."""

    def report(self, failed: dict[int, ProviderError]) -> dict[int, ProviderError]:
        """Drop them."""
        return {}


class ReplacesBlindly(GoodProvider):
    """Repoints whatever holds the CIDR, without checking it is still ``old``."""

    async def replace_route(self, old: Route, new: Route, *, name_hint: str) -> None:
        """Overwrite."""
        machine = await self.machine_of(new.target_node)
        await self.call("overwrite", self.cloud.overwrite(self.entry(new, machine, name_hint)))


class ListsForeignRoutes(GoodProvider):
    """Lists every entry of the shared table as the cluster's."""

    def ours(self, entry: Entry) -> bool:
        """Everything."""
        return True


class AlreadyExistsForForeign(GoodProvider):
    """Answers "already exists" when a foreign route holds the destination, without saying
    whose it is: routectl would count the create done while traffic goes elsewhere."""

    def refuse_foreign(self, entry: Entry) -> None:
        """Pretend it is there already."""
        raise RouteAlreadyExistsError(f"{entry.destination} exists")


class ClaimsForeignRoutesAsOurs(GoodProvider):
    """Names the requested Node as the holder of a foreign route (a plugin that answers
    "already exists" with the route it was asked for, whoever holds the destination)."""

    async def explain_conflict(self, route: Route, machine: str) -> None:
        """A foreign holder is reported as the route asked for."""
        try:
            await super().explain_conflict(route, machine)
        except ProviderTerminalError as exc:
            raise RouteAlreadyExistsError(str(exc), holder=route) from exc


class TrustsAnswers(GoodProvider):
    """Reads the cloud's answers without checking their shape."""

    def checked(self, entries: list[Entry]) -> list[Entry]:
        """Whatever came."""
        return entries


class ThrottleIsTerminalOnLaterPages(GoodProvider):
    """Maps throttling right on a listing's first page only; later pages call it terminal."""

    async def page(self, number: int) -> tuple[list[Entry], bool]:
        """A 429 on page 2 and later is 'forbidden'."""
        try:
            return await super().page(number)
        except ProviderThrottledError as exc:
            if number == 0:
                raise
            raise ProviderTerminalError(str(exc)) from exc


class DeleteFailuresAreNotFound(GoodProvider):
    """Reports every failure of a delete as "not found" (routectl counts it done)."""

    async def delete_route(self, route: Route) -> None:
        """Any failure: not found."""
        try:
            await super().delete_route(route)
        except ProviderError as exc:
            raise RouteNotFoundError(str(exc)) from exc


class ForgetsLostDeletes(GoodProvider):
    """Retries a delete from what it remembers; the cloud's 404 is then a plain error."""

    def __init__(self, *, cluster_name: str, cloud: SharedCloud, budget: RequestBudget) -> None:
        super().__init__(cluster_name=cluster_name, cloud=cloud, budget=budget)
        self.pending: dict[tuple[str, str], Entry] = {}

    async def delete_route(self, route: Route) -> None:
        """Remove the remembered entry, or the one the cloud holds."""
        key = (canonical(route.destination_cidr), route.target_node)
        held = self.pending.get(key) or await self.held(route)
        self.pending[key] = held
        try:
            await self.call("remove", self.cloud.remove(held.destination, held.machine))
        except ProviderError as exc:
            if "404" in str(exc):
                raise ProviderError(f"delete failed: {exc}") from exc
            raise
        del self.pending[key]


class SharesPageCursor(GoodProvider):
    """Keeps a listing's page cursor on the instance: concurrent listings skip pages."""

    cursor = 0

    async def entries(self) -> list[Entry]:
        """Page by page, counting on self."""
        found: list[Entry] = []
        self.cursor, more = 0, True
        while more:
            page, more = await self.page(self.cursor)
            found.extend(page)
            self.cursor += 1
        return found


class StuckAfterCancel(GoodProvider):
    """Serialises creates with a lock it releases on errors, not on cancellation."""

    def __init__(self, *, cluster_name: str, cloud: SharedCloud, budget: RequestBudget) -> None:
        super().__init__(cluster_name=cluster_name, cloud=cloud, budget=budget)
        self.lock = asyncio.Lock()

    async def create_route(self, route: Route, *, name_hint: str) -> None:
        """One create at a time; a cancelled one keeps the lock for ever."""
        await self.lock.acquire()
        try:
            await super().create_route(route, name_hint=name_hint)
        except Exception:
            self.lock.release()
            raise
        self.lock.release()


class NoMachineIsTerminal(GoodProvider):
    """Calls a Node without a machine a terminal error."""

    async def machine_of(self, node: str) -> str:
        """Terminal, instead of transient."""
        machines = await self.call("machines", self.cloud.list_machines())
        for machine, name in machines.items():
            if name == node:
                return machine
        raise ProviderTerminalError(f"no machine for node {node}")


class SendsCidrAsGiven(GoodProvider):
    """Sends and compares the destination as Kubernetes spelled it."""

    def entry(self, route: Route, machine: str, hint: str) -> Entry:
        """The CIDR as given."""
        made = super().entry(route, machine, hint)
        return dataclasses.replace(made, destination=route.destination_cidr)


class LooksUpEachGoneMachine(GoodProvider):
    """Looks machines up again for every listed route whose machine it does not know."""

    async def list_routes(self) -> Collection[Route]:
        """One more look-up per unknown machine (hccm #482)."""
        entries = await self.entries()
        machines = await self.call("machines", self.cloud.list_machines())
        routes = []
        for entry in entries:
            if not self.ours(entry):
                continue
            if entry.machine not in machines:
                machines = await self.call("machines", self.cloud.list_machines())
            routes.append(self.as_route(entry, machines))
        return routes

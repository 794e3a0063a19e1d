"""The instance cache: EC2 instances by id, and node name <-> instance resolution.

Promises: one rule, the ``node-name`` option (private DNS name, ``Name`` tag or instance id),
maps a Node to its instance and an instance back to its Node, so any instance of the provider
(a restart, a failover) lists a route under the name the Node it was made for has. A node is
looked up among live instances only; more than one match is a terminal error, and so is a node
that matches only under another rule (the error names the option value that would match).
Hits and misses (of ids and of nodes) are cached for ``cache-seconds``, because EC2 is
eventually consistent; a terminated instance stays cached. Ids are looked up in batches, at
most 200 per filter, so resolving any number of ids costs one ``DescribeInstances`` per 200
unknown ids. Turning the source/destination check off calls EC2 only while the instance's
check is on (concurrent callers for one instance make one call). An instance without id or
state in an answer is a :class:`~routectl.errors.MalformedAnswerError` naming the field.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from routectl.answers import Answer
from routectl.errors import MalformedAnswerError, ProviderError, ProviderTerminalError

if TYPE_CHECKING:
    from types_aiobotocore_ec2.type_defs import FilterTypeDef, InstanceTypeDef

    from routectl_aws.ec2 import Ec2
    from routectl_aws.options import AwsOptions

__all__ = ["Instance", "InstanceCache", "check_instances", "parse_instance"]

# The provider's logger, as before these modules were split out of routectl_aws.provider.
_log = logging.getLogger("routectl_aws.provider")

_GONE_STATES = frozenset({"shutting-down", "terminated"})
_LIVE_STATES = ["pending", "running", "stopping", "stopped"]
_FILTER_VALUES_LIMIT = 200  # EC2 accepts at most 200 values per filter
_FILTER_OF = {
    "private-dns-name": "private-dns-name",
    "name-tag": "tag:Name",
    "instance-id": "instance-id",
}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Instance:
    """What the provider needs to know of one EC2 instance."""

    id: str
    private_dns_name: str
    name_tag: str
    state: str
    source_dest_check: bool

    @property
    def alive(self) -> bool:
        return self.state not in _GONE_STATES


def parse_instance(raw: InstanceTypeDef) -> Instance:
    """``raw`` (one item of ``DescribeInstances``) as an :class:`Instance`."""
    tags = {tag.get("Key", ""): tag.get("Value", "") for tag in raw.get("Tags", [])}
    return Instance(
        id=raw.get("InstanceId", ""),
        private_dns_name=raw.get("PrivateDnsName", ""),
        name_tag=tags.get("Name", ""),
        state=raw.get("State", {}).get("Name", ""),
        source_dest_check=bool(raw.get("SourceDestCheck", True)),
    )


def check_instances(raw: Sequence[InstanceTypeDef]) -> None:
    """Raise :class:`~routectl.errors.MalformedAnswerError` naming the first field of
    ``DescribeInstances``' instances that is not as this module reads it: an instance
    without id (it would make its routes look like blackholes) or without state."""
    for item in Answer(list(raw), what="EC2 DescribeInstances", path="Instances").items():
        for field in (item.field("InstanceId"), item.field("State").field("Name")):
            if not field.text(default=""):
                raise MalformedAnswerError(
                    f"EC2 DescribeInstances: malformed answer: {field.path} is missing",
                    field=field.path,
                )
        item.field("PrivateDnsName").text(default="")
        for tag in item.field("Tags").items():
            tag.field("Key").text()


def name_under(instance: Instance, source: str) -> str:
    """The Node name of ``instance`` under the naming rule ``source`` (``node-name``)."""
    if source == "name-tag":
        return instance.name_tag
    if source == "instance-id":
        return instance.id
    return instance.private_dns_name


def _chunks(items: Sequence[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


class InstanceCache:
    """Instances and node names, looked up through ``ec2`` and cached for ``cache-seconds``."""

    def __init__(self, ec2: Ec2, *, options: AwsOptions) -> None:
        self._ec2 = ec2
        self._options = options
        # instances: id -> (instance, loop time fetched); misses expire too (eventual consistency)
        self._instances: dict[str, tuple[Instance, float]] = {}
        self._missing_ids: dict[str, float] = {}
        self._node_instance: dict[str, tuple[str, float]] = {}
        self._missing_nodes: dict[str, float] = {}
        self._node_locks: dict[str, asyncio.Lock] = {}

    def known(self, instance_id: str) -> Instance | None:
        """The cached instance of that id, however old, without calling EC2."""
        known = self._instances.get(instance_id)
        return None if known is None else known[0]

    async def _describe(self, filters: list[FilterTypeDef]) -> list[Instance]:
        raw = await self._ec2.describe_instances(filters)
        now = asyncio.get_running_loop().time()
        check_instances(raw)
        instances = [parse_instance(item) for item in raw]
        for instance in instances:
            self._instances[instance.id] = (instance, now)
            self._missing_ids.pop(instance.id, None)
        return instances

    async def resolve_ids(self, ids: Collection[str]) -> dict[str, Instance]:
        """Instances by id: cached ones if fresh, the rest in one batched lookup."""
        loop = asyncio.get_running_loop()
        now, ttl = loop.time(), self._options.cache_seconds

        def fresh(stamp: float) -> bool:
            return now - stamp < ttl

        need = sorted(
            i
            for i in ids
            if not (
                (i in self._instances and self._instances[i][0].state == "terminated")
                or (i in self._instances and fresh(self._instances[i][1]))
                or (i in self._missing_ids and fresh(self._missing_ids[i]))
            )
        )
        found: set[str] = set()
        for chunk in _chunks(need, _FILTER_VALUES_LIMIT):
            instances = await self._describe([{"Name": "instance-id", "Values": chunk}])
            found.update(instance.id for instance in instances)
        for missing in set(need) - found:
            self._instances.pop(missing, None)
            self._missing_ids[missing] = now
        return {i: self._instances[i][0] for i in ids if i in self._instances}

    async def resolve_node(self, node: str) -> Instance | None:
        """The live instance named ``node`` under the ``node-name`` rule (concurrent callers
        for one node share one look-up)."""
        async with self._node_locks.setdefault(node, asyncio.Lock()):
            return await self._resolve_node(node)

    async def _resolve_node(self, node: str) -> Instance | None:
        now, ttl = asyncio.get_running_loop().time(), self._options.cache_seconds
        hit = self._node_instance.get(node)
        if hit is not None and now - hit[1] < ttl:
            cached = self._instances.get(hit[0])
            if cached is not None and cached[0].alive:
                return cached[0]
        missed = self._missing_nodes.get(node)
        if missed is not None and now - missed < ttl:
            return None
        candidates = await self._live(self._options.node_name, node)
        if not candidates:
            self._missing_nodes[node] = now
            await self._refuse_other_rules(node)
            return None
        if len(candidates) > 1:
            raise ProviderTerminalError(
                f"node {node!r} matches {len(candidates)} EC2 instances "
                f"({', '.join(sorted(c.id for c in candidates))}); name nodes uniquely"
            )
        (instance,) = candidates
        self._missing_nodes.pop(node, None)
        self._node_instance[node] = (instance.id, now)
        return instance

    async def _live(self, source: str, node: str) -> list[Instance]:
        live: FilterTypeDef = {"Name": "instance-state-name", "Values": _LIVE_STATES}
        found = await self._describe([{"Name": _FILTER_OF[source], "Values": [node]}, live])
        return [c for c in found if c.alive and name_under(c, source) == node]

    async def _refuse_other_rules(self, node: str) -> None:
        """A node no instance has under ``node-name`` but one has under another rule is
        misconfigured: routing it would list its routes under another name after a restart."""
        for source in ("private-dns-name", "name-tag", "instance-id"):
            if source == self._options.node_name:
                continue
            if await self._live(source, node):
                raise ProviderTerminalError(
                    f"node {node!r} is an EC2 instance's {source.replace('-', ' ')}, but "
                    f"node names are read as {self._options.node_name}; set --provider-option "
                    f"node-name={source}"
                )

    def node_name(self, instance: Instance) -> str:
        """The node name to list ``instance`` under (the ``node-name`` rule; may be empty)."""
        return name_under(instance, self._options.node_name)

    async def disable_source_dest_check(self, instance: Instance) -> None:
        """Let the instance forward pod traffic; only calls EC2 when the check is on."""
        instance = self.known(instance.id) or instance
        if not instance.source_dest_check:
            return
        now = asyncio.get_running_loop().time()
        # Marked off before the call, so concurrent creates for the node make only one call.
        self._instances[instance.id] = (dataclasses.replace(instance, source_dest_check=False), now)
        try:
            await self._ec2.call(
                "ModifyInstanceAttribute",
                lambda ec2: ec2.modify_instance_attribute(
                    InstanceId=instance.id, SourceDestCheck={"Value": False}
                ),
            )
        except ProviderError:
            self._instances[instance.id] = (instance, now)
            raise
        _log.info("Disabled the source/destination check of instance %s", instance.id)

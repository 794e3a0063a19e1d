"""Test helpers for the ``aws`` provider: a fault-injecting HTTP proxy in front of an EC2 endpoint.

moto's server emulates EC2 route tables well but never throttles nor fails. :class:`FaultProxy`
sits between the provider and such an endpoint on 127.0.0.1, forwards every request, records
each EC2 ``Action`` it sees (so tests can count calls, with the loop time of each), answers
the next requests with EC2-shaped error responses when told to (``fail_next``), or forwards
one and then drops the connection instead of answering (``lose_next_answer``), or forwards
one and garbles its answer (``rewrite_next``: a value of the wrong shape). :class:`Vpc`
sets a scene in such an endpoint (tagged route tables, instances). Nothing here needs moto itself.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

if TYPE_CHECKING:
    from types_aiobotocore_ec2 import EC2Client
    from types_aiobotocore_ec2.type_defs import RouteTypeDef, RunInstancesRequestTypeDef

__all__ = ["FAULTS", "FaultProxy", "InjectedFault", "Instance", "Vpc"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class InjectedFault:
    """An EC2 error response the proxy sends instead of forwarding a request."""

    status: int
    code: str
    message: str
    retry_after: str | None = None
    """A ``Retry-After`` header value to send, if any."""
    body: str | None = None
    """Send this body (as ``content_type``) instead of EC2's error XML: a proxy's page."""
    content_type: str = "text/xml"


HTML_PAGE = (
    "<!DOCTYPE html><html><head><title>Sign in</title></head>"
    "<body><form action='/login'>Proxy authentication required</form></body></html>"
)

FAULTS: dict[str, InjectedFault] = {
    "html-page": InjectedFault(
        status=200, code="", message="", body=HTML_PAGE, content_type="text/html"
    ),
    "empty-xml": InjectedFault(
        status=200,
        code="",
        message="",
        body='<?xml version="1.0" encoding="UTF-8"?>\n<Response/>',
    ),
    "throttled": InjectedFault(
        status=503, code="RequestLimitExceeded", message="Request limit exceeded."
    ),
    "transient": InjectedFault(
        status=500, code="InternalError", message="An internal error has occurred."
    ),
    "unavailable": InjectedFault(
        status=503, code="Unavailable", message="The service is unavailable."
    ),
    "terminal": InjectedFault(
        status=403,
        code="UnauthorizedOperation",
        message="You are not authorized to perform this operation.",
    ),
    "auth": InjectedFault(
        status=401, code="AuthFailure", message="AWS was not able to validate the credentials."
    ),
    "route-limit": InjectedFault(
        status=400,
        code="RouteLimitExceeded",
        message="The maximum number of routes has been reached for rtb-0.",
    ),
}
"""Named faults; ``"throttled"``, ``"transient"`` and ``"terminal"`` match the contract's kinds."""

_HOP_BY_HOP = frozenset(
    {"connection", "content-length", "content-encoding", "host", "transfer-encoding", "keep-alive"}
)


def _error_xml(fault: InjectedFault) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Response><Errors><Error><Code>{fault.code}</Code>"
        f"<Message>{fault.message}</Message></Error></Errors>"
        "<RequestID>00000000-0000-0000-0000-000000000000</RequestID></Response>"
    )


_ROUTE_WRITES = frozenset({"CreateRoute", "DeleteRoute", "ReplaceRoute"})


class FaultProxy:
    """Forward EC2 requests to ``upstream``, failing the next ones on request."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.actions: list[str] = []
        """Every EC2 Action received, in order (failed ones included)."""
        self.times: list[float] = []
        """The loop time each request arrived at, in order."""
        self.access_keys: list[str] = []
        """The access key id each request was signed with, in order (never a secret)."""
        self._lose: list[str] = []
        self._rewrite: list[tuple[str, Callable[[str], str]]] = []
        self._faults: collections.deque[tuple[InjectedFault, str | None]] = collections.deque()
        self._delay = 0
        self._runner: web.AppRunner | None = None
        self._client: aiohttp.ClientSession | None = None
        self.url = ""

    def fail_next(
        self,
        fault: str | InjectedFault,
        *,
        times: int = 1,
        action: str | None = None,
        after: int = 0,
    ) -> None:
        """Answer the next ``times`` requests (of ``action``, if given) with ``fault``,
        after letting ``after`` of them through."""
        chosen = FAULTS[fault] if isinstance(fault, str) else fault
        self._faults.extend([(chosen, action)] * times)
        self._delay = after

    def lose_next_answer(self, action: str) -> None:
        """Forward the next request of ``action`` (``write``: any route change), then drop
        the connection unanswered."""
        self._lose.append(action)

    def rewrite_next(self, action: str, edit: Callable[[str], str]) -> None:
        """Forward the next request of ``action``, and answer with its XML passed through
        ``edit`` (a field of the wrong shape, a field left out)."""
        self._rewrite.append((action, edit))

    def count(self, action: str) -> int:
        """How many requests of the EC2 ``action`` were received."""
        return self.actions.count(action)

    async def start(self) -> str:
        """Listen on 127.0.0.1 (a free port); returns the proxy's URL."""
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self._client = aiohttp.ClientSession()
        self.url = f"http://{host}:{port}"
        return self.url

    async def aclose(self) -> None:
        """Stop listening and close the upstream connection pool."""
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FaultProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _take_fault(self, action: str) -> InjectedFault | None:
        for index, (fault, only) in enumerate(self._faults):
            if only is None or only == action:
                if self._delay:
                    self._delay -= 1
                    return None
                del self._faults[index]
                return fault
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        form = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
        action = (form.get("Action") or request.query.getall("Action", None) or [""])[0]
        self.actions.append(action)
        self.times.append(asyncio.get_running_loop().time())
        signed = request.headers.get("Authorization", "").partition("Credential=")[2]
        self.access_keys.append(signed.partition("/")[0])
        fault = self._take_fault(action)
        if fault is not None:
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
            return web.Response(
                status=fault.status,
                text=fault.body if fault.body is not None else _error_xml(fault),
                content_type=fault.content_type,
                headers=headers,
            )
        if self._client is None:
            raise RuntimeError("start() the proxy first")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        async with self._client.request(
            request.method, self.upstream + request.path_qs, data=body, headers=headers
        ) as upstream:
            payload = await upstream.read()
            reply = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP}
        lost = action if action in self._lose else None
        if lost is None and action in _ROUTE_WRITES and "write" in self._lose:
            lost = "write"
        if lost is not None and request.transport is not None:
            self._lose.remove(lost)
            request.transport.abort()  # carried out upstream, but the answer is lost
        for index, (only, edit) in enumerate(self._rewrite):
            if only == action:
                del self._rewrite[index]
                payload = edit(payload.decode()).encode()
                break
        return web.Response(status=upstream.status, body=payload, headers=reply)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Instance:
    """An instance launched by :class:`Vpc`: its id and its private DNS name (the node name)."""

    id: str
    dns: str


class Vpc:
    """A VPC with one subnet in an EC2 endpoint (moto), and verbs to shape it for a test.

    It talks to the endpoint directly (not through a :class:`FaultProxy`), so setting a scene
    is never counted nor failed.
    """

    def __init__(self, ec2: EC2Client, *, vpc_id: str, subnet_id: str) -> None:
        self.ec2 = ec2
        self.id = vpc_id
        self.subnet_id = subnet_id

    @classmethod
    async def create(cls, ec2: EC2Client, *, cidr: str = "10.0.0.0/16") -> Vpc:
        """A new dual-stack VPC and a subnet in it."""
        vpc_id = (await ec2.create_vpc(CidrBlock=cidr))["Vpc"].get("VpcId", "")
        await ec2.associate_vpc_cidr_block(VpcId=vpc_id, AmazonProvidedIpv6CidrBlock=True)
        subnet_cidr = cidr.rsplit(".", 2)[0] + ".1.0/24"
        subnet = await ec2.create_subnet(VpcId=vpc_id, CidrBlock=subnet_cidr)
        return cls(ec2, vpc_id=vpc_id, subnet_id=subnet["Subnet"].get("SubnetId", ""))

    async def route_table(self, *, tags: dict[str, str] | None = None) -> str:
        """A new route table with ``tags``; returns its id."""
        table = await self.ec2.create_route_table(VpcId=self.id)
        table_id = table["RouteTable"].get("RouteTableId", "")
        if tags:
            await self.ec2.create_tags(
                Resources=[table_id], Tags=[{"Key": k, "Value": v} for k, v in tags.items()]
            )
        return table_id

    async def cluster_table(self, cluster: str, *, value: str = "owned") -> str:
        """A route table tagged ``kubernetes.io/cluster/<cluster>=<value>``."""
        return await self.route_table(tags={f"kubernetes.io/cluster/{cluster}": value})

    async def launch(self, count: int = 1, *, name: str = "") -> list[Instance]:
        """Run ``count`` instances in the subnet (tagged ``Name=<name>`` if given)."""
        request: RunInstancesRequestTypeDef = {
            "ImageId": "ami-12c6146b",
            "MinCount": count,
            "MaxCount": count,
            "SubnetId": self.subnet_id,
        }
        if name:
            request["TagSpecifications"] = [
                {"ResourceType": "instance", "Tags": [{"Key": "Name", "Value": name}]}
            ]
        result = await self.ec2.run_instances(**request)
        return [
            Instance(id=i.get("InstanceId", ""), dns=i.get("PrivateDnsName", ""))
            for i in result.get("Instances", [])
        ]

    async def terminate(self, instance: Instance) -> None:
        """Terminate ``instance`` (moto keeps its routes active; real EC2 makes them blackholes)."""
        await self.ec2.terminate_instances(InstanceIds=[instance.id])

    async def routes(self, table_id: str) -> list[RouteTypeDef]:
        """The routes of a table as EC2 describes them."""
        tables = await self.ec2.describe_route_tables(RouteTableIds=[table_id])
        return [r for t in tables.get("RouteTables", []) for r in t.get("Routes", [])]

    async def instance_routes(self, table_id: str) -> dict[str, str]:
        """Destination -> instance id of a table's instance routes."""
        return {
            r.get("DestinationCidrBlock", "") or r.get("DestinationIpv6CidrBlock", ""): r.get(
                "InstanceId", ""
            )
            for r in await self.routes(table_id)
            if r.get("InstanceId")
        }

    async def source_dest_check(self, instance: Instance) -> bool:
        """Whether the instance's source/destination check is on."""
        attribute = await self.ec2.describe_instance_attribute(
            InstanceId=instance.id, Attribute="sourceDestCheck"
        )
        return bool(attribute.get("SourceDestCheck", {}).get("Value", True))

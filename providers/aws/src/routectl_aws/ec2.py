"""The EC2 boundary: one lazily opened aiobotocore client, and every EC2 call made through it.

Promises: each call is made exactly once (botocore's own retries are off, because routectl's
``CloudGate`` owns pacing and retries); every HTTP request the client sends (each page of a
listing included) first spends the request budget the provider was handed, in an asynchronous
``before-send`` event hook of the client; every botocore exception leaves as a routectl error
from :mod:`routectl_aws.errors` with the original chained as ``__cause__`` (read it back with
:func:`cause_code`); an answer botocore cannot read (XML that does not parse, a value of the
wrong type) or that lacks the listing's set leaves as a
:class:`~routectl.errors.MalformedAnswerError` naming the field; once :meth:`Ec2.aclose` has
run, no call opens a client again. The parsed EC2 service model is shared by all sessions.
Nothing here knows about tables or nodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from aiobotocore.config import AioConfig
from aiobotocore.credentials import AioRefreshableCredentials
from aiobotocore.session import AioSession, get_session
from botocore.exceptions import BotoCoreError, ClientError
from botocore.loaders import Loader
from botocore.parsers import ResponseParserError

from routectl.errors import MalformedAnswerError, ProviderError, ProviderTerminalError
from routectl_aws.errors import error_code, map_botocore_error, map_client_error

if TYPE_CHECKING:
    from types_aiobotocore_ec2 import EC2Client
    from types_aiobotocore_ec2.type_defs import (
        CreateRouteRequestTypeDef,
        DeleteRouteRequestTypeDef,
        FilterTypeDef,
        InstanceTypeDef,
        ReplaceRouteRequestTypeDef,
        RouteTableTypeDef,
    )

    from routectl.provider import RequestBudget
    from routectl_aws.options import AwsOptions

__all__ = ["Ec2", "cause_code", "new_session", "unreadable"]

T = TypeVar("T")


@functools.cache
def _data_loader() -> Loader:
    """botocore's model loader, shared: EC2's service model is large and read-only."""
    loader: Loader = get_session().get_component("data_loader")
    return loader


def new_session() -> AioSession:
    """An aiobotocore session of its own (credentials), sharing the parsed service models."""
    session = get_session()
    session.register_component("data_loader", _data_loader())
    return session


def _wall_clock() -> float:
    """Unix time, only to read an HTTP-date ``Retry-After``."""
    return datetime.datetime.now(datetime.UTC).timestamp()


def _required(page: Mapping[str, Any], key: str, operation: str, element: str) -> list[Any]:
    """``page[key]``, a list; an answer without it is not EC2's (a proxy's login page, an
    empty body: botocore reads both as an answer with nothing in it), so it is a transient
    error naming the field, never an empty listing."""
    value = page.get(key)
    if not isinstance(value, list):
        raise MalformedAnswerError(
            f"EC2 {operation}: the answer has no {element} (not EC2's XML: a proxy's page?)",
            field=key,
        )
    return value


def unreadable(operation: str, exc: Exception) -> MalformedAnswerError:
    """The error for an answer botocore could not read: XML that does not parse
    (``ResponseParserError``), or a value its service model cannot take (``'two'`` where a
    number belongs: a bare ``ValueError`` from the parser). The field is found in the
    parser's own frames (the ``member_name`` each structure was reading), else unnamed."""
    path: list[str] = []
    trace = exc.__traceback__
    while trace is not None:
        frame = trace.tb_frame
        if frame.f_code.co_name == "_handle_structure" and "member_name" in frame.f_locals:
            path.append(str(frame.f_locals["member_name"]))
        trace = trace.tb_next
    field = ".".join(path) or "the body"
    reason = str(exc).split(", invalid XML received")[0][:160]
    return MalformedAnswerError(
        f"EC2 {operation}: malformed answer: {field}: {reason}", field=field
    )


def cause_code(err: ProviderError) -> str:
    """The EC2 error code behind a mapped error, if it came from an error response."""
    cause = err.__cause__
    return error_code(cause) if isinstance(cause, ClientError) else ""


class Ec2:
    """The EC2 client of one provider: opened on first use, closed by :meth:`aclose`."""

    def __init__(self, options: AwsOptions, *, budget: RequestBudget | None = None) -> None:
        self._options = options
        self._budget = budget
        self._session = new_session()
        self._client_lock = asyncio.Lock()
        self._stack: contextlib.AsyncExitStack | None = None
        self._ec2: EC2Client | None = None
        self._closed = False

    async def aclose(self) -> None:
        """Close the EC2 client; calling it again does nothing."""
        self._closed = True
        async with self._client_lock:
            stack, self._stack, self._ec2 = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    async def _client(self) -> EC2Client:
        if self._closed:
            raise ProviderTerminalError("provider aws is closed")
        async with self._client_lock:
            if self._ec2 is None:
                stack = contextlib.AsyncExitStack()
                config = AioConfig(
                    # routectl's CloudGate retries; botocore must not retry as well.
                    retries={"mode": "standard", "total_max_attempts": 1},
                    connect_timeout=10,
                    read_timeout=30,
                )
                try:
                    if self._options.role_arn:
                        await self._assume_role()
                    self._ec2 = await stack.enter_async_context(
                        self._session.create_client(
                            "ec2",
                            region_name=self._options.region,
                            endpoint_url=self._options.endpoint_url or None,
                            config=config,
                        )
                    )
                except BotoCoreError as exc:
                    await stack.aclose()
                    raise map_botocore_error("client", exc) from exc
                if self._budget is not None:
                    # aiobotocore awaits coroutine handlers; botocore's stubs say sync only.
                    self._ec2.meta.events.register("before-send.ec2", self._spend)  # type: ignore[arg-type]
                self._stack = stack
            return self._ec2

    async def _assume_role(self) -> None:
        """Sign EC2 calls as ``role-arn`` (cloud-provider-aws's ``RoleARN``): credentials from
        STS ``AssumeRole``, made with the pod's own (the standard chain), refreshed before
        they expire. STS's endpoint is botocore's (``AWS_ENDPOINT_URL_STS`` overrides it)."""
        source = new_session()
        role, region = self._options.role_arn, self._options.region

        async def fetch() -> dict[str, str]:
            async with source.create_client("sts", region_name=region) as sts:
                answer = await sts.assume_role(RoleArn=role, RoleSessionName="routectl")
            credentials = answer["Credentials"]
            return {
                "access_key": credentials["AccessKeyId"],
                "secret_key": credentials["SecretAccessKey"],
                "token": credentials["SessionToken"],
                "expiry_time": credentials["Expiration"].isoformat(),
            }

        try:
            metadata = await fetch()
        except ClientError as exc:
            raise map_client_error("assume role", exc, now=_wall_clock()) from exc
        # aiobotocore's session hands these to every client it creates (get_credentials).
        credentials = AioRefreshableCredentials.create_from_metadata(
            metadata=metadata, refresh_using=fetch, method="assume-role"
        )
        setattr(self._session, "_credentials", credentials)  # noqa: B010 -- no public setter

    async def _spend(self, *, event_name: str = "", **_: object) -> None:
        """``before-send`` hook: every request spends the budget before it goes out."""
        if self._budget is not None:
            await self._budget.spend(event_name.rsplit(".", 1)[-1] or "request")

    async def call(self, operation: str, call: Callable[[EC2Client], Awaitable[T]]) -> T:
        """Make one EC2 call; botocore errors leave as routectl errors (cause chained)."""
        ec2 = await self._client()
        try:
            return await call(ec2)
        except ClientError as exc:
            raise map_client_error(operation, exc, now=_wall_clock()) from exc
        except BotoCoreError as exc:
            raise map_botocore_error(operation, exc) from exc
        except (ResponseParserError, ValueError) as exc:
            raise unreadable(operation, exc) from exc

    async def describe_route_tables(self, filters: list[FilterTypeDef]) -> list[RouteTableTypeDef]:
        """Every route table matching ``filters``, all pages."""

        async def fetch(ec2: EC2Client) -> list[RouteTableTypeDef]:
            found: list[RouteTableTypeDef] = []
            async for page in ec2.get_paginator("describe_route_tables").paginate(Filters=filters):
                found.extend(_required(page, "RouteTables", "DescribeRouteTables", "routeTableSet"))
            return found

        return await self.call("DescribeRouteTables", fetch)

    async def describe_instances(self, filters: list[FilterTypeDef]) -> list[InstanceTypeDef]:
        """Every instance matching ``filters``, all pages and reservations."""

        async def fetch(ec2: EC2Client) -> list[InstanceTypeDef]:
            found: list[InstanceTypeDef] = []
            async for page in ec2.get_paginator("describe_instances").paginate(Filters=filters):
                for reservation in _required(
                    page, "Reservations", "DescribeInstances", "reservationSet"
                ):
                    found.extend(reservation.get("Instances", []))
            return found

        return await self.call("DescribeInstances", fetch)

    async def route_call(
        self, operation: str, table_id: str, destination: str, *, ipv6: bool, instance_id: str
    ) -> None:
        """CreateRoute, ReplaceRoute or DeleteRoute of one destination in one table."""
        if operation == "DeleteRoute":
            delete: DeleteRouteRequestTypeDef = {"RouteTableId": table_id}
            if ipv6:
                delete["DestinationIpv6CidrBlock"] = destination
            else:
                delete["DestinationCidrBlock"] = destination
            await self.call(operation, lambda ec2: ec2.delete_route(**delete))
        elif operation == "ReplaceRoute":
            replace: ReplaceRouteRequestTypeDef = {
                "RouteTableId": table_id,
                "InstanceId": instance_id,
            }
            if ipv6:
                replace["DestinationIpv6CidrBlock"] = destination
            else:
                replace["DestinationCidrBlock"] = destination
            await self.call(operation, lambda ec2: ec2.replace_route(**replace))
        else:
            create: CreateRouteRequestTypeDef = {
                "RouteTableId": table_id,
                "InstanceId": instance_id,
            }
            if ipv6:
                create["DestinationIpv6CidrBlock"] = destination
            else:
                create["DestinationCidrBlock"] = destination
            await self.call(operation, lambda ec2: ec2.create_route(**create))

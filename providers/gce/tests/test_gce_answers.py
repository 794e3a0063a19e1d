"""The ``gce`` provider checks what the Compute API answers: a malformed answer (a value of
the wrong type, a route without a name or a CIDR, an HTML page or empty body where JSON
belongs) is one MalformedAnswerError naming the field, never a ParseError traceback from the
SDK nor a route silently left out of a listing; and no route is written on a listing it
could not read."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from google.auth.credentials import AnonymousCredentials
from routectl_gce import GceProvider
from routectl_gce.testing import FakeCompute

from routectl.errors import MalformedAnswerError
from routectl.model import Route

UID = "0b6a4a44-9f0e-4e1c-8a47-6f1c2d3e4f50"
ROUTES = "/global/routes"


@pytest.fixture
async def fake() -> AsyncIterator[FakeCompute]:
    async with FakeCompute() as started:
        started.add_instance("node-a")
        yield started


@pytest.fixture
async def provider(fake: FakeCompute) -> AsyncIterator[GceProvider]:
    """A provider of cluster ``kubernetes`` with one route to node-a."""
    made = GceProvider(
        cluster_name="kubernetes",
        options={"project-id": fake.project, "network-name": "default", "api-endpoint": fake.url},
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
    )
    await made.create_route(
        Route(target_node="node-a", destination_cidr="10.244.1.0/24"), name_hint=UID
    )
    yield made
    await made.aclose()


def first_route(key: str, value: object) -> Callable[[Any], Any]:
    """An edit of a listing: its first route's ``key`` becomes ``value`` (``key`` empty: the
    route itself; ``None``: the field is left out)."""

    def edit(page: Any) -> Any:
        if not key:
            page["items"][0] = value
        elif value is None:
            del page["items"][0][key]
        else:
            page["items"][0][key] = value
        return page

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (first_route("priority", "two"), "items.priority: invalid literal"),
        (first_route("destRange", 5), "items.destRange: expected string"),
        (first_route("destRange", "two"), "items[0].destRange is 'two', expected a CIDR"),
        (first_route("destRange", None), "items[0].destRange is '', expected a CIDR"),
        (first_route("", "10.244.1.0/24 via node-a"), "items[0].name is empty"),
        (lambda page: page | {"items": "10.244.1.0/24"}, "items: repeated field items"),
        ("<html><body>Proxy authentication required</body></html>", "the body: not JSON"),
        ("", "the body: not JSON"),
    ],
    ids=[
        "word-for-number",
        "number-for-string",
        "no-cidr",
        "no-destination",
        "string-for-route",
        "string-for-list",
        "html",
        "empty",
    ],
)
async def test_a_malformed_listing_is_one_error_naming_the_field(
    fake: FakeCompute, provider: GceProvider, edit: Callable[[Any], Any] | str, message: str
) -> None:
    """The listing fails with one error naming the field; the next, well-formed answer
    lists the route again."""
    fake.garble_next(ROUTES, edit)
    with pytest.raises(MalformedAnswerError, match=r"GCE routes\.list: malformed answer") as caught:
        await provider.list_routes()
    assert message in str(caught.value)
    assert caught.value.field.split(":")[0] in str(caught.value)
    listed = await provider.list_routes()
    assert [(r.target_node, r.destination_cidr) for r in listed] == [("node-a", "10.244.1.0/24")]


async def test_no_insert_on_a_listing_it_could_not_read(
    fake: FakeCompute, provider: GceProvider
) -> None:
    """A create whose look-up of the destination's routes is garbled inserts nothing."""
    fake.garble_next(ROUTES, lambda page: page | {"items": [{"name": "r", "destRange": 5}]})
    with pytest.raises(MalformedAnswerError):
        await provider.create_route(
            Route(target_node="node-a", destination_cidr="10.244.2.0/24"), name_hint="u"
        )
    assert fake.route_requests("POST", ROUTES) == 1  # the first create's insert only

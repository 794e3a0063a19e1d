"""The ``hcloud`` provider reads what the API answers by type: a malformed answer is one
MalformedAnswerError naming the field, never an AttributeError or ValueError."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from routectl_hcloud import HcloudProvider
from routectl_hcloud.testing import FakeHcloud, FakeNetwork

from routectl.errors import MalformedAnswerError
from routectl.model import Route

pytestmark = pytest.mark.looptime


@pytest.fixture
async def fake() -> AsyncIterator[FakeHcloud]:
    """A fake API with network ``k8s`` and a server ``node-a`` attached to it."""
    async with FakeHcloud() as started:
        network = started.add_network("k8s")
        started.add_server("node-a", network=network)
        yield started


@pytest.fixture
async def provider(
    fake: FakeHcloud, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[HcloudProvider]:
    """A provider of network ``k8s``; servers looked up afresh each time."""
    monkeypatch.setenv("HCLOUD_TOKEN", fake.token)
    (network,) = fake.networks.values()
    made = HcloudProvider(
        cluster_name="prod",
        options={"network": str(network.id), "endpoint": fake.url, "server-cache-seconds": "0"},
    )
    yield made
    await made.aclose()


def the_network(fake: FakeHcloud) -> FakeNetwork:
    (network,) = fake.networks.values()
    return network


async def test_a_string_where_a_route_belongs_names_the_field(
    fake: FakeHcloud, provider: HcloudProvider
) -> None:
    """``routes: ["..."]`` (once an AttributeError on ``str.get``)."""
    network = the_network(fake)
    body = network.json() | {"routes": ["10.244.1.0/24"]}
    fake.answer_next(f"/networks/{network.id}", {"network": body})
    with pytest.raises(MalformedAnswerError, match=r"network\.routes\[0\] is a string") as caught:
        await provider.list_routes()
    assert caught.value.field == "network.routes[0]"


async def test_a_word_where_a_number_belongs_names_the_field(
    fake: FakeHcloud, provider: HcloudProvider
) -> None:
    """``private_net[0].network: "two"`` (once a ValueError from ``int('two')``)."""
    server = fake.add_server("node-b", network=the_network(fake)).json()
    server["private_net"][0]["network"] = "two"
    fake.answer_next("/servers", {"servers": [server], "meta": {"pagination": {}}})
    with pytest.raises(MalformedAnswerError) as caught:
        await provider.list_routes()
    assert caught.value.field == "servers[0].private_net[0].network"
    assert "'two'" in str(caught.value)
    assert "expected an integer" in str(caught.value)


@pytest.mark.parametrize(
    ("action", "field"),
    [
        pytest.param("running", "action", id="action-is-a-string"),
        pytest.param({"id": "two", "status": "running"}, "action.id", id="id-is-a-word"),
        pytest.param({"id": 7}, "action.status", id="no-status"),
    ],
)
async def test_a_malformed_action_names_the_field(
    fake: FakeHcloud, provider: HcloudProvider, action: object, field: str
) -> None:
    """The answer to add_route carries an action of the wrong shape."""
    network = the_network(fake)
    fake.answer_next(f"/networks/{network.id}/actions/add_route", {"action": action})
    route = Route(target_node="node-a", destination_cidr="10.244.1.0/24")
    with pytest.raises(MalformedAnswerError) as caught:
        await provider.create_route(route, name_hint="uid")
    assert caught.value.field == field


async def test_a_destination_that_is_no_cidr_names_the_field(
    fake: FakeHcloud, provider: HcloudProvider
) -> None:
    """A route whose destination is not a CIDR fails the listing, naming it."""
    network = the_network(fake)
    body = network.json() | {"routes": [{"destination": "ten", "gateway": "10.0.1.1"}]}
    fake.answer_next(f"/networks/{network.id}", {"network": body})
    with pytest.raises(MalformedAnswerError, match="not a CIDR") as caught:
        await provider.list_routes()
    assert caught.value.field == "network.routes[0].destination"

"""The ``fake`` plugin over HTTP (``endpoint=``) maps the shared cloud's answers onto the
error tree: a 503 that says when to come back (``Retry-After``, in seconds or as an HTTP
date against the answer's ``Date``) is throttling with that hint, as a 429 is; a 503
without a hint it can read stays a plain transient error."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from routectl.errors import ProviderError, ProviderThrottledError
from routectl.testing import FakeProvider
from routectl_sim.cloudserver import CloudServer, Scripted

pytestmark = pytest.mark.looptime

DATE = "Wed, 21 Oct 2037 07:27:00 GMT"


@pytest.fixture
async def server() -> AsyncIterator[CloudServer]:
    """A shared fake cloud on 127.0.0.1."""
    async with CloudServer() as started:
        yield started


@pytest.mark.parametrize(
    ("status", "headers", "hint"),
    [
        pytest.param(503, {"Retry-After": "30"}, 30.0, id="503-seconds"),
        pytest.param(
            503, {"Retry-After": "Wed, 21 Oct 2037 07:28:00 GMT", "Date": DATE}, 60.0, id="503-date"
        ),
        pytest.param(429, {"Retry-After": "30"}, 30.0, id="429-seconds"),
        pytest.param(503, {}, None, id="503-no-hint"),
        pytest.param(503, {"Retry-After": "soon-ish"}, None, id="503-unreadable-hint"),
    ],
)
async def test_a_retry_hint_is_carried_on_429_and_503(
    server: CloudServer, status: int, headers: dict[str, str], hint: float | None
) -> None:
    """Retry-After on a 429 or a 503 becomes ProviderThrottledError(retry_after=hint)."""
    server.answer_next("list", Scripted(status=status, body=b"busy", headers=headers))
    provider = FakeProvider(cluster_name="c", options={"endpoint": server.url})
    with pytest.raises(ProviderError) as caught:
        await provider.list_routes()
    await provider.aclose()
    if hint is None:
        assert type(caught.value) is ProviderError
    else:
        assert isinstance(caught.value, ProviderThrottledError)
        assert caught.value.retry_after == hint

"""What a failed Kubernetes request is called: a cut answer is not an unreachable server."""

from __future__ import annotations

import aiohttp
import pytest

from routectl.errors import KubeError
from routectl.kube.transport import translated


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        (
            aiohttp.ClientPayloadError("Response payload is not completed"),
            "the API server's answer was cut off",
        ),
        (aiohttp.ServerDisconnectedError(), "the API server's answer was cut off"),
        (TimeoutError(), "no answer from the API server in time"),
        (aiohttp.ClientConnectionError("refused"), "API server unreachable"),
    ],
)
def test_each_failure_says_what_happened(raised: Exception, said: str) -> None:
    with pytest.raises(KubeError) as caught, translated("watch nodes"):
        raise raised
    assert str(caught.value).startswith(f"watch nodes: {said}")
    if "unreachable" not in said:
        assert "unreachable" not in str(caught.value)

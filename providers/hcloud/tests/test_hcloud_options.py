"""The ``hcloud`` provider validates its options when it is built, with one-line messages.

Every test is a coroutine, even where nothing is awaited: for a plain ``def`` test, looptime 0.9
opens an event loop it never closes, and its ResourceWarning fails a later test here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from routectl_hcloud import HcloudProvider

from routectl.errors import ConfigError


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    """A token in HCLOUD_TOKEN, as most deployments have it."""
    monkeypatch.setenv("HCLOUD_TOKEN", "env-token-value")
    return "env-token-value"


def build(**options: str) -> HcloudProvider:
    """An ``hcloud`` provider for cluster ``prod`` with ``options``."""
    return HcloudProvider(cluster_name="prod", options=options)


async def test_defaults() -> None:
    """Only the network is needed; endpoint, cache and poll periods have defaults."""
    provider = build(network="k8s")
    assert provider.options.network == "k8s"
    assert provider.options.network_id is None
    assert provider.options.endpoint == "https://api.hetzner.cloud/v1"
    assert provider.options.server_cache_seconds == 30.0
    assert provider.options.action_poll_seconds == 1.0
    assert build(network="4711").options.network_id == 4711


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param(
            {"network": "k8s", "region": "fsn1"},
            "unknown option(s) region; known: action-poll-seconds, endpoint, network, "
            "server-cache-seconds, token-file",
            id="unknown",
        ),
        pytest.param({}, "missing required option network", id="no-network"),
        pytest.param({"network": "my net!"}, "network='my net!' is neither", id="network"),
        pytest.param({"network": "k8s", "endpoint": "api.hetzner.cloud"}, "endpoint", id="url"),
        pytest.param(
            {"network": "k8s", "server-cache-seconds": "-5"},
            "server-cache-seconds='-5' must be a finite number >= 0",
            id="cache<0",
        ),
        pytest.param(
            {"network": "k8s", "action-poll-seconds": "0"},
            "action-poll-seconds='0' must be a finite number >= 0.01",
            id="poll=0",
        ),
        pytest.param(
            {"network": "k8s", "action-poll-seconds": "often"},
            "action-poll-seconds='often' is not a number",
            id="poll-nan",
        ),
    ],
)
async def test_bad_options_fail_clearly(options: dict[str, str], message: str) -> None:
    """Each bad option is a ConfigError naming it on a single line."""
    with pytest.raises(ConfigError) as caught:
        build(**options)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("--provider-option: provider hcloud: ")


async def test_a_token_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without HCLOUD_TOKEN or token-file the provider cannot start."""
    monkeypatch.delenv("HCLOUD_TOKEN")
    with pytest.raises(ConfigError, match="set HCLOUD_TOKEN or the option token-file"):
        build(network="k8s")


async def test_token_file_must_be_readable_and_not_empty(tmp_path: Path, token: str) -> None:
    """A missing or empty token file fails at start-up, without showing any token."""
    with pytest.raises(ConfigError, match="cannot read it") as missing:
        build(network="k8s", **{"token-file": str(tmp_path / "absent")})
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="is empty") as blank:
        build(network="k8s", **{"token-file": str(empty)})
    for caught in (missing, blank):
        assert token not in str(caught.value)


async def test_token_file_wins_over_the_environment(tmp_path: Path) -> None:
    """With token-file set, the file is the token's source."""
    path = tmp_path / "token"
    path.write_text("file-token\n")
    provider = build(network="k8s", **{"token-file": str(path)})
    assert provider.options.token_file == path


async def test_hcloud_ccms_environment_stands_in_for_options(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """HCLOUD_NETWORK, HCLOUD_ENDPOINT and HCLOUD_TOKEN_FILE as hcloud-ccm reads them; its
    other variables are named once as ignored, an unknown HCLOUD_* one is a warning; an
    option given wins."""
    token_file = tmp_path / "token"
    token_file.write_text("file-token\n")
    monkeypatch.delenv("HCLOUD_TOKEN")
    monkeypatch.setenv("HCLOUD_NETWORK", "k8s-net")
    monkeypatch.setenv("HCLOUD_ENDPOINT", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("HCLOUD_TOKEN_FILE", str(token_file))
    monkeypatch.setenv("HCLOUD_LOAD_BALANCERS_ENABLED", "false")
    monkeypatch.setenv("HCLOUD_NETWORK_ROUTES_ENABLED", "false")
    monkeypatch.setenv("HCLOUD_NETWROK", "typo")
    with caplog.at_level("INFO", logger="routectl_hcloud"):
        provider = build()
    assert provider.options.network == "k8s-net"
    assert provider.options.endpoint == "http://127.0.0.1:1/v1"
    assert provider.options.token_file == token_file
    assert build(network="other").options.network == "other"
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("INFO", "Ignoring HCLOUD_LOAD_BALANCERS_ENABLED: the service controller's") in said
    assert any(m.startswith("Ignoring HCLOUD_NETWORK_ROUTES_ENABLED: ") for _, m in said)
    assert ("WARNING", "Unknown variable HCLOUD_NETWROK: hcloud-cloud-controller-manager has none") in said  # fmt: skip

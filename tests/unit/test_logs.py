"""Logging set-up: formats, verbosity, and the redaction of credentials on the way out."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from routectl.logs import REDACTED, RedactingFilter, configure_logging, redact

TOKEN = "s3cr3t-t0ken.abc_DEF-123"  # noqa: S105 -- the known token the tests hunt


def fail(message: str) -> None:
    """Raise a RuntimeError carrying ``message`` (so a traceback exists)."""
    raise RuntimeError(message)


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """Put the root and library loggers back as they were after configure_logging."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    names = ("aiohttp", "kubernetes_asyncio", "asyncio")
    levels = {name: logging.getLogger(name).level for name in names}
    yield
    root.handlers[:], root.level = saved
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.parametrize(
    "text",
    [
        f"Authorization: Bearer {TOKEN}",
        f"authorization={TOKEN}",
        f"{{'Authorization': 'Bearer {TOKEN}'}}",
        f'{{"authorization": "Basic {TOKEN}"}}',
        f"Proxy-Authorization: Basic {TOKEN}",
        f"request failed; sent Bearer {TOKEN} to the server",
        f"HCLOUD_TOKEN={TOKEN}",
        f"aws_secret_access_key = {TOKEN}",
        f"{{'X-Amz-Security-Token': '{TOKEN}'}}",
        f"password: {TOKEN}",
    ],
)
def test_redact_hides_credentials(text: str) -> None:
    """Bearer tokens and credential header or variable values become <redacted>."""
    clean = redact(text)
    assert TOKEN not in clean
    assert REDACTED in clean


@pytest.mark.parametrize(
    "text",
    [
        "the Authorization header was rejected",
        "The Hetzner Cloud API rejected the token; reading it again next time",
        "a bearer of bad news",
        "list nodes: 401 Unauthorized: Unauthorized",
        "Creating route for node n1 10.244.1.0/24 with hint 4f0c",
    ],
)
def test_redact_leaves_prose_alone(text: str) -> None:
    """Messages that only talk about credentials are unchanged."""
    assert redact(text) == text


def test_filter_rewrites_message_and_args_and_keeps_the_record() -> None:
    """A record whose args carry a token is kept, with the rendered message redacted."""
    record = logging.LogRecord(
        "x", logging.DEBUG, __file__, 1, "headers %s", ({"Authorization": f"Bearer {TOKEN}"},), None
    )
    assert RedactingFilter().filter(record)
    assert TOKEN not in record.getMessage()
    assert "Bearer <redacted>" in record.getMessage()


def test_filter_redacts_tracebacks() -> None:
    """A traceback whose exception message carries a token is rendered redacted."""
    with pytest.raises(RuntimeError) as info:
        fail(f"boom with Authorization: Bearer {TOKEN}")
    exc_info = (info.type, info.value, info.tb)
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), exc_info=exc_info)
    RedactingFilter().filter(record)
    assert record.exc_text is not None
    assert TOKEN not in record.exc_text
    assert TOKEN not in logging.Formatter().format(record)


@pytest.mark.usefixtures("restored_logging")
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_configured_handler_never_prints_a_token(
    fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever a logger is given, the configured stderr handler prints no token."""
    configure_logging(fmt=fmt, verbosity=6)
    log = logging.getLogger("kubernetes_asyncio.client.rest")
    log.debug("request headers: %s", {"Authorization": f"Bearer {TOKEN}"})
    try:
        fail(f"Bearer {TOKEN}")
    except RuntimeError:
        log.exception("request failed")
    err = capsys.readouterr().err
    assert TOKEN not in err
    assert err.count(REDACTED) >= 2
    if fmt == "json":
        lines = [json.loads(line) for line in err.splitlines()]
        assert lines[0]["logger"] == "kubernetes_asyncio.client.rest"
        assert "exc" in lines[1]


@pytest.mark.usefixtures("restored_logging")
@pytest.mark.parametrize(
    ("verbosity", "root", "library"),
    [(0, logging.INFO, logging.WARNING), (4, logging.DEBUG, logging.WARNING), (6, 10, 10)],
)
def test_verbosity_follows_klog(verbosity: int, root: int, library: int) -> None:
    """-v 0-3 logs INFO, 4 and up DEBUG; libraries stay at WARNING below 6."""
    configure_logging(fmt="text", verbosity=verbosity)
    assert logging.getLogger().level == root
    assert logging.getLogger("aiohttp").level == library
    assert logging.getLogger("kubernetes_asyncio").level == library

"""Logging set-up: formats, verbosity, and the redaction of credentials on the way out."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from routectl.observe.logctx import SYNC, v
from routectl.observe.logs import (
    LIBRARIES,
    REDACTED,
    JsonFormatter,
    KlogFormatter,
    configure_logging,
    redact,
)

TOKEN = "s3cr3t-t0ken.abc_DEF-123"  # noqa: S105 -- the known token the tests hunt


def fail(message: str) -> None:
    """Raise a RuntimeError carrying ``message`` (so a traceback exists)."""
    raise RuntimeError(message)


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """Put the root and library loggers back as they were after configure_logging."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    names = LIBRARIES
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


@pytest.mark.parametrize("formatter", [KlogFormatter(), JsonFormatter()], ids=["text", "json"])
def test_formatters_redact_message_args_fields_and_tracebacks(formatter: logging.Formatter) -> None:
    """A token in the args, in an ``extra`` field or in a traceback is never written."""
    with pytest.raises(RuntimeError) as info:
        fail(f"boom with Authorization: Bearer {TOKEN}")
    exc_info = (info.type, info.value, info.tb)
    record = logging.LogRecord(
        "x",
        logging.ERROR,
        __file__,
        1,
        "headers %s",
        ({"Authorization": f"Bearer {TOKEN}"},),
        exc_info,
    )
    record.route = f"token={TOKEN}"
    line = formatter.format(record)
    assert TOKEN not in line
    assert REDACTED in line


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
        assert lines[0]["caller"].startswith("test_logs.py:")
        assert "err" in lines[1]


@pytest.mark.usefixtures("restored_logging")
@pytest.mark.parametrize(
    ("verbosity", "root", "library"),
    [
        (0, logging.INFO, logging.WARNING),
        (2, logging.INFO - 2, logging.WARNING),
        (4, logging.DEBUG, logging.WARNING),
        (6, logging.DEBUG - 2, logging.DEBUG),
    ],
)
def test_verbosity_follows_klog(verbosity: int, root: int, library: int) -> None:
    """-v N lets V(N) lines through: 4 is DEBUG; libraries stay at WARNING below 6."""
    configure_logging(fmt="text", verbosity=verbosity)
    assert logging.getLogger().level == root
    assert logging.getLogger("aiohttp").level == library
    assert logging.getLogger("kubernetes_asyncio").level == library


KLOG = re.compile(
    r'^([IWEF])(\d{4} \d\d:\d\d:\d\d\.\d{6}) +(\d+) ([\w.]+:\d+)\] ("(?:[^"\\]|\\.)*")(.*)$'
)


@pytest.mark.usefixtures("restored_logging")
def test_text_lines_are_klogs_structured_form() -> None:
    """Header letter, time, pid, file:line, the quoted message, then key="value" fields."""
    out = io.StringIO()
    configure_logging(fmt="text", verbosity=0, stream=out, environ={})
    logging.getLogger("routectl.x").warning(
        "Creating route for node %s", "n1", extra={"node": "n1", "cidr": "10.244.1.0/24"}
    )
    (line,) = out.getvalue().splitlines()
    match = KLOG.match(line)
    assert match, line
    letter, _, _, caller, message, fields = match.groups()
    assert (letter, caller.split(":")[0], message) == (
        "W",
        "test_logs.py",
        '"Creating route for node n1"',
    )
    assert fields == ' node="n1" cidr="10.244.1.0/24"'


@pytest.mark.usefixtures("restored_logging")
def test_json_lines_are_klogs_json_form_with_fields_and_the_sync() -> None:
    """ts, caller, msg, v, then the fields; a line logged within a sync carries its number."""
    out = io.StringIO()
    configure_logging(fmt="json", verbosity=2, stream=out, environ={})
    token = SYNC.set(7)
    try:
        logging.getLogger("routectl.x").log(v(2), "Patching node status n1", extra={"node": "n1"})
    finally:
        SYNC.reset(token)
    entry = json.loads(out.getvalue())
    assert set(entry) == {"ts", "caller", "msg", "v", "node", "sync"}
    assert (entry["msg"], entry["v"], entry["node"], entry["sync"]) == (
        "Patching node status n1",
        2,
        "n1",
        7,
    )


@pytest.mark.usefixtures("restored_logging")
@pytest.mark.parametrize("verbosity", range(11))
def test_minus_v_shows_exactly_the_lines_of_its_level_and_below(verbosity: int) -> None:
    """-v N shows V(0)..V(N) and hides V(N+1) and above; WARNING always shows."""
    out = io.StringIO()
    configure_logging(fmt="json", verbosity=verbosity, stream=out, environ={})
    log = logging.getLogger("routectl.x")
    for level in range(11):
        log.log(v(level), "line at %d", level)
    log.warning("warning")
    shown = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["v"] for e in shown if "v" in e] == list(range(verbosity + 1))
    assert shown[-1]["level"] == "warning"


def test_debug_is_v4() -> None:
    """logger.debug lines are V(4), as the documented -v levels say."""
    assert v(4) == logging.DEBUG

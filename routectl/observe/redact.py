"""Credential redaction: no secret reaches a log line, an Event or an error text.

:class:`Redactor` replaces, in any text, every credential it can recognise by *form*, and
every secret it was told by *value*:

* forms: ``Bearer <token>``; the value of any header, field, query parameter or canonical
  header whose name says credential (``Authorization``, ``X-Amz-Security-Token``,
  ``X-Amz-Credential``, ``X-Amz-Signature``, ``token``, ``secret``, ``password``,
  ``signature``, ``credential``, ``session``…), whether it is written ``name: value``,
  ``name=value``, ``"name": "value"`` or as Python's repr of bytes (``'name': b'value'``),
  and an ``Authorization`` value up to its end (AWS's ``Credential=…, Signature=…`` holds
  spaces); AWS access key ids (``AKIA…``, ``ASIA…``) wherever they appear;
* values: the secrets registered with :meth:`Redactor.add` (the process's credential
  environment variables, the API server token), wherever and however they appear.

Pure: no I/O, no logging, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

REDACTED = "<redacted>"
MIN_SECRET = 8
"""Shorter values are not registered: redacting them would garble ordinary text."""

_NAME = (
    r"[a-z0-9_.-]*(?:authorization|token|secret|password|passwd|signature|credential"
    r"|session|api[_-]?key|private[_-]?key)[a-z0-9_.-]*"
)
_OPEN = r"""(?:b?['"])?"""  # an optional quote, or the b' of a bytes repr
_TOKEN = r"""(?!b['"])[A-Za-z0-9._~+/=%:<>-]+"""  # noqa: S105 -- a pattern, not a password
_AUTH_QUOTED = re.compile(r"""(?i)(\bauthorization['"]?\s*[:=]\s*b?(['"]))(.*?)(\2)""")
_AUTH_LINE = re.compile(r"(?i)(\bauthorization\s*[:=]\s*)([^'\"\n][^\n]*)")
_FIELD = re.compile(rf"(?i)(\b{_NAME}{_OPEN}\s*[:=]\s*{_OPEN}(?:bearer\s+|basic\s+)?)({_TOKEN})")
_BEARER = re.compile(rf"\b(Bearer\s+){_TOKEN}")
_ACCESS_KEY_ID = re.compile(
    r"\b(?:AKIA|ASIA|AIDA|AROA|AIPA|ANPA|ANVA|AGPA|ABIA|ACCA)[A-Z0-9]{16}\b"
)
_SECRET_NAME = re.compile(r"(?i)(token|secret|password|passwd|access_key|key_id|credential)")


class Redactor:
    """Replaces credentials in text by ``<redacted>``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        for secret in secrets:
            self.add(secret)

    def add(self, secret: str) -> None:
        """Redact ``secret`` wherever it appears from now on (too short ones are ignored)."""
        if len(secret.strip()) >= MIN_SECRET:
            self._secrets.add(secret.strip())

    def add_environment(self, environ: Mapping[str, str]) -> None:
        """Register the values of variables whose names say credential (``*_TOKEN``…)."""
        for name, value in environ.items():
            if _SECRET_NAME.search(name):
                self.add(value)

    def __call__(self, text: str) -> str:
        """``text`` with every recognised credential replaced."""
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
        text = _FIELD.sub(_field, text)
        text = _AUTH_QUOTED.sub(rf"\1{REDACTED}\4", text)
        text = _AUTH_LINE.sub(rf"\1{REDACTED}", text)
        text = _BEARER.sub(rf"\1{REDACTED}", text)
        return _ACCESS_KEY_ID.sub(REDACTED, text)


def _field(match: re.Match[str]) -> str:
    """A credential field's value redacted; but ``--flag-credentials: why`` is prose (the
    flag's name and a reason, as start-up names an ignored flag), not a field, and stays."""
    start, text = match.start(), match.string
    if text[max(0, start - 2) : start] == "--" and "=" not in match.group(1):
        return match.group(0)
    return f"{match.group(1)}{REDACTED}"


DEFAULT = Redactor()
"""The process's redactor: logs and Events use it; start-up registers the secrets."""


def redact(text: str) -> str:
    """``text`` through :data:`DEFAULT`."""
    return DEFAULT(text)

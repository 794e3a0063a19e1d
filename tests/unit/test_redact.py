"""The redactor: credentials go, prose that merely names a credential flag stays."""

from __future__ import annotations

import pytest

from routectl.observe.redact import REDACTED, redact


@pytest.mark.parametrize(
    "text",
    [
        "Ignoring --use-service-account-credentials: routectl runs as its own service account",
        "Ignoring --webhook-tls-private-key-file: routectl runs no webhook server",
    ],
)
def test_a_flag_named_in_prose_is_not_taken_for_a_credential(text: str) -> None:
    """Start-up names each ignored CCM flag and why: ``--flag: reason`` is not a field."""
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("--hcloud-token=abcdefgh", "--hcloud-token="),
        ("token: abcdefgh", "token: "),
        ("X-Amz-Security-Token: abcdefgh", "X-Amz-Security-Token: "),
        ("retry with --token=abcdefgh", "retry with --token="),
        ('{"password": "abcdefgh"}', '{"password": "'),
    ],
)
def test_credential_fields_are_still_redacted(text: str, kept: str) -> None:
    """A flag given with a value (``--x-token=v``) and every field form keep being redacted."""
    assert redact(text).startswith(kept + REDACTED)
    assert "abcdefgh" not in redact(text)

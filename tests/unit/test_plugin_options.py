"""The option helpers every shipped plugin reads its ``--provider-option`` values with."""

from __future__ import annotations

import pytest

from routectl.errors import ConfigError
from routectl.plugin_options import is_http_url, option_error, refuse_unknown, seconds_option


def test_errors_name_the_provider_and_the_option() -> None:
    assert str(option_error("aws", "region=x is bad")) == (
        "--provider-option: provider aws: region=x is bad"
    )


def test_unknown_options_are_refused_with_the_known_ones_listed() -> None:
    refuse_unknown("p", {"a": "1"}, ("a", "b"))
    with pytest.raises(ConfigError, match=r"^--provider-option: provider p: unknown option\(s\) "
                       r"c, z; known: a, b$"):  # fmt: skip
        refuse_unknown("p", {"z": "1", "a": "1", "c": "2"}, ("a", "b"))


@pytest.mark.parametrize(
    ("options", "minimum", "expected"),
    [({}, 0.0, 30.0), ({"t": "0"}, 0.0, 0.0), ({"t": "2.5"}, 0.01, 2.5)],
)
def test_seconds_default_and_parse(
    options: dict[str, str], minimum: float, expected: float
) -> None:
    assert seconds_option("p", options, "t", 30.0, minimum=minimum) == expected


@pytest.mark.parametrize(
    ("text", "minimum", "says"),
    [
        ("soon", 0.0, "t='soon' is not a number of seconds"),
        ("-1", 0.0, "t='-1' must be a finite number >= 0"),
        ("inf", 0.0, "t='inf' must be a finite number >= 0"),
        ("nan", 0.0, "t='nan' must be a finite number >= 0"),
        ("0", 0.01, "t='0' must be a finite number >= 0.01"),
    ],
)
def test_bad_seconds_are_refused(text: str, minimum: float, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        seconds_option("p", {"t": text}, "t", 1.0, minimum=minimum)
    assert str(caught.value) == f"--provider-option: provider p: {says}"


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("https://api.example.com/v1", True),
        ("http://127.0.0.1:8080", True),
        ("ftp://example.com", False),
        ("example.com", False),
        ("https://", False),
        ("", False),
    ],
)
def test_only_http_urls_with_a_host_pass(text: str, ok: bool) -> None:
    assert is_http_url(text) is ok

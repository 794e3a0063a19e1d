"""Reading a provider plugin's ``--provider-option`` values the same way in every plugin.

Promises: every error is a :class:`~routectl.errors.ConfigError` that starts
``--provider-option: provider NAME:`` and names the option; unknown options are refused with
the known ones listed; a number of seconds is finite and at least its minimum; a URL check
says yes only to http(s) with a host (callers never echo a URL: it may carry user
information). Pure: no I/O, no environment read here.
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Mapping, Sequence

from routectl.errors import ConfigError

__all__ = ["is_http_url", "option_error", "refuse_unknown", "seconds_option"]


def option_error(provider: str, message: str) -> ConfigError:
    """The start-up error of ``provider``'s options: ``message`` names the option."""
    return ConfigError(f"--provider-option: provider {provider}: {message}")


def refuse_unknown(provider: str, options: Mapping[str, str], known: Sequence[str]) -> None:
    """Refuse any option not in ``known`` (a typo must not be silently ignored)."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise option_error(
            provider, f"unknown option(s) {', '.join(unknown)}; known: {', '.join(known)}"
        )


def seconds_option(
    provider: str, options: Mapping[str, str], key: str, default: float, *, minimum: float = 0.0
) -> float:
    """Option ``key`` as seconds (``default`` when absent): finite and at least ``minimum``."""
    if key not in options:
        return default
    text = options[key]
    try:
        value = float(text)
    except ValueError:
        raise option_error(provider, f"{key}={text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < minimum:
        raise option_error(provider, f"{key}={text!r} must be a finite number >= {minimum:g}")
    return value


def is_http_url(text: str) -> bool:
    """``text`` is an http:// or https:// URL with a host."""
    parsed = urllib.parse.urlsplit(text)
    return parsed.scheme in {"http", "https"} and bool(parsed.hostname)

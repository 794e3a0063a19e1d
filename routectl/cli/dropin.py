"""Start-up of a drop-in for the CCM: its options file, and what its other flags mean here.

* :func:`with_cloud_config` reads ``--cloud-config`` (provider options, ``key = value``
  lines) and merges it with ``--provider-option``; a key given in both places, or a file
  that cannot be read, is a ConfigError (exit 2 with one line);
* :func:`say_ignored` logs, once at start-up, each CCM flag and feature gate given that
  does not concern routes: accepted, never an error, never silent.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from routectl.config import IGNORED, OPTIONS, Settings
from routectl.config.ccm import KNOWN_GATES, ignored_gates, parse_cloud_config
from routectl.errors import ConfigError

logger = logging.getLogger("routectl")


def with_cloud_config(settings: Settings) -> Settings:
    """``settings`` with the options of ``--cloud-config`` added to the provider's."""
    path = settings.cloud_config
    if not path:
        return settings
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        detail = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"--cloud-config {path}: cannot read: {detail}") from None
    from_file = parse_cloud_config(text, path=path)
    both = sorted(set(from_file) & set(settings.provider_options))
    if both:
        raise ConfigError(
            f"--cloud-config {path}: {', '.join(both)} also given by --provider-option; give "
            "each option once"
        )
    merged = {**from_file, **settings.provider_options}
    return dataclasses.replace(settings, provider_options=merged)


def say_ignored(settings: Settings) -> list[str]:
    """Log each given CCM flag and feature gate that routectl ignores; return the lines."""
    lines = [
        f"Ignoring {o.flag}: {o.help.removeprefix('ignored: ')}"
        for o in OPTIONS
        if o.group == IGNORED and getattr(settings, o.name) is not None
    ]
    lines += [
        f"Ignoring feature gate {name}={'true' if on else 'false'}: it does not concern routes "
        f"({KNOWN_GATES[name]})"
        for name, on in sorted(ignored_gates(settings.feature_gates).items())
    ]
    for line in lines:
        logger.info(line)
    return lines

"""Start-up of a drop-in for the CCM: its options file, and what its other flags mean here.

* :func:`with_cloud_config` reads ``--cloud-config`` as the provider's CCM reads it
  (:mod:`routectl.config.cloud_config`: cloud-provider-aws's ``[Global]``, cloud-provider-
  openstack's ``cloud.conf``; other providers: ``key = value`` lines) and merges the options
  it gives with ``--provider-option``; a key given in both places, or a file that cannot be
  read, is a ConfigError (exit 2 with one line);
* :func:`say_ignored` logs, once at start-up, each CCM flag and feature gate given that
  does not concern routes, and each key of the cloud config that does not: accepted, never
  an error, never silent; an unknown key of the cloud config is a WARNING
  (:func:`cloud_config_warnings` gives those lines to ``routectl plan``).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from routectl.config import IGNORED, OPTIONS, Settings
from routectl.config.ccm import KNOWN_GATES, ignored_gates
from routectl.config.cloud_config import Translated, translate
from routectl.errors import ConfigError

logger = logging.getLogger("routectl")


def read_cloud_config(settings: Settings) -> Translated | None:
    """``--cloud-config`` as the provider's CCM reads it (None without one)."""
    path = settings.cloud_config
    if not path:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a BOM is skipped, as Go's gcfg does
    except (OSError, UnicodeError) as exc:
        detail = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"--cloud-config {path}: cannot read: {detail}") from None
    return translate(settings.provider, text, path=path)


def cloud_config_warnings(settings: Settings) -> list[str]:
    """The WARNING lines :func:`say_ignored` gives for the cloud config's unknown keys (for
    ``routectl plan``, which logs nothing: a mistyped ``RoutTableID`` shows there too)."""
    read = _read_again(settings)
    return list(read.unknown) if read is not None else []


def _read_again(settings: Settings) -> Translated | None:
    """The cloud config, read again after start-up checked it (a file that changed since is
    not fatal here)."""
    try:
        return read_cloud_config(settings)
    except ConfigError:
        return None


def with_cloud_config(settings: Settings) -> Settings:
    """``settings`` with the options of ``--cloud-config`` added to the provider's."""
    read = read_cloud_config(settings)
    if read is None:
        return settings
    path, from_file = settings.cloud_config, read.options
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
    read = _read_again(settings)
    if read is not None:
        for line in read.ignored:
            logger.info(line)
        for line in read.unknown:
            logger.warning(line)
        lines += read.ignored + read.unknown
    return lines

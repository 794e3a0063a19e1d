"""Flag values in the syntax of Kubernetes components, read and printed back.

routectl's flags read like the cloud-controller-manager's: Go durations (``1m30s``), Go
booleans (``true``, ``f``, ``1``), repeated ``key=value`` pairs, feature gates
(``A=true,B=false``) and ``--cluster-cidr`` the way upstream's ``processCIDRs`` reads it.

Promises:

* a text of the wrong shape raises ``ValueError`` saying what was expected (the command line
  shows it after the flag's name);
* ``--cluster-cidr`` errors are :class:`~routectl.errors.ConfigError` with upstream's exact
  texts, to be shown as they are;
* :func:`format_duration` prints what Go's ``time.Duration.String`` prints (``1h0m0s``,
  ``250ms``, ``0s``), and :func:`parse_duration` reads that back.

Pure: no I/O, no clock, no logging.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from routectl.cidr import Network, parse_cidr
from routectl.errors import ConfigError

MAX_CLUSTER_CIDRS = 2
MAX_PORT = 65535

_GO_INT = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[0-7_]*|[1-9][0-9_]*)")
"""An integer literal as Go's strconv.ParseInt reads one with base 0."""
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_SECOND_NS = 10**9
_SUBSECOND_UNITS = (("ms", 10**6), ("µs", 10**3), ("ns", 1))


MAX_DURATION = (2**63 - 1) / _SECOND_NS
"""Go's longest duration (about 292 years): longer ones do not parse there either."""


def parse_duration(text: str) -> float:
    """Parse a Go duration (``10s``, ``1m30s``, ``500ms``, ``1.5h``; ``0``) into seconds."""
    stripped = text.strip()
    if stripped in {"0", "+0"}:
        return 0.0
    position, total = 0, 0.0
    for match in _DURATION_PART.finditer(stripped):
        if match.start() != position:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    if not stripped or position != len(stripped):
        raise ValueError(f"invalid duration {text!r} (use Go syntax such as 10s, 1m30s, 500ms)")
    if total > MAX_DURATION:
        raise ValueError(f"invalid duration {text!r}: longer than Go's longest (about 292 years)")
    return total


def parse_number(text: str) -> float:
    """A finite decimal number (``2``, ``0.5``); ``inf`` and ``nan`` are refused."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {text!r}")
    return value


def parse_int(text: str) -> int:
    """An integer that fits Go's int32, written as pflag reads it (``strconv.ParseInt`` with
    base 0): decimal, ``0x1f``, ``0o17`` or ``017`` (octal), ``0b101``, underscores between
    digits; no spaces."""
    if not _GO_INT.fullmatch(text):
        raise ValueError(f"{text!r} is not an integer")
    sign, digits = ("-" if text[0] == "-" else ""), text.lstrip("+-")
    if len(digits) > 1 and digits[0] == "0" and digits[1] in "01234567_":
        digits = "0o" + digits[1:]  # Go's legacy octal: 017 is 15
    try:
        value = int(sign + digits, 0)
    except ValueError:  # an underscore out of place
        raise ValueError(f"{text!r} is not an integer") from None
    if not -(2**31) <= value < 2**31:
        raise ValueError(f"{text!r} does not fit a 32-bit integer")
    return value


def format_duration(seconds: float) -> str:
    """Print ``seconds`` as Go's ``time.Duration.String`` does: ``1h0m0s``, ``1m30s``, ``250ms``."""
    ns = round(seconds * _SECOND_NS)
    sign, ns = ("-" if ns < 0 else ""), abs(ns)
    if ns == 0:
        return "0s"
    if ns < _SECOND_NS:
        unit, size = next((u, s) for u, s in _SUBSECOND_UNITS if ns >= s)
        return f"{sign}{_decimal(ns, size)}{unit}"
    hours, rest = divmod(ns, 3600 * _SECOND_NS)
    minutes, rest = divmod(rest, 60 * _SECOND_NS)
    text = f"{_decimal(rest, _SECOND_NS)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _decimal(value: int, unit: int) -> str:
    """``value / unit`` in decimal, without trailing zeros (``1500, 1000`` -> ``1.5``)."""
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    return f"{whole}.{fraction:0{len(str(unit)) - 1}d}".rstrip("0")


def parse_bool(text: str) -> bool:
    """Parse a Go-style boolean flag value (``true``, ``false``, ``1``, ``0``, ``t``, ``f``)."""
    value = text.strip().lower()
    if value in {"1", "t", "true"}:
        return True
    if value in {"0", "f", "false"}:
        return False
    raise ValueError(f"invalid boolean {text!r} (use true or false)")


def format_bool(value: bool) -> str:  # noqa: FBT001 -- the value printed, not a switch
    """``true`` or ``false``, as Go prints a boolean."""
    return "true" if value else "false"


def format_number(value: float) -> str:
    """A number as a flag takes it: ``2``, ``0.5``."""
    return f"{value:g}"


def key_values(pairs: Sequence[str]) -> dict[str, str]:
    """Turn repeated ``key=value`` texts into a mapping; a text without key or ``=`` is refused."""
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected key=value, got {pair!r}")
        if key.strip() in result:
            raise ValueError(f"{key.strip()!r} is given twice; give each key once")
        result[key.strip()] = value
    return result


def format_key_values(values: Mapping[str, str]) -> str:
    """``a=1,b=2``: how help shows a mapping (empty when it is)."""
    return ",".join(f"{key}={value}" for key, value in values.items())


def parse_key_values(pairs: Sequence[str], *, flag: str) -> dict[str, str]:
    """:func:`key_values`, with a malformed pair as a ConfigError naming ``flag``."""
    try:
        return key_values(pairs)
    except ValueError as exc:
        raise ConfigError(f"{flag}: {exc}") from None


def feature_gates(text: str, *, known: Mapping[str, bool]) -> dict[str, bool]:
    """Parse ``A=true,B=false`` over the defaults ``known``.

    Unknown gates are refused (the CCM refuses them too), so a typo cannot silently leave
    routectl in the other mode.
    """
    gates = dict(known)
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip()
        if name not in known:
            raise ValueError(f"unrecognized feature gate: {name}")
        if not sep or value.strip().lower() not in {"true", "false"}:
            raise ValueError(f"invalid value of {name}: {value!r}")
        gates[name] = value.strip().lower() == "true"
    return gates


def parse_feature_gates(text: str, *, known: Mapping[str, bool]) -> dict[str, bool]:
    """:func:`feature_gates`, with a bad gate as a ConfigError naming ``--feature-gates``."""
    try:
        return feature_gates(text, known=known)
    except ValueError as exc:
        raise ConfigError(f"--feature-gates: {exc}") from None


def parse_cluster_cidrs(text: str) -> tuple[Network, ...]:
    """Parse ``--cluster-cidr``: one CIDR, or one IPv4 and one IPv6, comma-separated.

    Like upstream's ``processCIDRs``: each part is parsed sloppily and masked; an empty
    value is an error; two CIDRs must be of different families; three or more are refused.
    Unlike upstream, blanks around each part are tolerated.
    """
    cidrs = tuple(_parse_one(part.strip()) for part in text.strip().split(","))
    families = {cidr.version for cidr in cidrs}
    if len(cidrs) > 1 and families != {4, 6}:
        # The missing closing parenthesis is upstream's; the text is kept as it is.
        raise ConfigError(
            f"len of ClusterCIDRs=={len(cidrs)} and they are not configured as dual stack "
            "(at least one from each IPFamily"
        )
    if len(cidrs) > MAX_CLUSTER_CIDRS:
        raise ConfigError(
            f"length of clusterCIDRs is:{len(cidrs)} more than max allowed of {MAX_CLUSTER_CIDRS}"
        )
    return cidrs


def _parse_one(text: str) -> Network:
    try:
        return parse_cidr(text)
    except ValueError as exc:
        raise ConfigError(f'failed to parse cidr value:"{text}" with error:{exc}') from None


def format_cidrs(cidrs: Sequence[Network]) -> str:
    """``10.244.0.0/16,fd00::/56``: the flag's text for ``cidrs``."""
    return ",".join(str(cidr) for cidr in cidrs)


def is_host_port(text: str) -> bool:
    """Whether ``text`` is ``host:port`` (``0.0.0.0:8080``, ``[::]:8080``, ``:8080``)."""
    host, sep, port = text.rpartition(":")
    return (
        bool(sep)
        and port.isdigit()
        and int(port) <= MAX_PORT
        and host.count("[") == host.count("]")
    )

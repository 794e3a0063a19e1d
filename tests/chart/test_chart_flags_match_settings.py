"""The chart's flags are options of routectl's settings table, and the schema agrees with them.

The chart names routectl flags in three places: the list at the top of values.yaml, the
``$managed`` list that ``_helpers.tpl`` refuses in ``extraArgs``, and the container args the
Deployment renders. Each must name options of ``routectl.config.OPTIONS``, and every flag of
``routectl run`` is either managed by the chart or left to ``extraArgs`` on purpose.

For every value the chart passes to a flag, Helm (schema and templates, rendered by the real
engine) must accept exactly the values the option accepts: values are probed on both sides
of the schema's bounds and of the option's own refusals. A few chart ranges are narrower on
purpose; each says why.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import helm_python
import pytest

from routectl.cli.flags import parse_run_flags
from routectl.config import IGNORED, OPTIONS
from routectl.config.option import BOOL, DURATION, INT, NUMBER, RUN, Option
from routectl.config.syntax import format_bool, format_duration
from routectl.errors import ConfigError

CHART_DIR = Path(__file__).resolve().parents[2] / "charts" / "routectl"
HELPERS = (CHART_DIR / "templates" / "_helpers.tpl").read_text()
REQUIRED = {
    "clusterCIDRs": ["10.244.0.0/16"],
    "provider": {"name": "fake", "options": {"demo": "true"}},
    "image": {"repository": "registry.example.com/routectl"},
}
EVERYTHING = {  # renders every flag the chart can render: every value set
    **REQUIRED,
    "clusterName": "prod",
    "mode": "periodic",
    "featureGates": {"CloudControllerManagerWebhook": False},
    "reconciliationPeriod": "20s",
    "resyncPeriod": "2h",
    "syncBatchWindow": "1s",
    "minSyncInterval": "1s",
    "routeListingMaxAge": "1m",
    "retryFailedSyncs": False,
    "batchWrites": False,
    "batchWriteInterval": "5s",
    "kubeApi": {"qps": 10, "burst": 20},
    "cloud": {
        "qps": 1,
        "burst": 5,
        "maxConcurrentRouteOperations": 10,
        "callTimeout": "10s",
        "maxAttempts": 3,
        "retryAfterCap": "1m",
    },
    "massDelete": {"threshold": 0.4, "allow": False},
    "leaderElection": {
        "enabled": True,
        "leaseDuration": "20s",
        "renewDeadline": "15s",
        "retryPeriod": "3s",
    },
    "logging": {"format": "json", "verbosity": 2},
    "gracefulShutdownTimeout": "20s",
    "metrics": {"tls": {"existingSecret": "routectl-serving"}},
    "provider": {
        "name": "hcloud",
        "options": {"network": "k8s"},
        "credentials": {"existingSecret": "s", "mode": "file", "file": {"options": {"t": "t"}}},
    },
    "nodeIPAM": {
        "enabled": True,
        "nodeCIDRMaskSize": 24,
        "nodeCIDRMaskSizeIPv4": 24,
        "nodeCIDRMaskSizeIPv6": 64,
        "serviceClusterIPRange": ["10.96.0.0/12"],
        "additionalClusterCIDRs": ["10.245.0.0/16"],
        "exclude": ["10.244.255.0/24"],
        "reuseDelay": "1m",
        "claims": "none",
        "eventType": "Normal",
    },
}
BY_FLAG = {name: o for o in OPTIONS if o.flag for name in (o.flag, *o.aliases)}
RUN_FLAGS = {name for name, o in BY_FLAG.items() if RUN in o.commands}
LEFT_TO_EXTRA_ARGS = {
    "--configure-cloud-routes": "extraArgs turns it off for a dry install (see values.yaml)",
    "--cloud-config": "provider options come from provider.options and credentials",
    "--controllers": "the default (*) runs routes; a pasted CCM list goes to extraArgs",
    "--leader-elect-resource-lock": "leases, the only lock routectl takes, is the default",
    "--cert-dir": "the self-signed certificate lives in /tmp, an emptyDir",
    "--tls-min-version": "TLS 1.2 and up by default; extraArgs can raise it",
    "--tls-cipher-suites": "OpenSSL's TLS 1.2 suites by default; extraArgs can narrow them",
    "--tls-curve-preferences": "OpenSSL's groups by default; extraArgs can choose one",
    "--authentication-kubeconfig": "the in-cluster configuration does the reviews",
    "--authorization-kubeconfig": "the in-cluster configuration does the reviews",
    "--authentication-token-webhook-cache-ttl": "the CCM's default, 10s",
    "--authorization-webhook-cache-authorized-ttl": "the CCM's default, 10s",
    "--authorization-webhook-cache-unauthorized-ttl": "the CCM's default, 10s",
    "--authorization-always-allow-paths": "the probes' paths, as the CCM's default",
} | {
    name: "a CCM flag routectl accepts and ignores"
    for o in OPTIONS
    if o.group == IGNORED and o.flag
    for name in (o.flag, *o.aliases)
}
MANAGED_NOT_RENDERED = {
    "--kubeconfig": "the chart always uses the in-cluster config",
    "-v": "the chart renders the long spelling, --v",
    "--logging-format": "the chart renders routectl's spelling, --log-format",
    "--cloud-provider": "the chart renders routectl's spelling, --provider",
}
NARROWER = {
    "logging.verbosity": "the chart documents klog's range, 0 to 10",
    "metrics.port": "the container drops every capability, so no port below 1024",
    "provider.name": "the chart requires a plugin's entry-point name",
    "leaderElection.leaseDuration": "whole h/m/s only: a schema cannot tell 1.5s from 0.5s",
}
"""Values whose schema is narrower than the binary on purpose (never wider)."""

Manifest = dict[str, Any]
Render = Callable[[dict[str, Any]], list[Manifest]]


@dataclasses.dataclass(frozen=True)
class ValueFlag:
    """A value of the chart (``path``) rendered as ``--flag=<prefix><value>``."""

    path: str
    flag: str
    prefix: str = ""
    direct: bool = True
    """False when the chart may render something else than the value (a default name)."""


def value_flags() -> list[ValueFlag]:
    """Every ``--flag={{ .Values.x }}`` line of _helpers.tpl, plus the Lease's name."""
    line = re.compile(r"^(--[a-z-]+)=([^{\n]*)\{\{ (?:int )?\.Values\.([\w.]+) \}\}$", re.M)
    found = [ValueFlag(path, flag, prefix) for flag, prefix, path in line.findall(HELPERS)]
    return [
        *found,
        ValueFlag("leaderElection.resourceName", "--leader-elect-resource-name", "", False),
    ]


VALUE_FLAGS = value_flags()


def flags_in(text: str) -> set[str]:
    """The flags named in ``text``."""
    return set(re.findall(r"(?<![\w-])--?[a-z][a-z0-9-]*", text))


def values_yaml_list() -> set[str]:
    """The flags the comment block at the top of values.yaml says the chart manages."""
    text = (CHART_DIR / "values.yaml").read_text()
    block = text.split("The chart manages these routectl flags", 1)[1].split("# Durations", 1)[0]
    return flags_in(block)


def helpers_list() -> set[str]:
    """The flags ``routectl.validate`` refuses in extraArgs."""
    (listed,) = re.findall(r"\$managed := list ([^}]*)\}\}", HELPERS)
    return set(re.findall(r'"(-[^"]+)"', listed))


def container_args(manifests: list[Manifest]) -> list[str]:
    """``routectl run``'s args in the rendered Deployment, without ``run``."""
    (deployment,) = (m for m in manifests if m["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args: list[str] = container["args"]
    return args[1:]


def test_the_two_managed_lists_agree_and_name_options() -> None:
    """values.yaml's list and the template's ``$managed`` are one list, of run flags."""
    assert values_yaml_list() == helpers_list()
    assert helpers_list() - RUN_FLAGS == set()


def test_rendered_flags_are_options_the_chart_manages(render: Render) -> None:
    """Every flag the Deployment renders is a run flag of the table, and a managed one."""
    rendered = {arg.split("=", 1)[0] for arg in container_args(render(EVERYTHING))}
    assert rendered - RUN_FLAGS == set()
    assert helpers_list() - rendered == set(MANAGED_NOT_RENDERED)
    assert rendered <= helpers_list()


def test_every_run_flag_is_managed_or_left_to_extra_args() -> None:
    """A new option of ``routectl run`` needs a decision here: a value, or extraArgs."""
    assert RUN_FLAGS - helpers_list() == set(LEFT_TO_EXTRA_ARGS)


def extra_list() -> set[str]:
    """The flags ``routectl.validate`` lets through extraArgs."""
    (listed,) = re.findall(r"\$extra := list ([^}]*)\}\}", HELPERS)
    return set(re.findall(r'"(-[^"]+)"', listed))


def test_extra_args_take_exactly_the_run_flags_the_chart_does_not_manage() -> None:
    """The template's list of flags allowed in extraArgs is the settings table's, less the
    managed ones: a flag routectl does not know fails the render, not the pod."""
    assert extra_list() == RUN_FLAGS - helpers_list()


def test_an_unknown_flag_in_extra_args_fails_the_render(render: Render) -> None:
    """A typo is a render error naming the flag."""
    with pytest.raises((helm_python.HelmValuesError, helm_python.HelmRenderError), match="--no-such-flag is not a flag"):  # fmt: skip
        render({**REQUIRED, "extraArgs": ["--no-such-flag=1"]})
    assert container_args(render({**REQUIRED, "extraArgs": ["--controllers=*,-service"]}))


def test_the_template_maps_values_onto_options() -> None:
    """The value-to-flag lines found in _helpers.tpl are many, and each names an option."""
    assert len(VALUE_FLAGS) >= 20
    assert {m.flag for m in VALUE_FLAGS} - set(BY_FLAG) == set()


def go_text(value: object) -> str:
    """``value`` as a Helm template prints it."""
    if isinstance(value, bool):
        return format_bool(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def bounds(node: dict[str, Any]) -> Iterator[float]:
    """The numbers the schema's bounds turn on, and either side of each."""
    step = 1 if node.get("type") == "integer" else 0.001
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in node:
            yield from (node[key] - step, node[key], node[key] + step)


def probes(option: Option[Any], node: dict[str, Any], value_flag: ValueFlag) -> list[object]:
    """Values to try: typical ones of the option's syntax, the bounds, and its refusals."""
    syntax = option.syntax
    refused = option.check.refuses if option.check and not value_flag.prefix else ()
    if syntax is BOOL:
        return [True, False]
    if syntax is DURATION:
        typical: list[object] = ["0", "0s", "0ms", "0h0m", "0.0s", "1ns", "0.5s", "500ms"]
        typical += ["10s", "1m30s", "1.5h", "-1s", "10", "1 hour", ""]
        return typical + [format_duration(v) for v in refused]
    if syntax is INT or node.get("type") == "integer":
        return [-1, 0, 1, 2, 10, 1.5, *bounds(node), *refused]
    if syntax is NUMBER:
        return [-1, -0.1, 0, 1e-9, 0.5, 1, 1.5, 2, 10, *bounds(node), *refused]
    typical = ["", "x", "text", "json", "xml", "routectl", "kube-system", "Not_A_Name"]
    return [*typical, "a..b", "a.-b", "a.b", "-a", "a" * 254, *refused]


def with_value(path: str, value: object) -> dict[str, Any]:
    """The required values, periodic mode and one replica, with ``value`` at ``path``."""
    *parents, key = path.split(".")
    nested: dict[str, Any] = {key: value}
    for parent in reversed(parents):
        nested = {parent: nested}
    return {**REQUIRED, "mode": "periodic", "replicaCount": 1, **nested}


def rendered_args(render: Render, values: dict[str, Any]) -> list[str] | None:
    """``routectl run``'s args the chart renders, or None when Helm refuses the values."""
    try:
        return container_args(render(values))
    except (helm_python.HelmValuesError, helm_python.HelmRenderError):
        return None


def flag_text(args: list[str], flag: str) -> str:
    """The text ``args`` give ``flag``."""
    (text,) = (a.split("=", 1)[1] for a in args if a.split("=", 1)[0] == flag)
    return text


def routectl_accepts(args: list[str]) -> bool:
    """Whether ``routectl run`` starts with ``args``: every option's check and every rule
    across options (the lease timings, say) pass."""
    try:
        parse_run_flags(args)
    except (ConfigError, SystemExit):
        return False
    return True


def with_flag(args: list[str], flag: str, text: str) -> list[str]:
    """``args`` with ``flag`` set to ``text`` (what the chart would render for the value)."""
    return [a for a in args if a.split("=", 1)[0] != flag] + [f"{flag}={text}"]


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    """The chart's values.schema.json."""
    loaded: dict[str, Any] = json.loads((CHART_DIR / "values.schema.json").read_text())
    return loaded


def schema_node(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The schema of the value at ``path``."""
    node = schema
    for key in path.split("."):
        node = node["properties"][key]
    return node


@pytest.mark.parametrize("value_flag", VALUE_FLAGS, ids=lambda m: m.path)
def test_the_schema_takes_exactly_what_the_option_takes(
    render: Render, schema: dict[str, Any], value_flag: ValueFlag
) -> None:
    """Helm never accepts a value routectl refuses (the pod would crash-loop), and refuses
    one routectl takes only where NARROWER says why."""
    option = BY_FLAG[value_flag.flag]
    baseline = rendered_args(render, with_value("mode", "periodic"))
    assert baseline is not None
    wider: list[tuple[object, str]] = []
    narrower: list[object] = []
    for value in probes(option, schema_node(schema, value_flag.path), value_flag):
        args = rendered_args(render, with_value(value_flag.path, value))
        if args is None:
            text = value_flag.prefix + go_text(value)
            if routectl_accepts(with_flag(baseline, value_flag.flag, text)):
                narrower.append(value)
            continue
        text = flag_text(args, value_flag.flag)
        if value_flag.direct:
            assert text == value_flag.prefix + go_text(value)
        if not routectl_accepts(args):
            wider.append((value, text))
    assert wider == [], f"the chart renders {value_flag.flag} values routectl refuses"
    if value_flag.path in NARROWER:
        assert narrower, f"{value_flag.path} is no longer narrower than {value_flag.flag}"
    else:
        assert narrower == [], f"the schema refuses {value_flag.flag} values routectl takes"


ALWAYS_RENDERED = {
    "provider.name": "required: there is no default plugin",
    "metrics.port": "the probes, the container port and the Service use it",
    "metrics.bindAddress": "rendered with the port it goes with",
}
"""Values the chart always passes because its own objects depend on them."""
NULLABLE = [m for m in VALUE_FLAGS if m.direct and not m.prefix and m.path not in ALWAYS_RENDERED]


def test_only_the_values_the_chart_depends_on_are_always_rendered() -> None:
    """Every value rendered as a flag is nullable but those ALWAYS_RENDERED says why."""
    direct = {m.path for m in VALUE_FLAGS if m.direct and not m.prefix}
    assert set(ALWAYS_RENDERED) <= direct
    assert len(NULLABLE) >= 30


@pytest.mark.parametrize("value_flag", NULLABLE, ids=lambda m: m.path)
def test_an_unset_value_renders_no_flag(
    render: Render, schema: dict[str, Any], value_flag: ValueFlag
) -> None:
    """A value left null passes the schema and renders no flag, so routectl's default applies."""
    assert "null" in schema_node(schema, value_flag.path)["type"]
    args = rendered_args(render, with_value(value_flag.path, None))
    assert args is not None
    assert value_flag.flag not in {a.split("=", 1)[0] for a in args}
    assert routectl_accepts(args)


def test_the_charts_copy_of_routectls_defaults_is_routectls(render: Render) -> None:
    """The leader-election timings the chart checks against each other fall back to
    routectl's defaults when unset; that copy in _helpers.tpl equals the settings table."""
    (block,) = re.findall(r'define "routectl.binaryDefaults" -\}\}\n(.*?)\{\{- end', HELPERS, re.S)
    copied = dict(line.split(": ", 1) for line in block.strip().splitlines())
    paths = {
        "leaseDuration": "--leader-elect-lease-duration",
        "renewDeadline": "--leader-elect-renew-deadline",
        "retryPeriod": "--leader-elect-retry-period",
    }
    assert set(copied) == set(paths)
    for key, flag in paths.items():
        assert BY_FLAG[flag].syntax.parse(copied[key]) == BY_FLAG[flag].default, key
    # and the check uses them: a renewDeadline above the default lease is refused
    assert rendered_args(render, with_value("leaderElection.renewDeadline", "16s")) is None
    assert routectl_accepts(["--cluster-cidr=10.244.0.0/16", "--provider=fake"])
    assert not routectl_accepts(
        ["--cluster-cidr=10.244.0.0/16", "--provider=fake", "--leader-elect-renew-deadline=16s"]
    )

"""Every cloud config a ``ci/*-values.yaml`` example documents is one routectl starts with.

An example that passes ``--cloud-config`` shows the file's content in its leading comment
(lines indented ``#   ``). The test renders the example with the real Helm engine, parses
the container's args with routectl's own command line, reads the documented file with
routectl's own cloud-config reader for the provider (the CCM's gcfg dialect), merges it
with the rendered ``--provider-option`` flags as ``routectl run`` does, and runs the
provider's own option parsing with the environment the pod would have. So an example
routectl refuses at start-up fails here instead of crash-looping a cluster.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from routectl.cli.dropin import read_cloud_config, with_cloud_config
from routectl.cli.flags import parse_run_flags

Manifest = dict[str, Any]
Render = Callable[[dict[str, Any]], list[Manifest]]
CHART_DIR = Path(__file__).resolve().parents[2] / "charts" / "routectl"
EXAMPLES = sorted(CHART_DIR.glob("ci/*-values.yaml"))
BLOCK = re.compile(r"^(?:#|#   .*)$")
PARSERS = {"aws": "routectl_aws.options", "openstack": "routectl_openstack.options"}
"""The option parsing of each provider whose CCM reads a cloud config."""


def documented_cloud_config(text: str) -> str | None:
    """The cloud config a values file's comment shows: its one run of ``#   `` lines."""
    runs: list[list[str]] = []
    current: list[str] = []
    for line in [*text.splitlines(), ""]:
        if BLOCK.match(line):
            current.append(line.removeprefix("#").removeprefix("   "))
        else:
            if any(current):
                runs.append(current)
            current = []
    assert len(runs) <= 1, "one documented cloud config per example"
    return "\n".join(runs[0]).strip() + "\n" if runs else None


def pod_environment(container: Mapping[str, Any]) -> dict[str, str]:
    """The container's environment, a value from a Secret or ConfigMap as a placeholder."""
    return {
        e["name"]: e.get("value", "from-the-secret" if "valueFrom" in e else "")
        for e in container.get("env", [])
    }


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_a_documented_cloud_config_is_one_routectl_starts_with(
    render: Render, example: Path, tmp_path: Path
) -> None:
    """The example's cloud config, read as routectl reads it, with its provider options,
    passes the provider's option parsing; an example passing --cloud-config documents it."""
    text = example.read_text()
    documented = documented_cloud_config(text)
    manifests = render(yaml.safe_load(text))
    (deployment,) = (m for m in manifests if m["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    settings = parse_run_flags(container["args"][1:])
    if not settings.cloud_config:
        assert documented is None, f"{example.name} documents a cloud config it does not pass"
        return
    assert documented is not None, f"{example.name} passes --cloud-config but does not show it"
    conf = tmp_path / "cloud.conf"
    conf.write_text(documented)
    settings = dataclasses.replace(settings, cloud_config=str(conf))
    read = read_cloud_config(settings)
    assert read is not None
    assert read.unknown == [], read.unknown  # every key is one the provider's CCM knows
    merged = with_cloud_config(settings)
    assert merged.provider in PARSERS, f"no option parsing known for {merged.provider}"
    parser = importlib.import_module(PARSERS[merged.provider]).parse_options
    parser(merged.provider_options, environ=pod_environment(container))


def test_the_reader_refuses_what_the_examples_used_to_show() -> None:
    """The check has teeth: the old examples' plain ``key = value`` files are refused."""
    from routectl.config.cloud_config import translate  # noqa: PLC0415
    from routectl.errors import ConfigError  # noqa: PLC0415

    with pytest.raises(ConfigError, match="comes before any"):
        translate("aws", "region = eu-central-1\nvpc-id = vpc-0123456789abcdef0\n", path="c")
    assert documented_cloud_config("# intro:\n#   [Global]\n#   a = 1\nkey: v\n") == (
        "[Global]\na = 1\n"
    )

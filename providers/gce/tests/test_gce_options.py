"""The ``gce`` provider reads the GCE CCM's gce.conf (its own ``cloud-config`` option, or
routectl's ``--cloud-config``) and the same keys as options; every mistake is a
ConfigError of one line that names the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from routectl_gce import GceProvider
from routectl_gce.options import DEFAULT_ENDPOINT, parse_options

from routectl.config.ccm import parse_cloud_config
from routectl.errors import ConfigError

# A gce.conf as cloud-provider-gcp's TestReadConfigFile writes it (its token-url made a URL).
GCE_CONF = """\
[Global]
token-url = https://tokens.example/v1/token
token-body = {"x": 1}
project-id = my-project
network-project-id = my-network-project
network-name = my-network
subnetwork-name = my-subnetwork
secondary-range-name = my-secondary-range
node-tags = my-node-tag1
node-instance-prefix = my-prefix
multizone = true
regional = true
"""


def test_the_ccms_own_file_is_read(tmp_path: Path) -> None:
    """Every key of the CCM's file is accepted; the routes' keys take effect."""
    conf = tmp_path / "gce.conf"
    conf.write_text(GCE_CONF)
    options = parse_options({"cloud-config": str(conf)})
    assert options.project_id == "my-project"
    assert options.network("my-project") == (
        "https://www.googleapis.com/compute/v1/projects/my-network-project/global/networks/my-network"
    )
    assert options.multizone
    assert options.regional
    assert not options.zonal
    assert options.token_url == "https://tokens.example/v1/token"  # noqa: S105 -- a URL
    assert options.node_tags == ("my-node-tag1",)
    assert options.endpoint == DEFAULT_ENDPOINT


def test_routectls_cloud_config_gives_the_same_options() -> None:
    """routectl's --cloud-config reader turns the same file into the same options."""
    assert parse_options(parse_cloud_config(GCE_CONF, path="gce.conf")) == parse_options(
        {
            "token-url": "https://tokens.example/v1/token",
            "token-body": '{"x": 1}',
            "project-id": "my-project",
            "network-project-id": "my-network-project",
            "network-name": "my-network",
            "subnetwork-name": "my-subnetwork",
            "secondary-range-name": "my-secondary-range",
            "node-tags": "my-node-tag1",
            "node-instance-prefix": "my-prefix",
            "multizone": "true",
            "regional": "true",
        }
    )


def test_gcfg_syntax(tmp_path: Path) -> None:
    """Names in any case, quoted values with escapes, comments, repeated node-tags, a bare
    name as true, token-url nil (application default credentials)."""
    conf = tmp_path / "gce.conf"
    conf.write_text(
        "; written by kube-up\n"
        "[global]\n"
        'Project-ID = "my-project"  # quoted\n'
        "network-name = projects/host-project/global/networks/shared ; an XPN network\n"
        "node-tags = a\n"
        "node-tags = b\n"
        "multizone\n"
        "token-url = nil\n"
        'token-body = "{\\"scope\\": \\"x\\"}"\n'
    )
    options = parse_options({"cloud-config": str(conf)})
    assert options.project_id == "my-project"
    assert options.network("my-project").endswith("/projects/host-project/global/networks/shared")
    assert options.node_tags == ("a", "b")
    assert options.multizone
    assert options.token_url == ""
    assert options.token_body == '{"scope": "x"}'  # noqa: S105 -- not a secret


def test_api_endpoint_forms() -> None:
    """The CCM's api-endpoint is a base path ending in /compute/v1/; a bare host works too."""
    for given in (
        "http://127.0.0.1:8089/compute/v1/",
        "http://127.0.0.1:8089/",
        "http://127.0.0.1:8089",
    ):
        assert (
            parse_options({"network-name": "n", "api-endpoint": given}).endpoint
            == "http://127.0.0.1:8089"
        )


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({}, "missing network-name"),
        ({"network-name": "n", "zone": "x"}, "unknown option(s) zone"),
        ({"network-name": "Bad_Name"}, "network-name='Bad_Name' is not a network name"),
        ({"network-name": "a/b"}, "projects/PROJECT/global/networks/NAME"),
        ({"network-name": "n", "project-id": "X"}, "project-id='X' is not a project id"),
        ({"network-name": "n", "multizone": "maybe"}, "multizone='maybe' must be true or false"),
        ({"network-name": "n", "api-endpoint": "ftp://x"}, "api-endpoint must be an http(s) URL"),
        ({"network-name": "n", "api-endpoint": "https://x/compute/beta/"}, "api-endpoint must be"),
        ({"network-name": "n", "token-url": "tokens"}, "token-url must be an http(s) URL, or nil"),
        ({"network-name": "n", "local-zone": "Zone A"}, "local-zone='Zone A' is not a zone name"),
        ({"network-name": "n", "threads": "0"}, "threads='0' must be a whole number"),
        ({"network-name": "n", "wait-seconds": "0"}, "wait-seconds='0' must be a finite number"),
        ({"network-name": '"n'}, "unterminated quote"),
        ({"network-name": "n", "cloud-config": "/nonexistent/gce.conf"}, "cannot read"),
    ],
)
def test_bad_options_are_config_errors(options: dict[str, str], words: str) -> None:
    """Each mistake is one line that starts like every plugin's and names the key."""
    with pytest.raises(ConfigError) as caught:
        parse_options(options)
    message = str(caught.value)
    assert message.startswith("--provider-option: provider gce: ")
    assert words in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[global]\nproject-id = a1234\nproject-id = b1234\n", "'project-id' is given twice"),
        ("[global]\nnetwork-nam = n\n", "unknown key 'network-nam'"),
        ("[LoadBalancer]\nx = 1\n", "unknown section [LoadBalancer]"),
        ("network-name = n\n", "outside the [global] section"),
        ("[global\n", "invalid section header"),
        ("[global]\nnetwork-name = n\n", "network-name also given as an option"),
    ],
)
def test_bad_files_are_config_errors(tmp_path: Path, text: str, words: str) -> None:
    """A gce.conf the plugin cannot read names the file, the line and the key."""
    conf = tmp_path / "gce.conf"
    conf.write_text(text)
    with pytest.raises(ConfigError, match="cloud-config") as caught:
        parse_options({"cloud-config": str(conf), "network-name": "n"})
    assert words in str(caught.value)


@pytest.mark.parametrize("cluster", ["Prod", "prod_1", "1prod", ""])
def test_a_cluster_name_gce_cannot_name_routes_after_is_refused(cluster: str) -> None:
    """Route names start with the cluster's name: it must fit GCE's name rules."""
    with pytest.raises(ConfigError, match="--cluster-name"):
        GceProvider(cluster_name=cluster, options={"network-name": "n"})


def test_a_long_cluster_name_is_cut_as_the_ccm_cuts_it() -> None:
    """The first 26 characters, as truncateClusterName."""
    provider = GceProvider(cluster_name="a" * 40, options={"network-name": "n"})
    assert provider.prefix == "a" * 26

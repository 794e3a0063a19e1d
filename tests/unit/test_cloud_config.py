"""--cloud-config read as the cloud's own CCM reads it (gcfg), turned into provider options."""

from __future__ import annotations

import pytest

from routectl.config.cloud_config import read_gcfg, translate
from routectl.errors import ConfigError

AWS_CONF = """\
# cloud-provider-aws, as kops and the deploy guide write it
[Global]
Zone = us-east-1a
VPC = vpc-0123456789abcdef0
KubernetesClusterTag = prod
KubernetesClusterID = prod
RouteTableID = rtb-0123456789abcdef0
SubnetID = subnet-0123456789abcdef0
DisableSecurityGroupIngress = true
NodeIPFamilies = ipv4
RoutTableID = rtb-typo

[ServiceOverride "1"]
Service = ec2
Region = us-east-1
URL = "http://127.0.0.1:5000"
SigningRegion = us-east-1

[ServiceOverride "2"]
Service = s3
Region = us-east-1
URL = https://s3.example
"""

OPENSTACK_CONF = """\
[Global]
auth-url = https://keystone.example:5000/v3
username = k8s
password = "s3cr;et#1"
tenant-name = prod
domain-name = Default
region = RegionOne
ca-file = /etc/ssl/ca.pem

[Networking]
public-network-name = public

[LoadBalancer]
use-octavia = true
floating-network-id = 1234

[Route]
router-id = 9f8e

[Metadata]
search-order = configDrive,metadataService
[BlockStorage]
bs-version = v3
[Typo]
x = 1
"""


def test_a_real_aws_cloud_config_becomes_the_aws_options() -> None:
    read = translate("aws", AWS_CONF, path="cloud.conf")
    assert read.options == {
        "region": "us-east-1",
        "vpc-id": "vpc-0123456789abcdef0",
        "route-table-id": "rtb-0123456789abcdef0",
        "cluster-id": "prod",
        "endpoint-url": "http://127.0.0.1:5000",
    }
    assert read.ignored == [
        "Ignoring [Global] SubnetID: the service controller's (load-balancer subnets)",
        "Ignoring [Global] DisableSecurityGroupIngress: the service controller's",
        "Ignoring [Global] NodeIPFamilies: the cloud-node controller's",
        'Ignoring [ServiceOverride "2"]: routectl calls EC2 only',
    ]
    typo = "Unknown key [Global] RoutTableID in --cloud-config cloud.conf:11: cloud-provider-aws"
    assert read.unknown == [f"{typo} has no such key"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[Global]\nZone = somewhere\n", "Zone 'somewhere' is not an AWS zone"),
        (
            "[Global]\nKubernetesClusterTag = a\nKubernetesClusterID = b\n",
            "clusterID tags did not match: 'b' vs 'a'",
        ),
    ],
)
def test_aws_keys_routectl_cannot_honour_are_start_up_errors(text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        translate("aws", text, path="cloud.conf")


def test_role_arn_is_the_role_arn_option() -> None:
    """RoleARN: the aws plugin assumes that role (STS AssumeRole) to sign its EC2 calls."""
    text = (
        "[Global]\nRegion = us-east-1\nRoleARN = arn:aws:iam::123456789012:role/x\nSourceARN = a\n"
    )
    read = translate("aws", text, path="c")
    assert read.options == {"region": "us-east-1", "role-arn": "arn:aws:iam::123456789012:role/x"}
    assert read.ignored == [
        "Ignoring [Global] SourceARN: routectl's AssumeRole carries no source ARN"
    ]


def test_region_wins_over_zone_and_empty_keys_are_not_set() -> None:
    text = "[global]\nregion = eu-west-1\nzone = us-east-1a\nvpc =\nroutetableid = \n"
    assert translate("aws", text, path="c").options == {"region": "eu-west-1"}


def test_a_service_override_counts_only_for_the_region_routectl_calls() -> None:
    """As in cloud-provider-aws, an ec2 override of another region is not used (and said)."""
    text = (
        "[Global]\nZone = us-east-1a\n"
        '[ServiceOverride "1"]\nService = ec2\nRegion = eu-west-1\nURL = https://eu.example\n'
        '[ServiceOverride "2"]\nService = ec2\nRegion = us-east-1\nURL = https://us.example\n'
    )
    read = translate("aws", text, path="c")
    assert read.options == {"region": "us-east-1", "endpoint-url": "https://us.example"}
    assert read.ignored == [
        'Ignoring [ServiceOverride "1"]: it is for eu-west-1, routectl calls us-east-1'
    ]


def test_a_real_openstack_cloud_conf_becomes_the_openstack_options() -> None:
    read = translate("openstack", OPENSTACK_CONF, path="cloud.conf")
    assert read.options == {
        "auth-url": "https://keystone.example:5000/v3",
        "username": "k8s",
        "password": "s3cr;et#1",
        "project-name": "prod",
        "region": "RegionOne",
        "router-id": "9f8e",
        "user-domain-name": "Default",
        "project-domain-name": "Default",
        "ca-file": "/etc/ssl/ca.pem",
    }
    assert "Ignoring [LoadBalancer] use-octavia: the service controller's" in read.ignored
    assert "Ignoring [Networking] public-network-name: the cloud-node controller's" in read.ignored
    assert "Ignoring [BlockStorage] bs-version: volumes are not routectl's" in read.ignored
    assert len(read.ignored) == 5
    typo = "Unknown key [Typo] x in --cloud-config cloud.conf:25: cloud-provider-openstack has"
    assert read.unknown == [f"{typo} no such key"]
    assert "s3cr" not in " ".join(read.ignored + read.unknown)


def test_openstack_connection_keys_become_the_plugin_options() -> None:
    """ca-file, tls-insecure, the client certificate, os-endpoint-type, user-id and the
    clouds.yaml keys do what they do in cloud-provider-openstack (AuthOpts): options."""
    text = (
        "[Global]\nauth-url = https://k:5000/v3\nuser-id = 0a1b\npassword = p\n"
        "ca-file = /etc/ssl/ca.pem\ntls-insecure = false\ncert-file = /c.pem\n"
        "key-file = /c.key\nos-endpoint-type = internal\nuse-clouds\n"
        "clouds-file = /etc/openstack/clouds.yaml\ncloud = prod\n[Route]\nrouter-id = r\n"
    )
    read = translate("openstack", text, path="c")
    assert read.options == {
        "auth-url": "https://k:5000/v3",
        "user-id": "0a1b",
        "password": "p",
        "ca-file": "/etc/ssl/ca.pem",
        "tls-insecure": "false",
        "cert-file": "/c.pem",
        "key-file": "/c.key",
        "interface": "internal",
        "use-clouds": "true",
        "clouds-file": "/etc/openstack/clouds.yaml",
        "cloud": "prod",
        "router-id": "r",
    }
    assert read.unknown == []
    assert read.ignored == []


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("trust-id", "Keystone trusts"),
        ("trustee-password", "Keystone trusts"),
        ("domain-id", "domain ids (give domain-name)"),
        ("user-domain-id", "domain ids (give user-domain-name)"),
        ("tenant-domain-id", "domain ids (give tenant-domain-name)"),
        ("application-credential-name", "application credentials by name"),
    ],
)
def test_openstack_keys_the_plugin_cannot_honour_are_refused(key: str, why: str) -> None:
    """Going on without them would fail every call: one line at start-up, with the reason."""
    text = f"[Global]\nauth-url = https://k/v3\n{key} = x\n[Route]\nrouter-id = r\n"
    with pytest.raises(ConfigError) as caught:
        translate("openstack", text, path="c.conf")
    message = str(caught.value)
    assert message.startswith(f"--cloud-config c.conf:3: [Global] {key} is not supported")
    assert why in message
    assert "\n" not in message


def test_gcfg_syntax() -> None:
    """Quotes, escapes, inline comments, continuation lines, case, bare booleans."""
    text = (
        "; comment\n"
        '[Section "Sub Name"]\n'
        'Key-One = "a \\"quoted\\" ; value"  ; comment\n'
        "key_two = first \\\n"
        "  second # comment\n"
        "Flag\n"
        "spaced =   inner   words   \n"
    )
    entries = read_gcfg(text, path="c")
    assert [(e.section, e.subsection, e.name, e.value) for e in entries] == [
        ("section", "Sub Name", "key_one", 'a "quoted" ; value'),
        ("section", "Sub Name", "key_two", "first   second"),
        ("section", "Sub Name", "flag", "true"),
        ("section", "Sub Name", "spaced", "inner   words"),
    ]
    assert entries[0].line == 3


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("key = 1\n", "c:1: 'key = 1' comes before any [section]"),
        ("[Global\n", "c:1: invalid section header"),
        ('[Global]\nkey = "open\n', "c:2: unterminated quoted value"),
        ("[Global]\n= value\n", "c:2: expected name = value"),
        ("[Global]\nkey = a\\qb\n", "c:2: invalid escape sequence"),
    ],
)
def test_malformed_lines_are_fatal_as_in_gcfg(text: str, needle: str) -> None:
    with pytest.raises(ConfigError) as caught:
        translate("aws", text, path="c")
    assert str(caught.value).startswith(f"--cloud-config {needle}")


def test_other_providers_keep_key_value_options() -> None:
    """A provider with no CCM dialect (fake, third-party) takes key = value lines as they are."""
    read = translate("fake", "endpoint = http://cloud:1\n[Any]\nclient = a\n", path="c")
    assert read.options == {"endpoint": "http://cloud:1", "client": "a"}
    assert (read.ignored, read.unknown) == ([], [])

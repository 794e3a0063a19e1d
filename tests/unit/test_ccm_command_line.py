"""The cloud-controller-manager's command line: pasted as it is, it runs; each flag that
means something for routes does it; the rest is accepted, said once, and ignored."""

from __future__ import annotations

import logging

import pytest

from routectl import __version__
from routectl.cli.dropin import say_ignored, with_cloud_config
from routectl.cli.flags import parse_run_flags
from routectl.cli.main import main
from routectl.config import IGNORED, OPTIONS
from routectl.config.ccm import (
    IGNORED_FLAGS,
    WATCH_GATE,
    parse_cloud_config,
    parse_controllers,
    parse_gates,
    runs_routes,
)
from routectl.errors import ConfigError

REQUIRED = ["--cluster-cidr=10.244.0.0/16", "--provider=fake"]
CCM_ARGS = [
    "--cloud-provider=fake",
    "--cluster-cidr=10.244.0.0/16",
    "--allocate-node-cidrs=false",
    "--configure-cloud-routes=true",
    "--leader-elect=true",
    "--leader-elect-resource-lock=leases",
    "--kube-api-qps=50",
    "--kube-api-burst=100",
    "--logging-format=json",
    "--bind-address=127.0.0.1",
    "--secure-port=10258",
    "--controllers=*,-service",
    (
        "--feature-gates=CloudControllerManagerWatchBasedRoutesReconciliation=true,"
        "CloudControllerManagerWebhook=false"
    ),
    "--use-service-account-credentials",
    "--profiling=false",
    "--node-monitor-period=5s",
    "--concurrent-service-syncs=1",
    "--authentication-skip-lookup=true",
    "--v=2",
]


def test_a_ccm_argument_list_parses_and_means_what_it_says() -> None:
    """A CCM's arguments become routectl settings: the route flags act, the rest is kept
    only to be named as ignored."""
    s = parse_run_flags(CCM_ARGS)
    assert (s.provider, s.kube_api_qps, s.kube_api_burst) == ("fake", 50.0, 100)
    assert (s.log_format, s.bind_address, s.secure_port, s.verbosity) == (
        "json",
        "127.0.0.1",
        10258,
        2,
    )
    assert s.watch_mode
    assert s.controllers == ("*", "-service")
    assert s.profiling is False
    assert s.use_service_account_credentials is True
    assert s.node_monitor_period == 5.0


def test_every_ignored_ccm_flag_is_an_option_of_its_own() -> None:
    """Each flag of the ignored table is a run flag of the settings table, and only those."""
    ignored = {o.flag for o in OPTIONS if o.group == IGNORED}
    assert ignored == set(IGNORED_FLAGS)


def test_the_watch_gate_selects_the_mode_and_other_known_gates_are_accepted() -> None:
    """Periodic mode by the gate, with any other known gate beside it."""
    s = parse_run_flags([*REQUIRED, f"--feature-gates={WATCH_GATE}=false,AllBeta=true"])
    assert not s.watch_mode
    assert s.feature_gates == {WATCH_GATE: False, "AllBeta": True}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Nope=true", "unrecognized feature gate: Nope"),
        ("AllBeta=maybe", "invalid value of AllBeta=maybe"),
        ("AllBeta", "missing bool value for AllBeta"),
        ("allbeta=true", "unrecognized feature gate: allbeta"),
    ],
)
def test_gates_are_read_as_kubernetes_reads_them(text: str, message: str) -> None:
    """Unknown (case matters), non-boolean or valueless gates are refused in Kubernetes' words."""
    with pytest.raises(ValueError, match=message):
        parse_gates(text)


def test_go_booleans_are_gate_values() -> None:
    """``1``, ``t``, ``True`` and friends are booleans, as Go's ParseBool reads them."""
    assert parse_gates("AllBeta=1,AllAlpha=F") == {"AllBeta": True, "AllAlpha": False}


@pytest.mark.parametrize(
    ("text", "routes"),
    [
        ("*", True),
        ("route", True),
        ("node-route-controller", True),
        ("*,-route", False),
        ("*,-node-route-controller", False),
        ("service,cloud-node", False),
        ("-service", False),
        ("*,-service,-cloud-node-lifecycle", True),
        ("", False),
    ],
)
def test_controllers_enable_routes_by_the_ccms_rule(text: str, routes: bool) -> None:
    """``*`` enables routes (on by default), an explicit name or ``-name`` decides."""
    assert runs_routes(parse_controllers(text)) is routes


def test_an_unknown_controller_is_refused_in_the_ccms_words() -> None:
    """A typo in --controllers is not silently ignored."""
    with pytest.raises(ValueError, match='"rout" is not in the list of known controllers'):
        parse_controllers("rout")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--controllers=service,cloud-node"], "does not enable the route controller"),
        (["--controllers=*,-route"], "does not enable the route controller"),
        (["--controllers=routes"], '"routes" is not in the list of known controllers'),
        (["--leader-elect-resource-lock=endpoints"], "--leader-elect-resource-lock must be leases"),
        (["--feature-gates=CloudControllerManagerWebhook=nah"], "--feature-gates: invalid value"),
        (["--kube-api-qps=0"], "--kube-api-qps must be >= 0.01"),
        (["--kube-api-qps=1e-300"], "--kube-api-qps must be >= 0.01"),
        (["--cloud-qps=1e-300"], "--cloud-qps must be 0 (no client-side limit) or >= 0.01"),
        (["--kube-api-burst=abc"], "'abc' is not an integer"),
        (["--kube-api-burst=0"], "--kube-api-burst must be >= 1"),
        (["--secure-port=70000"], "--secure-port must be within 0..65535"),
        (["--bind-address=localhost"], "--bind-address must be an IP address"),
        (["--tls-cert-file=/a.crt"], "--tls-cert-file and --tls-private-key-file"),
        (["--node-monitor-period=soon"], "--node-monitor-period"),
        (["--concurrent-service-syncs=many"], "--concurrent-service-syncs"),
        (["--logging-format=xml"], "--logging-format"),
        (["--allocate-node-cidrs=maybe"], "--allocate-node-cidrs"),
        (["--tls-cipher-suites=TLS_NOPE"], "Cipher suite TLS_NOPE not supported or doesn't exist"),
        (["--webhook-tls-cipher-suites=RC4"], "Cipher suite RC4 not supported or doesn't exist"),
        (["--tls-curve-preferences=23,23"], "duplicate curve preference 23"),
        (["--tls-curve-preferences=0"], "curve preference 0 is out of range (must be 1-65535)"),
        (["--tls-curve-preferences=30"], "curve preference 30 is not supported by the current Go"),
        (["--webhook-tls-curve-preferences=x"], "--webhook-tls-curve-preferences"),
        (["--tls-min-version=VersionTLS14"], "--tls-min-version"),
        (["--webhook-tls-min-version=TLS1.2"], "unknown tls version 'TLS1.2'"),
        (["--tls-sni-cert-key=a.crt"], "expected comma separated certificate and key file paths"),
        (["--webhook-tls-sni-cert-key=a.crt,a.key:"], "empty names list is not allowed"),
        (["--webhook-bind-address=localhost"], "--webhook-bind-address"),
        (["--concurrent-node-status-updates=2147483648"], "does not fit a 32-bit integer"),
        (["--log-json-info-buffer-size=lots"], "--log-json-info-buffer-size"),
        (["--vmodule=routes"], "expect comma-separated list of filename=N"),
        (["--allow-untagged-cloud=yes"], "--allow-untagged-cloud"),
        (["--disable-http2-serving=2"], "--disable-http2-serving"),
        (["--version=maybe"], "--version"),
        (
            ["--cloud-provider=aws"],
            "--provider=fake and --cloud-provider=aws name the same setting",
        ),
        (["--leader-elect", "false"], "unrecognized arguments: false"),
        (["--configure-cloud-routes", "false"], "unrecognized arguments: false"),
        (["--secure-port=010258"], "'010258' is not an integer"),
        (["--webhook-tls-curve-preferences=abc"], "'abc' is not an integer"),
        (["--webhook-secure-port=70000"], "70000 must be between 0 and 65535, inclusive"),
        (["--webhook-secure-port=-1"], "-1 must be between 0 and 65535, inclusive"),
    ],
)
def test_bad_ccm_values_exit_2_with_one_line(args: list[str], needle: str, capsys) -> None:
    """Whatever the CCM would refuse, routectl refuses at start-up, in one line."""
    with pytest.raises(SystemExit) as info:
        main(["run", *REQUIRED, *args])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert needle in err


def test_two_spellings_of_one_flag_with_one_value_are_fine() -> None:
    """--provider and --cloud-provider may both be given if they agree; -v is --v's
    shorthand (one pflag flag), so either given twice keeps the last value, as pflag does."""
    assert parse_run_flags([*REQUIRED, "--cloud-provider=fake"]).provider == "fake"
    assert parse_run_flags([*REQUIRED, "-v=2", "--v=2"]).verbosity == 2
    assert parse_run_flags([*REQUIRED, "--v=2", "--v=5"]).verbosity == 5
    assert parse_run_flags([*REQUIRED, "--v=2", "-v=4"]).verbosity == 4


def test_integers_are_read_as_pflag_reads_them() -> None:
    """strconv.ParseInt with base 0: hexadecimal, octal with 0 or 0o, binary, underscores."""
    assert parse_run_flags([*REQUIRED, "--secure-port=0x2812"]).secure_port == 10258
    assert parse_run_flags([*REQUIRED, "--kube-api-burst=010"]).kube_api_burst == 8
    assert parse_run_flags([*REQUIRED, "--kube-api-burst=1_000"]).kube_api_burst == 1000


def test_a_bare_boolean_flag_is_true_and_takes_no_value_from_the_next_word() -> None:
    """pflag's NoOptDefVal: --leader-elect alone is true; the word after it is its own."""
    assert parse_run_flags([*REQUIRED, "--leader-elect=false", "--leader-elect"]).leader_elect


def test_feature_gates_given_twice_add_up() -> None:
    """pflag's mapStringBool merges: a later --feature-gates does not drop earlier gates."""
    gate = "CloudControllerManagerWatchBasedRoutesReconciliation"
    s = parse_run_flags(
        [*REQUIRED, f"--feature-gates={gate}=false", "--feature-gates=AllAlpha=false"]
    )
    assert dict(s.feature_gates) == {gate: False, "AllAlpha": False}
    s = parse_run_flags(
        [*REQUIRED, f"--feature-gates={gate}=false", f"--feature-gates={gate}=true"]
    )
    assert dict(s.feature_gates) == {gate: True}


def test_cloud_config_is_read_as_provider_options(tmp_path) -> None:
    """A CCM-style INI file gives provider options; comments and sections are skipped."""
    path = tmp_path / "cloud.conf"
    path.write_text("[Global]\n# a comment\nendpoint = http://cloud:1\n; another\nclient=a\n")
    s = with_cloud_config(parse_run_flags([*REQUIRED, f"--cloud-config={path}"]))
    assert dict(s.provider_options) == {"endpoint": "http://cloud:1", "client": "a"}


def test_a_cloud_config_saved_with_a_byte_order_mark_is_read(tmp_path) -> None:
    """An editor's UTF-8 BOM is skipped, as the CCM's gcfg skips it."""
    path = tmp_path / "cloud.conf"
    path.write_bytes(b"\xef\xbb\xbf[Global]\nendpoint = http://cloud:1\n")
    s = with_cloud_config(parse_run_flags([*REQUIRED, f"--cloud-config={path}"]))
    assert dict(s.provider_options) == {"endpoint": "http://cloud:1"}


def test_a_json_cloud_config_is_read_as_provider_options(tmp_path) -> None:
    """The Azure CCM's azure.json: each member an option; non-strings in JSON spelling."""
    path = tmp_path / "azure.json"
    path.write_text(
        '{\n  "cloud": "AzurePublicCloud", "routeTableName": "rt",\n'
        '  "useManagedIdentityExtension": true, "routeUpdateIntervalInSeconds": 30,\n'
        '  "tagsMap": {"a": "b"}\n}\n'
    )
    s = with_cloud_config(parse_run_flags([*REQUIRED, f"--cloud-config={path}"]))
    assert dict(s.provider_options) == {
        "cloud": "AzurePublicCloud",
        "routeTableName": "rt",
        "useManagedIdentityExtension": "true",
        "routeUpdateIntervalInSeconds": "30",
        "tagsMap": '{"a":"b"}',
    }


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"a": 1,\n "b": }', ":2: not valid JSON"),
        ('{"a": "x", "a": "y"}', "'a' is given twice"),
    ],
    ids=["syntax", "twice"],
)
def test_a_malformed_json_cloud_config_names_the_file(text: str, needle: str) -> None:
    """A broken azure.json is one line naming the file (and the line, for syntax)."""
    with pytest.raises(ConfigError, match=needle) as info:
        parse_cloud_config(text, path="/etc/kubernetes/azure.json")
    assert str(info.value).startswith("--cloud-config /etc/kubernetes/azure.json")


def test_cloud_config_and_provider_options_add_up_but_never_repeat(tmp_path) -> None:
    """A key given in the file and on the command line is an error, not a silent winner."""
    path = tmp_path / "cloud.conf"
    path.write_text("client = a\n")
    flags = [*REQUIRED, f"--cloud-config={path}"]
    s = with_cloud_config(parse_run_flags([*flags, "--provider-option=endpoint=x"]))
    assert dict(s.provider_options) == {"client": "a", "endpoint": "x"}
    with pytest.raises(ConfigError, match="client also given by --provider-option"):
        with_cloud_config(parse_run_flags([*flags, "--provider-option=client=b"]))


@pytest.mark.parametrize(
    ("text", "needle"),
    [("novalue\n", "expected key = value"), ("a=1\na=2\n", "'a' is given twice")],
)
def test_a_malformed_cloud_config_names_the_file_and_line(text: str, needle: str) -> None:
    """The error says where the problem is."""
    with pytest.raises(ConfigError, match=needle) as info:
        parse_cloud_config(text, path="/etc/cloud.conf")
    assert "--cloud-config /etc/cloud.conf:" in str(info.value)


def test_an_unreadable_cloud_config_exits_2(tmp_path, capsys) -> None:
    """A missing file is one line at start-up, not a traceback."""
    with pytest.raises(SystemExit) as info:
        main(["run", *REQUIRED, f"--cloud-config={tmp_path / 'missing.conf'}"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--cloud-config" in err
    assert "cannot read" in err


def test_ignored_flags_and_gates_are_said_once(caplog) -> None:
    """Each given flag or gate that does not concern routes gets one info line, and only
    those given."""
    s = parse_run_flags(CCM_ARGS)
    with caplog.at_level(logging.INFO, logger="routectl"):
        lines = say_ignored(s)
    assert "Ignoring --profiling: routectl serves no profiling endpoints" in lines
    assert any(
        line.startswith("Ignoring feature gate CloudControllerManagerWebhook=false")
        for line in lines
    )
    assert not any("--webhooks" in line for line in lines)
    assert (
        "Ignoring --allocate-node-cidrs: the generic CCM does nothing with it either "
        "(k8s.io/cloud-provider v0.36); routectl allocates pod CIDRs only with "
        "--routectl-allocate-node-cidrs"
    ) in lines
    assert len(lines) == 7
    assert [r.getMessage() for r in caplog.records] == lines


@pytest.mark.parametrize(
    "pasted",
    [
        ["--allocate-node-cidrs=true"],
        ["--allocate-node-cidrs", "--cidr-allocator-type=RangeAllocator"],
        ["--allocate-node-cidrs=true", "--cidr-allocator-type=CloudAllocator"],
    ],
)
def test_a_pasted_allocate_node_cidrs_never_starts_routectls_allocator(pasted) -> None:
    """The generic CCM does nothing with --allocate-node-cidrs or --cidr-allocator-type
    (k8s.io/cloud-provider v0.36 startRouteController reads only --configure-cloud-routes):
    routectl neither, and says so; only its own flag turns its allocator on."""
    s = parse_run_flags([*REQUIRED, *pasted])
    assert s.routectl_allocate_node_cidrs is False
    assert s.route_cidrs == s.cluster_cidrs
    lines = say_ignored(s)
    assert any(line.startswith("Ignoring --allocate-node-cidrs: ") for line in lines)
    own = parse_run_flags([*REQUIRED, *pasted, "--routectl-allocate-node-cidrs"])
    assert own.routectl_allocate_node_cidrs is True


def test_ccm_syntaxes_accept_what_the_ccm_accepts() -> None:
    """The other side of each check: values the CCM takes are taken, and kept."""
    s = parse_run_flags(
        [
            *REQUIRED,
            "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
            "--tls-curve-preferences=29,23",
            "--tls-min-version=VersionTLS10",
            "--tls-sni-cert-key=a.crt,a.key:example.com,*.example.com",
            "--webhook-bind-address=::1",
            "--log-text-info-buffer-size=64Ki",
            "--vmodule=routes=4,gate*=2",
            "--concurrent-node-status-updates=-1",
            "--allow-untagged-cloud",
            "--disable-http2-serving",
            "--version=false",
            "--help=false",
            "--tls-cert-file=",
            "--tls-private-key-file=",
        ]
    )
    assert s.tls_cipher_suites == (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_AES_128_GCM_SHA256",
    )
    assert s.tls_curve_preferences == (29, 23)
    assert s.tls_min_version == "VersionTLS10"
    assert (s.tls_cert_file, s.tls_private_key_file) == (None, None)  # empty: not given
    lines = say_ignored(s)
    assert "Ignoring --allow-untagged-cloud: deprecated upstream; routectl's plugins tell this cluster's routes by --cluster-name" in lines  # fmt: skip
    assert any(line.startswith("Ignoring --disable-http2-serving: ") for line in lines)


def test_run_version_prints_and_exits_0(capsys) -> None:
    """The CCM's --version (true or raw) on run: the version, whatever else is given."""
    assert main(["run", "--version"]) == 0
    assert main(["run", "--cluster-cidr=x", "--version=raw"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"routectl {__version__}"] * 2


def test_an_aws_cloud_config_is_read_as_cloud_provider_aws_reads_it(tmp_path, caplog) -> None:
    """--cloud-provider=aws --cloud-config=<its [Global]>: the keys that concern routes are
    the aws plugin's options; the others are named once at start-up, a typo is a WARNING."""
    path = tmp_path / "cloud.conf"
    path.write_text(
        "[Global]\nZone = eu-central-1b\nVPC = vpc-0123456789abcdef0\n"
        "KubernetesClusterTag = prod\nRouteTableID = rtb-0123456789abcdef0\n"
        "ElbSecurityGroup = sg-1\nRouteTable = rtb-typo\n"
    )
    args = ["--cloud-provider=aws", "--cluster-cidr=10.244.0.0/16", f"--cloud-config={path}"]
    s = with_cloud_config(parse_run_flags(args))
    assert dict(s.provider_options) == {
        "region": "eu-central-1",
        "vpc-id": "vpc-0123456789abcdef0",
        "cluster-id": "prod",
        "route-table-id": "rtb-0123456789abcdef0",
    }
    with caplog.at_level(logging.INFO, logger="routectl"):
        say_ignored(s)
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("INFO", "Ignoring [Global] ElbSecurityGroup: the service controller's") in said
    typo = f"Unknown key [Global] RouteTable in --cloud-config {path}:7: cloud-provider-aws"
    assert ("WARNING", f"{typo} has no such key") in said


@pytest.mark.parametrize(
    ("flags", "plain"),
    [
        ([], "0.0.0.0:10290"),
        (["--secure-port=10258", "--bind-address=127.0.0.1"], ""),
        (["--secure-port=10258", "--metrics-bind-address=127.0.0.1:10290"], "127.0.0.1:10290"),
        (["--metrics-bind-address="], ""),
        (["--secure-port=0"], "0.0.0.0:10290"),
    ],
)
def test_plain_http_only_where_asked(flags: list[str], plain: str) -> None:
    """With --secure-port, plain HTTP only when --metrics-bind-address is given explicitly."""
    assert parse_run_flags([*REQUIRED, *flags]).plain_address == plain


def test_a_repeated_slice_flag_adds_its_items_as_pflag_does() -> None:
    """--controllers, --tls-cipher-suites and the other pflag slices: given twice, the CCM
    takes the items of both (a repeated plain flag keeps its last value)."""
    s = parse_run_flags(
        [
            *REQUIRED,
            "--controllers=route",
            "--controllers=cloud-node",
            "--tls-cipher-suites=TLS_AES_128_GCM_SHA256",
            "--tls-cipher-suites=TLS_AES_256_GCM_SHA384",
            "--cloud-qps=3",
            "--cloud-qps=4",
        ]
    )
    assert s.controllers == ("route", "cloud-node")
    assert s.tls_cipher_suites == ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384")
    assert s.cloud_qps == 4.0

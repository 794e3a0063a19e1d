"""The cloud-controller-manager's command line, as routectl reads it: gates, controllers, flags.

An operator replacing the CCM's route controller pastes the CCM's arguments. This module
knows what those arguments mean for a route controller:

* :data:`KNOWN_GATES`: the Kubernetes feature gates a cloud-controller-manager accepts.
  ``--feature-gates`` takes a list of them (``A=true,B=false``); the watch-mode gate is
  routectl's own concern, every other known gate is accepted and ignored (routectl says so at
  start-up), and an unknown gate is refused as Kubernetes refuses it
  (``unrecognized feature gate: X``);
* :func:`parse_controllers`: ``--controllers`` as the CCM reads it (``*``, ``name``,
  ``-name``, canonical names and aliases); :func:`runs_routes` says whether the list enables
  the route controller;
* :data:`IGNORED_FLAGS`: the CCM's generic flags that do not concern routes, with the reason
  routectl gives when one is set (accepted, never an error);
* :func:`parse_cloud_config`: the ``--cloud-config`` file's text (``key = value`` lines, or
  a JSON object such as the Azure CCM's ``azure.json``), as provider options.

Pure: no I/O, no logging, no clock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from routectl.errors import ConfigError

WATCH_GATE = "CloudControllerManagerWatchBasedRoutesReconciliation"

KNOWN_GATES: Mapping[str, str] = {
    WATCH_GATE: "watch mode (KEP-5237): routectl's default is on",
    "AllAlpha": "the switch of every alpha gate",
    "AllBeta": "the switch of every beta gate",
    "CloudControllerManagerWebhook": "the CCM's webhook server",
    "CloudDualStackNodeIPs": "node IPs for dual-stack Nodes (cloud-node controller)",
    "StableLoadBalancerNodeSet": "load-balancer node sets (service controller)",
    "ServiceLoadBalancerClass": "load-balancer classes (service controller)",
    "ComponentSLIs": "the /metrics/slis endpoint",
    "ComponentFlagz": "the /flagz endpoint",
    "ComponentStatusz": "the /statusz endpoint",
    "ContextualLogging": "klog's contextual logging",
    "LoggingAlphaOptions": "klog's alpha logging options",
    "LoggingBetaOptions": "klog's beta logging options",
    "ClientsAllowCBOR": "client-go's CBOR encoding",
    "ClientsPreferCBOR": "client-go's CBOR encoding",
    "InformerResourceVersion": "client-go's informer resourceVersion",
    "InOrderInformers": "client-go's informer ordering",
    "WatchListClient": "client-go's streaming lists",
    "APIServerTracing": "OpenTelemetry tracing of the serving side",
    "UnauthenticatedHTTP2DOSMitigation": "HTTP/2 hardening of the serving side",
    "OpenAPIEnums": "OpenAPI enums of the serving side",
    "RemainingItemCount": "list metadata of the serving side",
    "AuthorizeWithSelectors": "field and label selectors in authorization",
    "StructuredAuthenticationConfiguration": "structured authentication configuration",
    "StructuredAuthorizationConfiguration": "structured authorization configuration",
}
"""Every gate ``--feature-gates`` accepts, and what it is about."""

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_gates(text: str) -> dict[str, bool]:
    """``A=true,B=false`` as Kubernetes reads it: known gates only, Go booleans.

    Raises ValueError in Kubernetes' words for an unknown gate or a value that is not a
    boolean; an empty text is no gate at all.
    """
    gates: dict[str, bool] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not sep:
            raise ValueError(f"missing bool value for {name}")
        if name not in KNOWN_GATES:
            raise ValueError(f"unrecognized feature gate: {name}")
        if value not in _GO_TRUE | _GO_FALSE:
            raise ValueError(f'invalid value of {name}={value}, err: invalid syntax "{value}"')
        gates[name] = value in _GO_TRUE
    return gates


def format_gates(gates: Mapping[str, bool]) -> str:
    """``A=true,B=false``, sorted by name."""
    return ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(gates.items()))


def ignored_gates(gates: Mapping[str, bool]) -> dict[str, bool]:
    """The gates given that routectl accepts but that do not concern routes."""
    return {name: on for name, on in gates.items() if name != WATCH_GATE}


ROUTE_CONTROLLER = "node-route-controller"
CONTROLLER_ALIASES: Mapping[str, str] = {
    "cloud-node": "cloud-node-controller",
    "cloud-node-lifecycle": "cloud-node-lifecycle-controller",
    "service": "service-lb-controller",
    "route": ROUTE_CONTROLLER,
}
"""The CCM's controllers by alias; each canonical name is known too."""
KNOWN_CONTROLLERS = frozenset({*CONTROLLER_ALIASES, *CONTROLLER_ALIASES.values()})


def parse_controllers(text: str) -> tuple[str, ...]:
    """``--controllers``: ``*``, ``name`` or ``-name``, comma-separated, names as the CCM
    knows them; raises ValueError in the CCM's words for an unknown name."""
    names = tuple(filter(None, (p.strip() for p in text.split(","))))
    for name in names:
        bare = name.removeprefix("-")
        if name != "*" and bare not in KNOWN_CONTROLLERS:
            raise ValueError(f'"{bare}" is not in the list of known controllers')
    return names


def format_controllers(names: tuple[str, ...]) -> str:
    """The flag's text: ``*`` or ``route,-service``."""
    return ",".join(names)


def runs_routes(names: tuple[str, ...]) -> bool:
    """Whether the list enables the route controller (the CCM's rule: an explicit
    ``-route`` or ``route`` decides; otherwise ``*`` enables it, as it is on by default)."""
    for name in names:
        bare = name.removeprefix("-")
        if CONTROLLER_ALIASES.get(bare, bare) == ROUTE_CONTROLLER:
            return not name.startswith("-")
    return "*" in names


def controllers_problem(names: tuple[str, ...]) -> str | None:
    """The start-up error for a ``--controllers`` list that leaves routes out, or None."""
    if runs_routes(names):
        return None
    return (
        f"--controllers={format_controllers(names) or '(empty)'} does not enable the route "
        "controller, the only controller routectl is: give route (or *); to stand by without "
        "programming routes, use --configure-cloud-routes=false"
    )


IGNORED_FLAGS: Mapping[str, str] = {
    "--allocate-node-cidrs": "the generic CCM does nothing with it either (k8s.io/cloud-provider "
    "v0.36); routectl allocates pod CIDRs only with --routectl-allocate-node-cidrs",
    "--cidr-allocator-type": "the generic CCM does nothing with it either; routectl's allocator "
    "(--routectl-allocate-node-cidrs) is a range allocator",
    "--allow-untagged-cloud": "deprecated upstream; routectl's plugins tell this cluster's "
    "routes by --cluster-name",
    "--concurrent-node-status-updates": "the cloud-node controller's",
    "--concurrent-node-syncs": "the cloud-node controller's",
    "--concurrent-service-syncs": "the service controller's",
    "--controller-start-interval": "routectl starts one controller",
    "--external-cloud-volume-plugin": "volumes are not routectl's",
    "--kube-api-content-type": "routectl speaks JSON to the API server",
    "--master": "the API server comes from --kubeconfig or the in-cluster configuration",
    "--min-resync-period": "watch mode resyncs every --route-resync-period",
    "--node-monitor-period": "the cloud-node-lifecycle controller's",
    "--node-status-update-frequency": "the cloud-node controller's",
    "--node-sync-period": "deprecated upstream, a no-op there too",
    "--use-service-account-credentials": "routectl runs as its own service account",
    "--enable-leader-migration": "routectl elects on its own Lease",
    "--leader-migration-config": "routectl elects on its own Lease",
    "--profiling": "routectl serves no profiling endpoints",
    "--contention-profiling": "routectl serves no profiling endpoints",
    "--authentication-skip-lookup": "routectl reads no extension-apiserver ConfigMap",
    "--authentication-tolerate-lookup-failure": "routectl reads no extension-apiserver ConfigMap",
    "--client-ca-file": "routectl authenticates bearer tokens only (TokenReview)",
    "--requestheader-client-ca-file": "routectl authenticates bearer tokens only (TokenReview)",
    "--requestheader-allowed-names": "routectl authenticates bearer tokens only (TokenReview)",
    "--requestheader-extra-headers-prefix": "routectl authenticates bearer tokens only",
    "--requestheader-group-headers": "routectl authenticates bearer tokens only",
    "--requestheader-username-headers": "routectl authenticates bearer tokens only",
    "--requestheader-uid-headers": "routectl authenticates bearer tokens only",
    "--disable-http2-serving": "routectl's secure port serves HTTP/1.1 only: HTTP/2 is always "
    "off, as with --disable-http2-serving=true",
    "--http2-max-streams-per-connection": "routectl serves HTTP/1.1",
    "--permit-address-sharing": "routectl binds its own sockets",
    "--permit-port-sharing": "routectl binds its own sockets",
    "--tls-sni-cert-key": "routectl serves one certificate",
    "--vmodule": "routectl's -v applies to every module",
    "--log-flush-frequency": "routectl writes each line at once",
    "--log-json-info-buffer-size": "routectl writes each line at once",
    "--log-json-split-stream": "routectl writes every line to stderr",
    "--log-text-info-buffer-size": "routectl writes each line at once",
    "--log-text-split-stream": "routectl writes every line to stderr",
    "--allow-metric-labels": "routectl's metrics have bounded labels",
    "--allow-metric-labels-manifest": "routectl's metrics have bounded labels",
    "--disabled-metrics": "routectl exports every metric it has",
    "--show-hidden-metrics-for-version": "routectl hides no metrics",
    "--webhook-bind-address": "routectl runs no webhook server",
    "--webhook-cert-dir": "routectl runs no webhook server",
    "--webhook-disable-http2-serving": "routectl runs no webhook server",
    "--webhook-secure-port": "routectl runs no webhook server",
    "--webhook-tls-cert-file": "routectl runs no webhook server",
    "--webhook-tls-cipher-suites": "routectl runs no webhook server",
    "--webhook-tls-curve-preferences": "routectl runs no webhook server",
    "--webhook-tls-min-version": "routectl runs no webhook server",
    "--webhook-tls-private-key-file": "routectl runs no webhook server",
    "--webhook-tls-sni-cert-key": "routectl runs no webhook server",
    "--webhooks": "routectl runs no webhook server",
}
"""Generic CCM flags routectl accepts and ignores, and why (said once at start-up)."""


def parse_cloud_config(text: str, *, path: str) -> dict[str, str]:
    """Provider options from a ``--cloud-config`` file: ``key = value`` lines, or JSON.

    ``#`` and ``;`` start comments; ``[Section]`` headers (as in the CCM's INI files) are
    allowed and ignored; a key given twice is an error, as for ``--provider-option``. A file
    whose text starts with ``{`` is a JSON object (the Azure CCM's ``azure.json``): each
    member is an option; strings stay as they are, other values are given in JSON
    (``true``, ``30``, ``{"a": "b"}``).
    """
    if text.lstrip().startswith("{"):
        return _json_cloud_config(text, path=path)
    options: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;" or (line.startswith("[") and line.endswith("]")):
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--cloud-config {path}:{number}: expected key = value, got {line!r}")
        if key in options:
            raise ConfigError(f"--cloud-config {path}:{number}: {key!r} is given twice")
        options[key] = value.strip()
    return options


def _json_cloud_config(text: str, *, path: str) -> dict[str, str]:
    """The members of a JSON ``--cloud-config`` object as options (a key twice is an error)."""

    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        found: dict[str, object] = {}
        for key, value in pairs:
            if key in found:
                raise ConfigError(f"--cloud-config {path}: {key!r} is given twice")
            found[key] = value
        return found

    try:
        members = json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"--cloud-config {path}:{exc.lineno}: not valid JSON: {exc.msg}"
        ) from None
    if not isinstance(members, dict):
        raise ConfigError(f"--cloud-config {path}: expected a JSON object")
    return {
        key: value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        for key, value in members.items()
    }

"""The cloud-controller-manager's generic flags that do not concern routes.

Promises: each is accepted with the CCM's syntax, so a CCM command line runs unchanged, and
ignored; :mod:`routectl.cli.dropin` says so once at start-up for each one given. The reason each
is ignored is its help (from :data:`routectl.config.ccm.IGNORED_FLAGS`). Pure: no I/O.
"""

from __future__ import annotations

from typing import TypeAlias, TypeVar

from routectl.config.ccm_syntax import (
    CIPHER_SUITES,
    CURVES,
    INT32,
    IP,
    NAMED_CERT_KEY,
    QUANTITY,
    TLS_VERSION,
    VMODULE,
    maybe,
)
from routectl.config.groups import IGNORED
from routectl.config.option import OPTIONAL_STRING, Syntax, option, settings_dataclass
from routectl.config.syntax import (
    MAX_PORT,
    format_bool,
    format_duration,
    parse_bool,
    parse_duration,
    parse_int,
)

__all__ = ["IgnoredCcmFlags"]

T = TypeVar("T")

MAYBE_BOOL: Syntax[bool | None] = Syntax(
    metavar="BOOL", parse=parse_bool, show=lambda v: "" if v is None else format_bool(v), bare=True
)
MAYBE_DURATION: Syntax[float | None] = Syntax(
    metavar="DURATION", parse=parse_duration, show=lambda v: "" if v is None else format_duration(v)
)
MAYBE_INT: Syntax[int | None] = Syntax(
    metavar="INT", parse=parse_int, show=lambda v: "" if v is None else str(v)
)


def _ignored(syntax: Syntax[T | None]) -> T | None:
    """A CCM flag routectl accepts and ignores (said once at start-up when it is given).

    Its help is the reason in :data:`routectl.config.ccm.IGNORED_FLAGS`, filled in by
    :data:`routectl.config.OPTIONS` once the flag's name is known.
    """
    return option(default=None, syntax=syntax, group=IGNORED, help="ignored")


_Bool: TypeAlias = bool | None
_Duration: TypeAlias = float | None
_Int: TypeAlias = int | None
_Text: TypeAlias = str | None
_Names: TypeAlias = tuple[str, ...] | None
_Ids: TypeAlias = tuple[int, ...] | None
_B, _D, _I, _S = MAYBE_BOOL, MAYBE_DURATION, MAYBE_INT, OPTIONAL_STRING
_I32, _IP, _CERT, _Q = maybe(INT32), maybe(IP), maybe(NAMED_CERT_KEY), maybe(QUANTITY)
_CIPHERS, _CURVES, _VERSION = maybe(CIPHER_SUITES), maybe(CURVES), maybe(TLS_VERSION)


def _webhook_port(text: str) -> int:
    """``--webhook-secure-port`` as the CCM's ``WebhookServingOptions.Validate`` checks it."""
    port = parse_int(text)
    if not 0 <= port <= MAX_PORT:
        raise ValueError(
            f"{port} must be between 0 and {MAX_PORT}, inclusive. A value of 0 disables the "
            "webhook endpoint entirely."
        )
    return port


_PORT = maybe(Syntax(metavar="PORT", parse=_webhook_port, show=str))


@settings_dataclass
class IgnoredCcmFlags:
    """The CCM's flags that do not concern routes: accepted, said once, ignored."""

    allocate_node_cidrs: _Bool = _ignored(_B)
    allow_untagged_cloud: _Bool = _ignored(_B)
    cidr_allocator_type: _Text = _ignored(_S)
    concurrent_node_status_updates: _Int = _ignored(_I32)
    concurrent_node_syncs: _Int = _ignored(_I32)
    concurrent_service_syncs: _Int = _ignored(_I32)
    controller_start_interval: _Duration = _ignored(_D)
    external_cloud_volume_plugin: _Text = _ignored(_S)
    kube_api_content_type: _Text = _ignored(_S)
    master: _Text = _ignored(_S)
    min_resync_period: _Duration = _ignored(_D)
    node_monitor_period: _Duration = _ignored(_D)
    node_status_update_frequency: _Duration = _ignored(_D)
    node_sync_period: _Duration = _ignored(_D)
    use_service_account_credentials: _Bool = _ignored(_B)
    enable_leader_migration: _Bool = _ignored(_B)
    leader_migration_config: _Text = _ignored(_S)
    profiling: _Bool = _ignored(_B)
    contention_profiling: _Bool = _ignored(_B)
    authentication_skip_lookup: _Bool = _ignored(_B)
    authentication_tolerate_lookup_failure: _Bool = _ignored(_B)
    client_ca_file: _Text = _ignored(_S)
    requestheader_client_ca_file: _Text = _ignored(_S)
    requestheader_allowed_names: _Text = _ignored(_S)
    requestheader_extra_headers_prefix: _Text = _ignored(_S)
    requestheader_group_headers: _Text = _ignored(_S)
    requestheader_username_headers: _Text = _ignored(_S)
    requestheader_uid_headers: _Text = _ignored(_S)
    disable_http2_serving: _Bool = _ignored(_B)
    http2_max_streams_per_connection: _Int = _ignored(_I)
    permit_address_sharing: _Bool = _ignored(_B)
    permit_port_sharing: _Bool = _ignored(_B)
    tls_sni_cert_key: _Text = _ignored(_CERT)
    vmodule: _Text = _ignored(maybe(VMODULE))
    log_flush_frequency: _Duration = _ignored(_D)
    log_json_info_buffer_size: _Text = _ignored(_Q)
    log_json_split_stream: _Bool = _ignored(_B)
    log_text_info_buffer_size: _Text = _ignored(_Q)
    log_text_split_stream: _Bool = _ignored(_B)
    allow_metric_labels: _Text = _ignored(_S)
    allow_metric_labels_manifest: _Text = _ignored(_S)
    disabled_metrics: _Text = _ignored(_S)
    show_hidden_metrics_for_version: _Text = _ignored(_S)
    webhook_bind_address: _Text = _ignored(_IP)
    webhook_cert_dir: _Text = _ignored(_S)
    webhook_disable_http2_serving: _Bool = _ignored(_B)
    webhook_secure_port: _Int = _ignored(_PORT)
    webhook_tls_cert_file: _Text = _ignored(_S)
    webhook_tls_cipher_suites: _Names = _ignored(_CIPHERS)
    webhook_tls_curve_preferences: _Ids = _ignored(_CURVES)
    webhook_tls_min_version: _Text = _ignored(_VERSION)
    webhook_tls_private_key_file: _Text = _ignored(_S)
    webhook_tls_sni_cert_key: _Text = _ignored(_CERT)
    webhooks: _Text = _ignored(_S)

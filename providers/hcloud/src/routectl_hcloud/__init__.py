"""routectl-hcloud: the ``hcloud`` route provider (Hetzner Cloud network routes, like hccm).

Install it beside routectl and select it with ``--provider hcloud``. Options
(``--provider-option key=value``): ``network`` (id or name, required), ``endpoint``
(``https://api.hetzner.cloud/v1``), ``token-file`` (else ``HCLOUD_TOKEN``),
``server-cache-seconds`` (30) and ``action-poll-seconds`` (1). The token needs Read & Write.
"""

from __future__ import annotations

from routectl.provider import ProviderFactory
from routectl_hcloud.provider import HcloudProvider

__all__ = ["HcloudProvider"]

_: ProviderFactory = HcloudProvider  # mypy proves the class fits routectl's contract

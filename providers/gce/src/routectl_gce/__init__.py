"""routectl-gce: the ``gce`` route provider (VPC routes on Google Compute Engine).

Install it beside routectl and select it with ``--provider gce`` (or the CCM's
``--cloud-provider=gce --cloud-config=/etc/gce.conf``). Options are the GCE CCM's gce.conf
keys (``project-id``, ``network-name``, ``network-project-id``, ``local-zone``,
``multizone``, ``regional``, ``api-endpoint``, ``token-url``, ``token-body``, ...), plus
``cloud-config`` (read a gce.conf as gcfg does), ``threads`` and ``wait-seconds``.
Credentials are found as the CCM finds them. See :mod:`routectl_gce.provider`.
"""

from __future__ import annotations

from routectl.provider import BudgetedProviderFactory
from routectl_gce.provider import GceProvider

__all__ = ["GceProvider"]

_: BudgetedProviderFactory = GceProvider  # mypy proves the class fits routectl's contract

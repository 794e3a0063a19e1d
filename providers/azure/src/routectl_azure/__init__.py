"""routectl-azure: the ``azure`` route provider (an Azure route table, as the Azure CCM keeps it).

Install it beside routectl and select it with ``--provider azure`` (``--cloud-provider
azure``); point ``--cloud-config`` at the Azure CCM's own ``azure.json``, or give its keys
as ``--provider-option key=value``. See :mod:`routectl_azure.options` for the options and
:mod:`routectl_azure.provider` for what the provider does.
"""

from __future__ import annotations

from routectl.provider import BudgetedProviderFactory
from routectl_azure.provider import AzureProvider

__all__ = ["AzureProvider"]

_: BudgetedProviderFactory = AzureProvider  # mypy proves the class fits routectl's contract

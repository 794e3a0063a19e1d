"""routectl-openstack: the ``openstack`` route provider (routes on a Neutron router).

Install it beside routectl and select it with ``--provider openstack``. Options
(``--provider-option key=value``): ``router-id`` (required), ``node-cidrs`` (required: the
Nodes' subnets; only routes whose next hop lies in them are this cluster's), ``auth-url``
(else ``OS_AUTH_URL``), ``region`` (else ``OS_REGION_NAME``), ``cache-seconds`` (30).
Credentials come from ``OS_USERNAME``/``OS_PASSWORD``/``OS_PROJECT_NAME`` or an application
credential (``OS_APPLICATION_CREDENTIAL_ID``/``_SECRET``). See :mod:`routectl_openstack.provider`.
"""

from __future__ import annotations

from routectl.provider import BudgetedProviderFactory
from routectl_openstack.provider import OpenStackProvider

__all__ = ["OpenStackProvider"]

_: BudgetedProviderFactory = OpenStackProvider  # mypy proves the class fits routectl's contract

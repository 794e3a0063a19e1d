"""The provider contract as an executable pytest suite every provider plugin's tests subclass.

If a plugin passes it, routectl can trust it: every promise of ``docs/writing-a-provider.md``
is one test here, and a failure says what to fix. Usage, in a plugin's tests::

    from routectl.testing.contract import ProviderContract

    class TestMyCloud(ProviderContract):
        @pytest.fixture
        async def cloud(self):                 # a fake of the cloud, over HTTP, with
            async with FakeMyCloud() as fake:  # machines for ``self.nodes``
                self.fake = fake
                yield fake

        def make_provider(self, *, budget):    # a new instance (called again for restarts)
            return MyCloudProvider(cluster_name="contract", options={...}, budget=budget)

        def requests_made(self):               # requests the fake received from the plugin
            return len(self.fake.requests)

        # and: inject_fault, add_foreign_route, cloud_routes, remove_node

The hooks and class attributes are described in :mod:`routectl.testing.contract_base`; the
rules in :mod:`~routectl.testing.contract_routes` (routes and ownership),
:mod:`~routectl.testing.contract_faults` (errors, lost answers, restarts, the budget),
:mod:`~routectl.testing.contract_paths` (every request's errors, lost deletes, concurrency,
cancellation, CIDR spellings, a listing's cost) and
:mod:`~routectl.testing.contract_capabilities` (batched writes and replace, where declared).
"""

from __future__ import annotations

from routectl.testing.contract_base import FAULT_KINDS, FOREIGN_KINDS
from routectl.testing.contract_budget import CountingBudget
from routectl.testing.contract_capabilities import CapabilityRules
from routectl.testing.contract_faults import FaultRules
from routectl.testing.contract_paths import PathRules
from routectl.testing.contract_routes import OwnershipRules, RouteRules

__all__ = ["FAULT_KINDS", "FOREIGN_KINDS", "CountingBudget", "ProviderContract"]


class ProviderContract(RouteRules, OwnershipRules, FaultRules, PathRules, CapabilityRules):
    """Conformance tests for a :class:`~routectl.provider.RouteProvider` plugin."""

"""The reference provider over the shared cloud passes the contract, with and without IPv6."""

from __future__ import annotations

from tests.contract.shared_cloud_contract import SharedCloudContract


class TestReferenceProvider(SharedCloudContract):
    """Every rule holds for the provider that follows the guide."""


class TestReferenceProviderIPv4Only(SharedCloudContract):
    """It refuses IPv6 itself where the cloud does not route it."""

    ipv4_only = True

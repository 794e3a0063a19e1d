"""Parity with kube-controller-manager's RangeAllocator: flags, texts and §1.13's cases.

Upstream's test cases (``range_allocator_test.go``, ``cidr_set_test.go``) ported: the same
inputs give the same pod CIDRs. Where upstream fails construction on a bad Node, routectl
reports a finding and keeps allocating (asserted too)."""

from __future__ import annotations

from typing import Any

import pytest

from routectl.cidr import parse_cidr as net
from routectl.cli.flags import parse_run_flags
from routectl.config import Settings
from routectl.errors import ConfigError
from routectl.ipam.core import Allocator, Pools
from routectl.ipam.core.objects import node_patch
from routectl.model import NodeView


def node(name: str, *cidrs: str, created: str = "2026-01-01T00:00:00Z") -> NodeView:
    return NodeView(name=name, uid=f"uid-{name}", pod_cidrs=cidrs, addresses=(), created=created)


def allocator(clusters: list[str], masks: dict[int, int], service: list[str] = ()) -> Allocator:  # type: ignore[assignment]
    pools = Pools.build(
        cluster_cidrs=[net(c) for c in clusters], masks=masks, exclusions=[net(s) for s in service]
    )
    return Allocator(pools, reuse_delay=0.0)


def first_allocation(a: Allocator, *existing: NodeView) -> list[str]:
    for each in existing:
        a.observe(None, each, now=0.0)
    a.observe(None, node("new", created="2026-02-01T00:00:00Z"), now=0.0)
    found = [x for x in a.plan().allocations if x.node == "new"]
    return [str(c) for x in found for c in x.cidrs]


def test_first_node_gets_the_first_block() -> None:
    a = allocator(["127.123.234.0/24"], {4: 30, 6: 64})
    assert first_allocation(a) == ["127.123.234.0/30"]


def test_service_range_is_skipped() -> None:
    a = allocator(["127.123.234.0/24"], {4: 30, 6: 64}, ["127.123.234.0/26"])
    assert first_allocation(a) == ["127.123.234.64/30"]


def test_preoccupied_blocks_are_skipped() -> None:
    a = allocator(["127.123.234.0/24"], {4: 30, 6: 64}, ["127.123.234.0/26"])
    taken = [
        node(f"o{i}", c)
        for i, c in enumerate(
            ["127.123.234.64/30", "127.123.234.68/30", "127.123.234.72/30", "127.123.234.80/30"]
        )
    ]
    assert first_allocation(a, *taken) == ["127.123.234.76/30"]


def test_full_range_allocates_nothing_and_writes_nothing() -> None:
    a = allocator(["127.123.234.0/28"], {4: 30, 6: 64})
    taken = [node(f"o{i}", f"127.123.234.{4 * i}/30") for i in range(4)]
    assert first_allocation(a, *taken) == []
    (waiting,) = a.plan().waiting
    assert waiting.node == "new"
    assert "no free /30 in 127.123.234.0/28 (4/4 taken" in waiting.message


@pytest.mark.parametrize(
    ("clusters", "expected"),
    [
        (["127.123.234.0/8", "ace:cab:deca::/84"], ["127.0.0.0/24", "ace:cab:deca::/98"]),
        (["ace:cab:deca::/84", "127.123.234.0/8"], ["ace:cab:deca::/98", "127.0.0.0/24"]),
    ],
)
def test_dual_stack_in_both_orders(clusters: list[str], expected: list[str]) -> None:
    a = allocator(clusters, {4: 24, 6: 98})
    assert first_allocation(a) == expected
    assert node_patch([net(c) for c in expected]) == {
        "spec": {"podCIDR": expected[0], "podCIDRs": expected}
    }


def test_no_double_counting() -> None:
    a = allocator(["10.10.0.0/22"], {4: 24, 6: 64})
    existing = [node("a", "10.10.0.0/24"), node("b", "10.10.2.0/24")]
    for each in existing:  # observed twice, as a list and an informer add would
        a.observe(None, each, now=0.0)
    assert first_allocation(a, *existing) == ["10.10.1.0/24"]


def test_a_node_being_deleted_keeps_its_cidr() -> None:
    """A deletionTimestamp is not a deletion: the Node is still in the store."""
    a = allocator(["10.10.0.0/22"], {4: 24, 6: 64})
    existing = [node("a", "10.10.0.0/24"), node("b", "10.10.2.0/24")]
    assert first_allocation(a, *existing) == ["10.10.1.0/24"]


def test_a_deleted_node_releases_its_cidr_after_quarantine() -> None:
    """Upstream reuses at once; here only after the route is gone and the delay passed."""
    a = allocator(["10.10.0.0/22"], {4: 24, 6: 64})
    gone = node("a", "10.10.0.0/24")
    a.observe(None, gone, now=0.0)
    a.observe(gone, None, now=0.0)
    assert first_allocation(a) == ["10.10.1.0/24"]
    b = allocator(["10.10.0.0/22"], {4: 24, 6: 64})
    b.observe(None, gone, now=0.0)
    b.observe(gone, None, now=0.0)
    b.quarantined.listed(frozenset(), at=1.0)
    for network in b.quarantined.reusable(1.0):
        b.free(network)
    assert first_allocation(b) == ["10.10.0.0/24"]


@pytest.mark.parametrize(
    ("clusters", "cidrs"),
    [
        (["10.10.0.0/16"], ["172.10.0.0/24"]),  # single stack incorrect node allocation
        (["10.10.0.0/16"], ["10.10.0.0/24", "ace:cab:deca::/72"]),  # from a non-existing cidr
        (["10.10.0.0/16", "ace:cab:deca::/8"], ["172.10.0.0/24", "ace:cab:deca::/72"]),  # bad v4
        (["10.10.0.0/16", "ace:cab:deca::/8"], ["10.10.0.0/24", "fd00:cab:deca::/72"]),  # bad v6
    ],
)
def test_occupy_pre_existing_cidr_failures_are_findings(
    clusters: list[str], cidrs: list[str]
) -> None:
    """Upstream's TestOccupyPreExistingCIDR cases fail construction; here they are findings."""
    a = allocator(clusters, {4: 24, 6: 80})
    assert first_allocation(a, node("bad", *cidrs))
    assert a.findings["bad"]


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        (
            ["--cluster-cidr=10.0.0.0/16,fd00::/48", "--node-cidr-mask-size=24"],
            "usage of --node-cidr-mask-size is not allowed with dual-stack clusters",
        ),
        (
            [
                "--cluster-cidr=10.0.0.0/16",
                "--node-cidr-mask-size=24",
                "--node-cidr-mask-size-ipv4=24",
            ],
            (
                "usage of --node-cidr-mask-size-ipv4 and --node-cidr-mask-size-ipv6 is not allowed "
                "if --node-cidr-mask-size is set. For dual-stack clusters please unset it and use "
                "IPFamily specific flags"
            ),
        ),
        (
            ["--cluster-cidr=fd00::/48", "--node-cidr-mask-size-ipv4=24"],
            "usage of --node-cidr-mask-size-ipv4 is not allowed for a single-stack IPv6 cluster",
        ),
        (
            ["--cluster-cidr=10.0.0.0/16", "--node-cidr-mask-size-ipv6=64"],
            "usage of --node-cidr-mask-size-ipv6 is not allowed for a single-stack IPv4 cluster",
        ),
        (
            ["--cluster-cidr=10.0.0.0/16", "--node-cidr-mask-size=8"],
            (
                "Controller: Invalid --cluster-cidr, mask size of cluster CIDR must be less than "
                "or equal to --node-cidr-mask-size configured for CIDR family"
            ),
        ),
        (
            ["--cluster-cidr=10.0.0.0/16", "--service-cluster-ip-range=10.96.0.0/12,10.97.0.0/16"],
            "serviceCIDR and secondaryServiceCIDR are not dualstack (from different IPfamiles)",
        ),
        (
            [
                "--cluster-cidr=10.0.0.0/16",
                "--service-cluster-ip-range=10.96.0.0/12,fd00::/108,1.0.0.0/8",
            ],
            "--service-cluster-ip-range can not contain more than two entries",
        ),
        (
            ["--cluster-cidr=10.0.0.0/16", "--service-cluster-ip-range=10.96.0.0"],
            "--service-cluster-ip-range: unsuccessful parsing of service CIDR '10.96.0.0'",
        ),
        (
            ["--cluster-cidr=10.0.0.0/16", "--additional-cluster-cidrs=fd00::/48"],
            "--additional-cluster-cidrs: fd00::/48 is IPv6, a family --cluster-cidr does not have",
        ),
        (
            ["--cluster-cidr=10.0.0.0/16", "--additional-cluster-cidrs=10.0.128.0/17"],
            "pod CIDR pools 10.0.0.0/16 and 10.0.128.0/17 overlap; give each once",
        ),
    ],
)
def test_kcm_validation_messages(flags: list[str], error: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_run_flags(["--provider=fake", "--routectl-allocate-node-cidrs", *flags])
    assert str(caught.value) == error


def test_defaults_are_kcms() -> None:
    s: Any = parse_run_flags(["--provider=fake", "--cluster-cidr=10.0.0.0/8,fd00::/32"])
    assert s.routectl_allocate_node_cidrs is False
    assert s.node_masks == {4: 24, 6: 64}
    assert s.pod_cidr_reuse_delay == 300.0
    assert s.pod_cidr_claims == "lease"
    assert isinstance(s, Settings)


def test_allocation_needs_route_configuration() -> None:
    with pytest.raises(ConfigError, match="needs --configure-cloud-routes=true"):
        parse_run_flags(
            [
                "--provider=fake",
                "--cluster-cidr=10.0.0.0/16",
                "--routectl-allocate-node-cidrs",
                "--configure-cloud-routes=false",
            ]
        )

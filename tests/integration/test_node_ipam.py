"""Node IPAM end to end: the real service over real HTTP to the fake API server, the
simulated cloud, loop time fast-forwarded. Assertions are on what the API server and the
cloud hold: Node pod CIDRs, claim Leases, Events, routes, conditions."""

from __future__ import annotations

import asyncio
from ipaddress import ip_network
from typing import Any

import pytest

from tests.integration.conftest import Cluster, eventually, node_object

pytestmark = [pytest.mark.integration, pytest.mark.looptime]

NS = "kube-system"


def ipam(**overrides: Any) -> dict[str, Any]:
    """Settings with node IPAM on: one IPv4 /24 pool cut into /26 blocks (4 Nodes)."""
    base: dict[str, Any] = {
        "routectl_allocate_node_cidrs": True,
        "cluster_cidrs": (ip_network("10.244.0.0/24"),),
        "node_cidr_mask_size": 26,
        "pod_cidr_reuse_delay": 60.0,
    }
    return base | overrides


def pod_cidrs(cluster: Cluster, name: str) -> list[str]:
    return list(cluster.server.get_node(name)["spec"].get("podCIDRs") or [])


def claims(cluster: Cluster) -> dict[str, str]:
    """Claim Lease name -> holder."""
    return {
        lease["metadata"]["name"]: lease["spec"].get("holderIdentity", "")
        for lease in cluster.server.leases()
        if lease["metadata"].get("labels", {}).get("routectl.io/pod-cidr-claim") == "true"
    }


def events(cluster: Cluster, reason: str) -> list[dict[str, Any]]:
    return [e for e in cluster.server.events() if e["reason"] == reason]


async def test_new_node_gets_cidr_claim_route_and_condition_in_one_sync(cluster: Cluster) -> None:
    """A Node registering without a pod CIDR is ready after one sync and no extra listing."""
    running = await cluster.start(**ipam())
    await eventually(lambda: running.service.controller.syncs >= 1)
    syncs, lists = running.service.controller.syncs, cluster.cloud.count("list")
    cluster.server.create_node(node_object("n1"))
    await eventually(lambda: cluster.condition("n1") == ("False", "RouteCreated"))
    assert pod_cidrs(cluster, "n1") == ["10.244.0.0/26"]
    assert cluster.server.get_node("n1")["spec"]["podCIDR"] == "10.244.0.0/26"
    assert cluster.routes() == {("n1", "10.244.0.0/26")}
    assert claims(cluster) == {"podcidr-v4-10-244-0-0-26": "n1"}
    assert running.service.controller.syncs == syncs + 1
    assert cluster.cloud.count("list") == lists
    patches = [
        r for r in cluster.server.requests if r.method == "PATCH" and r.path == "/api/v1/nodes/n1"
    ]
    assert [r.json() for r in patches] == [
        {"spec": {"podCIDR": "10.244.0.0/26", "podCIDRs": ["10.244.0.0/26"]}}
    ]
    assert patches[0].content_type == "application/strategic-merge-patch+json"


async def test_restart_between_claim_and_patch_resumes_to_the_claimed_cidr(
    cluster: Cluster,
) -> None:
    """A process that claimed a CIDR but could not patch the Node: its successor writes the
    claimed CIDR, not a new one, and makes no second claim."""
    cluster.server.forbid(verb="patch", resource="nodes")
    first = await cluster.start(**ipam())
    cluster.server.create_node(node_object("n1"))
    await eventually(lambda: claims(cluster) == {"podcidr-v4-10-244-0-0-26": "n1"})
    await eventually(lambda: len(events(cluster, "CIDRAssignmentFailed")) == 1)
    assert pod_cidrs(cluster, "n1") == []
    await first.stop()
    # Meanwhile the lowest block goes elsewhere: only the claim can bring n1 back to it.
    cluster.server.allow(verb="patch", resource="nodes")
    second = await cluster.start(identity="routectl-b", **ipam())
    await eventually(lambda: pod_cidrs(cluster, "n1") == ["10.244.0.0/26"])
    await eventually(lambda: cluster.condition("n1") == ("False", "RouteCreated"))
    assert claims(cluster) == {"podcidr-v4-10-244-0-0-26": "n1"}
    creates = [r for r in cluster.server.requests if r.method == "POST" and "leases" in r.path]
    assert len(creates) == 1
    assert second.service.controller.ipam is not None


async def test_a_claim_left_by_a_crash_wins_over_the_lowest_free_block(cluster: Cluster) -> None:
    """State is a function of the API: a claim for a pending Node (same UID) is resumed."""
    node = cluster.server.create_node(node_object("n1"))
    cluster.server.create_lease(
        {
            "metadata": {
                "name": "podcidr-v4-10-244-0-128-26",
                "namespace": NS,
                "labels": {"routectl.io/pod-cidr-claim": "true"},
                "annotations": {
                    "routectl.io/pod-cidr": "10.244.0.128/26",
                    "routectl.io/node-uid": node["metadata"]["uid"],
                    "routectl.io/pool": "10.244.0.0/24",
                },
            },
            "spec": {"holderIdentity": "n1"},
        }
    )
    await cluster.start(**ipam())
    await eventually(lambda: pod_cidrs(cluster, "n1") == ["10.244.0.128/26"])
    cluster.server.create_node(node_object("n2"))
    await eventually(lambda: pod_cidrs(cluster, "n2") == ["10.244.0.0/26"])


async def test_exhaustion_one_warning_per_waiting_node_and_fifo_reuse_after_quarantine(
    cluster: Cluster,
) -> None:
    """6 Nodes, 4 blocks: 2 wait with one CIDRNotAvailable each, however long they wait.
    A deleted Node's block goes to the oldest waiting Node, only after its route is gone
    and the reuse delay passed."""
    running = await cluster.start(**ipam())
    for i in range(6):
        cluster.server.create_node(node_object(f"n{i}"))
        await asyncio.sleep(1)
    await eventually(lambda: len(cluster.routes()) == 4)
    await eventually(lambda: len(events(cluster, "CIDRNotAvailable")) == 2)
    waiting = {e["involvedObject"]["name"] for e in events(cluster, "CIDRNotAvailable")}
    assert waiting == {"n4", "n5"}
    (event,) = [
        e for e in events(cluster, "CIDRNotAvailable") if e["involvedObject"]["name"] == "n4"
    ]
    assert event["type"] == "Warning"
    assert event["message"].startswith("Node n4 status is now: CIDRNotAvailable: no free /26")
    assert "--additional-cluster-cidrs" in event["message"]
    await eventually(lambda: cluster.condition("n4") == ("True", "NoRouteCreated"))
    for _ in range(5):  # more syncs, a resync: no more Events
        running.service.queue.request(trigger="periodic", fresh_listing=True)
        await asyncio.sleep(20)
    assert len(events(cluster, "CIDRNotAvailable")) == 2
    freed = pod_cidrs(cluster, "n1")
    cluster.server.delete_node("n1")
    await eventually(lambda: ("n1", freed[0]) not in cluster.routes())
    gone = asyncio.get_running_loop().time()
    await eventually(lambda: pod_cidrs(cluster, "n4") == freed, within=300)
    assert asyncio.get_running_loop().time() - gone >= 60.0
    assert pod_cidrs(cluster, "n5") == []
    await eventually(lambda: ("n4", freed[0]) in cluster.routes())
    assert len(events(cluster, "CIDRNotAvailable")) == 2


async def test_dual_stack_with_ipv6_exhausted_leaves_ipv4_untouched(cluster: Cluster) -> None:
    """All families or none: a full IPv6 pool costs no IPv4 block, however often retried."""
    running = await cluster.start(
        **ipam(
            cluster_cidrs=(ip_network("10.244.0.0/24"), ip_network("fd00:10:244::/64")),
            node_cidr_mask_size=0,
            node_cidr_mask_size_ipv4=26,
        )
    )
    cluster.server.create_node(node_object("n1"))
    await eventually(lambda: pod_cidrs(cluster, "n1") == ["10.244.0.0/26", "fd00:10:244::/64"])
    cluster.server.create_node(node_object("n2"))
    await eventually(lambda: len(events(cluster, "CIDRNotAvailable")) == 1)
    for _ in range(10):
        running.service.queue.request(trigger="node_change")
        await asyncio.sleep(5)
    assert pod_cidrs(cluster, "n2") == []
    assert set(claims(cluster)) == {"podcidr-v4-10-244-0-0-26", "podcidr-v6-fd00-10-244---64"}
    state = running.service.controller.ipam.state  # type: ignore[union-attr]
    assert state is not None
    assert state.space.free_blocks(ip_network("10.244.0.0/24"), 26) == 3


async def test_bad_nodes_at_start_up_do_not_stop_allocation(cluster: Cluster) -> None:
    """Out of range, wrong family, non-canonical, duplicate and overlapping pod CIDRs are
    findings; healthy Nodes still get CIDRs that overlap none of them."""
    cluster.server.create_node(node_object("out", "192.168.7.0/24"))
    cluster.server.create_node(node_object("v6", "fd00:99::/64"))
    cluster.server.create_node(node_object("sloppy", "10.244.0.65/26"))
    cluster.server.create_node(node_object("dup-a", "10.244.0.128/26"))
    cluster.server.create_node(node_object("dup-b", "10.244.0.128/26"))
    cluster.server.create_node(node_object("wide", "10.244.0.0/25"))
    cluster.server.create_node(node_object("healthy"))
    running = await cluster.start(**ipam(node_cidr_mask_size=27))
    await eventually(lambda: pod_cidrs(cluster, "healthy") == ["10.244.0.192/27"])
    await eventually(lambda: cluster.condition("healthy") == ("False", "RouteCreated"))
    await eventually(lambda: len(events(cluster, "PodCIDRNotCanonical")) == 1)
    state = running.service.controller.ipam.state  # type: ignore[union-attr]
    assert state is not None
    reasons = {(n, f.reason) for n, fs in state.findings.items() for f in fs}
    assert {
        ("out", "PodCIDROutOfRange"),
        ("v6", "PodCIDRWrongFamily"),
        ("sloppy", "PodCIDRNotCanonical"),
        ("dup-a", "PodCIDRConflict"),
        ("dup-b", "PodCIDRConflict"),
        ("wide", "PodCIDRConflict"),
    } <= reasons
    assert state.conflicts == 4  # dup-a, dup-b, wide, and sloppy (inside wide)
    assert events(cluster, "ClusterCIDRMisconfigured")  # the route planner's, for "out"
    assert running.service.ready()[0]


async def test_service_ranges_and_servicecidr_objects_are_never_handed_out(
    cluster: Cluster,
) -> None:
    """--service-cluster-ip-range and networking.k8s.io/v1 ServiceCIDRs are exclusions."""
    cluster.server.create_service_cidr("extra", "10.244.0.64/26")
    await cluster.start(**ipam(service_cluster_ip_range=(ip_network("10.244.0.0/26"),)))
    cluster.server.create_node(node_object("n1"))
    await eventually(lambda: pod_cidrs(cluster, "n1") == ["10.244.0.128/26"])


async def test_blocks_past_their_quarantine_serve_a_new_node_without_a_false_alarm(
    cluster: Cluster,
) -> None:
    """Churn with room to spare: two of three Nodes leave, their blocks sit in quarantine
    past the reuse delay. The listing that confirms the deletes (a few seconds after them)
    shows the routes gone, so once the delay is over the freed blocks serve new Nodes with
    no CIDRNotAvailable, no PodCIDRPoolFilling, and never a block the cloud still routes."""
    running = await cluster.start(**ipam())
    for name in ("keep", "n0", "n1"):
        cluster.server.create_node(node_object(name))
    await eventually(lambda: len(cluster.routes()) == 3)
    freed = {c for name in ("n0", "n1") for c in pod_cidrs(cluster, name)}
    for name in ("n0", "n1"):
        cluster.server.delete_node(name)
    await eventually(lambda: len(cluster.routes()) == 1)
    await asyncio.sleep(120)  # past the 60 s reuse delay; no Node waits, so no listing
    cluster.server.create_node(node_object("n2"))
    await eventually(lambda: len(cluster.routes()) == 2)
    cluster.server.create_node(node_object("n3"))
    await eventually(lambda: cluster.condition("n3") == ("False", "RouteCreated"))
    given = {pod_cidrs(cluster, name)[0] for name in ("n2", "n3")}
    assert len(given) == 2
    assert given & freed  # the pool of four holds one never-used block: a freed one served
    assert {cidr for _, cidr in cluster.routes()} == {*given, *pod_cidrs(cluster, "keep")}
    assert events(cluster, "CIDRNotAvailable") == []
    assert events(cluster, "PodCIDRPoolFilling") == []
    assert running.service.controller.ipam is not None


async def test_block_counts_follow_a_reuse_without_another_sync(cluster: Cluster) -> None:
    """A waiting Node gets a block freed from quarantine in a sync that counted the blocks
    moments before: the counts are owed, and set when the interval is up, with no sync."""
    running = await cluster.start(**ipam())
    for i in range(5):
        cluster.server.create_node(node_object(f"n{i}"))
        await asyncio.sleep(1)
    await eventually(lambda: len(events(cluster, "CIDRNotAvailable")) == 1)
    freed = pod_cidrs(cluster, "n1")
    cluster.server.delete_node("n1")
    await eventually(lambda: ("n1", freed[0]) not in cluster.routes())
    await asyncio.sleep(55)  # a sync counts the blocks 5 s before the reuse delay is up
    running.service.queue.request(trigger="periodic")
    await eventually(lambda: pod_cidrs(cluster, "n4") == freed, within=300)
    syncs = running.service.controller.syncs
    registry = running.service.metrics.registry

    def blocks(state: str) -> float | None:
        labels = {"pool": "10.244.0.0/24", "family": "IPv4", "state": state}
        return registry.get_sample_value("routectl_ipam_blocks", labels)

    await eventually(lambda: (blocks("used"), blocks("quarantined")) == (4.0, 0.0), within=30)
    assert blocks("free") == 0.0
    assert running.service.controller.syncs <= syncs + 1  # n4's own echo, at most


def kcm_patch(cluster: Cluster, name: str, cidr: str) -> None:
    """What kube-controller-manager's range allocator writes to a Node."""
    cluster.server.patch_node(name, {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}})


async def test_migration_adopts_kcms_allocations_as_they_are(cluster: Cluster) -> None:
    """Nodes KCM gave pod CIDRs before routectl started keep them, with no claim, no
    Event and no stop; a new Node gets a block none of them has."""
    for i, cidr in enumerate(("10.244.0.64/26", "10.244.0.192/26")):
        cluster.server.create_node(node_object(f"kcm{i}", cidr))
    running = await cluster.start(**ipam())
    await eventually(lambda: len(cluster.routes()) == 2)
    cluster.server.create_node(node_object("new"))
    await eventually(lambda: cluster.condition("new") == ("False", "RouteCreated"))
    assert pod_cidrs(cluster, "new") == ["10.244.0.0/26"]
    assert pod_cidrs(cluster, "kcm0") == ["10.244.0.64/26"]
    assert pod_cidrs(cluster, "kcm1") == ["10.244.0.192/26"]
    assert claims(cluster) == {"podcidr-v4-10-244-0-0-26": "new"}
    assert events(cluster, "OtherPodCIDRAllocator") == []
    assert running.service.ready() == (True, "ok")


async def test_another_allocator_stops_routectls_allocation(cluster: Cluster, caplog) -> None:
    """KCM's allocator left on: its first write in routectl's pool stops routectl's
    allocation (ERROR, Events, metric, /readyz); routes still follow; no Node is given a
    CIDR by routectl afterwards, and KCM's CIDR is never handed out again."""
    running = await cluster.start(**ipam())
    cluster.server.create_node(node_object("first"))
    await eventually(lambda: pod_cidrs(cluster, "first") == ["10.244.0.0/26"])
    cluster.server.create_node(node_object("by-kcm"))
    kcm_patch(cluster, "by-kcm", "10.244.0.64/26")  # before routectl's sync gets to it
    await eventually(lambda: len(events(cluster, "OtherPodCIDRAllocator")) == 2)
    ipam_ = running.service.controller.ipam
    assert ipam_ is not None
    assert ipam_.stopped is not None
    assert "node by-kcm got pod CIDR 10.244.0.64/26" in ipam_.stopped
    ready, why = running.service.ready()
    assert not ready
    assert why.startswith("node IPAM stopped: node by-kcm got pod CIDR 10.244.0.64/26")
    kinds = {e["involvedObject"]["kind"] for e in events(cluster, "OtherPodCIDRAllocator")}
    assert kinds == {"Node", "Lease"}
    assert all(e["type"] == "Warning" for e in events(cluster, "OtherPodCIDRAllocator"))
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert [r.getMessage().split(":")[0] for r in errors] == ["Node IPAM stopped"]
    other = running.service.metrics.registry.get_sample_value("routectl_ipam_other_allocator")
    assert other == 1
    await eventually(lambda: ("by-kcm", "10.244.0.64/26") in cluster.routes())
    assert pod_cidrs(cluster, "by-kcm") == ["10.244.0.64/26"]
    assert claims(cluster) == {"podcidr-v4-10-244-0-0-26": "first"}
    cluster.server.create_node(node_object("later"))
    await asyncio.sleep(30)
    assert pod_cidrs(cluster, "later") == []
    assert len(events(cluster, "OtherPodCIDRAllocator")) == 2  # said once


async def test_a_write_of_its_own_seen_late_is_not_another_allocator(cluster: Cluster) -> None:
    """A Node registered with a pod CIDR that routectl's own claim covers (a predecessor's
    write) is routectl's: no stop."""
    running = await cluster.start(**ipam())
    cluster.server.create_node(node_object("first"))
    await eventually(lambda: pod_cidrs(cluster, "first") == ["10.244.0.0/26"])
    node = cluster.server.create_node(node_object("n2"))
    cluster.server.create_lease(
        {
            "metadata": {
                "name": "podcidr-v4-10-244-0-128-26",
                "namespace": NS,
                "labels": {"routectl.io/pod-cidr-claim": "true"},
                "annotations": {
                    "routectl.io/pod-cidr": "10.244.0.128/26",
                    "routectl.io/node-uid": node["metadata"]["uid"],
                    "routectl.io/pool": "10.244.0.0/24",
                },
            },
            "spec": {"holderIdentity": "n2"},
        }
    )
    kcm_patch(cluster, "n2", "10.244.0.128/26")
    await eventually(lambda: ("n2", "10.244.0.128/26") in cluster.routes())
    cluster.server.create_node(node_object("n3"))
    await eventually(lambda: pod_cidrs(cluster, "n3") == ["10.244.0.64/26"])
    assert running.service.controller.ipam is not None
    assert running.service.controller.ipam.stopped is None
    assert events(cluster, "OtherPodCIDRAllocator") == []

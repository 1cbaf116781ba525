"""Karpenter's objects kept in step with Longshore, through the real kubernetes client and the API emulator:
pool and class status from the merge's verdicts, NodeClaim objects mirroring claim records."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from longshore.adapters.kube.cluster import KubeCluster
from longshore.adapters.kube.karpenter import KubeKarpenterObjects
from longshore.config.cluster_objects import merge_cluster_objects
from longshore.core.claims import NodeClaim
from longshore.core.karpenter_objects import ClaimFlags, PoolUsage
from longshore.services.karpenter_sync import KarpenterObjectSync
from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import KubeApiEmulator
from tests.fakes import FakeWorkflow

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "tests" / "sim" / "kubectl" / "nodepool.yaml"


@pytest.fixture
def world() -> Iterator[tuple[KubeApiEmulator, KubeKarpenterObjects, KarpenterObjectSync, VirtualClock]]:
    clock = VirtualClock(start=1_700_000_000.0)
    with KubeApiEmulator(clock=clock) as emulator:
        api = emulator.api_client()
        objects = KubeKarpenterObjects(api, sleep=clock.sleep)
        sync = KarpenterObjectSync(objects, KubeCluster(api, sleep=clock.sleep, now=clock.now), clock)
        yield emulator, objects, sync, clock
        api.close()


def seed(emulator: KubeApiEmulator, *, operator: str = "In") -> None:
    for doc in yaml.safe_load_all(MANIFESTS.read_text()):
        if doc["kind"] == "NodePool":
            doc["spec"]["template"]["spec"]["requirements"][0]["operator"] = operator
        plural = "nodepools" if doc["kind"] == "NodePool" else "ec2nodeclasses"
        emulator.store.create(plural, doc)


def merged(objects: KubeKarpenterObjects):  # type: ignore[no-untyped-def]
    cluster = {
        "apiVersion": "longshore.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "demo"},
        "spec": {"poolSource": "cluster"},
    }
    listed = [*objects.list_objects("EC2NodeClass"), *objects.list_objects("NodePool")]
    return merge_cluster_objects(
        yaml.safe_dump(cluster), "ssm:/demo", listed, region="us-east-1", cluster_name="demo"
    )


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == kind)


def test_valid_pool_and_class_become_ready_with_resources(world) -> None:  # type: ignore[no-untyped-def]
    emulator, objects, sync, _ = world
    seed(emulator)
    result = merged(objects)
    assert [p.name for p in result.config.node_pools] == ["default"]
    assert (
        sync.publish_pools(
            result.verdicts, {"default": PoolUsage(nodes=2, cpu_millis=4000, memory_bytes=16 * 1024**3)}
        )
        == 2
    )
    pool = emulator.store.get("nodepools", "default")
    assert condition(pool, "Ready")["status"] == "True"
    assert pool["status"]["resources"] == {"nodes": "2", "cpu": "4", "memory": "16384Mi"}
    assert condition(emulator.store.get("ec2nodeclasses", "default"), "Ready")["status"] == "True"
    # a second pass with nothing new writes nothing
    assert (
        sync.publish_pools(
            result.verdicts, {"default": PoolUsage(nodes=2, cpu_millis=4000, memory_bytes=16 * 1024**3)}
        )
        == 0
    )


def test_an_invalid_pool_gets_ready_false_with_the_field_and_value_and_a_warning_event(world) -> None:  # type: ignore[no-untyped-def]
    emulator, objects, sync, _ = world
    seed(emulator, operator="Within")
    result = merged(objects)
    assert result.config.node_pools == ()
    sync.publish_pools(result.verdicts, {})
    ready = condition(emulator.store.get("nodepools", "default"), "Ready")
    assert ready["status"] == "False"
    assert "operator" in ready["message"] and "Within" in ready["message"]
    events = emulator.store.list("events", None)
    assert [(e["reason"], e["type"]) for e in events] == [("InvalidNodePool", "Warning")]
    assert "Within" in events[0]["message"]


def claim(state: str = "initialized") -> NodeClaim:
    return NodeClaim(
        id="default-abc12",
        nodepool="default",
        node_class="default",
        instance_type="m5.large",
        zone="us-east-1a",
        capacity_type="spot",
        instance_id="i-0123",
        provider_id="aws:///us-east-1a/i-0123",
        node_name="ip-10-0-0-9.ec2.internal",
        state=state,  # type: ignore[arg-type]
        launched_at=1_700_000_000.0,
        registered_at=1_700_000_030.0,
        initialized_at=1_700_000_040.0 if state == "initialized" else None,
    )


def test_claim_records_are_mirrored_as_nodeclaims_and_released_when_the_record_goes(world) -> None:  # type: ignore[no-untyped-def]
    emulator, _, sync, clock = world
    first = sync.publish_claims([claim()], {})
    assert first.written == ("default-abc12",)
    obj = emulator.store.get("nodeclaims", "default-abc12")
    assert obj["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "m5.large"
    assert obj["status"]["providerID"] == "aws:///us-east-1a/i-0123"
    assert condition(obj, "Ready")["status"] == "True"
    assert condition(obj, "Launched")["lastTransitionTime"] == "2023-11-14T22:13:20Z"
    clock.advance(60)
    # unchanged: nothing written, and flags change only their own conditions
    assert sync.publish_claims([claim()], {}).written == ()
    flagged = sync.publish_claims([claim()], {"default-abc12": ClaimFlags(drifted="AMIDrift")})
    assert flagged.written == ("default-abc12",)
    obj = emulator.store.get("nodeclaims", "default-abc12")
    assert condition(obj, "Drifted")["status"] == "True"
    assert condition(obj, "Launched")["lastTransitionTime"] == "2023-11-14T22:13:20Z"
    # a user deletes the NodeClaim: the finalizer holds it and the caller is told to disrupt the node
    emulator.store.delete("nodeclaims", "default-abc12")
    assert sync.publish_claims([claim()], {}).deleting == ("default-abc12",)
    # the record goes (node terminated): the object is released
    assert sync.publish_claims([], {}).released == ("default-abc12",)
    assert emulator.store.list("nodeclaims", None) == []


def test_nodeclaims_longshore_did_not_write_are_left_alone(world) -> None:  # type: ignore[no-untyped-def]
    emulator, _, sync, _ = world
    emulator.store.create("nodeclaims", {"metadata": {"name": "karpenters-own"}, "spec": {}})
    assert sync.publish_claims([], {}).released == ()
    assert [o["metadata"]["name"] for o in emulator.store.list("nodeclaims", None)] == ["karpenters-own"]


def test_a_deleted_nodeclaim_starts_the_drain_kubectl_delete_node_starts(world) -> None:  # type: ignore[no-untyped-def]
    from longshore.core.commands import DisruptionCommand
    from longshore.services.karpenter_sync import publish

    emulator, _, sync, clock = world
    workflow = FakeWorkflow()
    launching = NodeClaim(id="default-new", nodepool="default", node_class="default", state="launched")
    publish(sync, [claim(), launching], (), workflow, clock.now())
    assert workflow.commands == [], "nothing is deleted yet"
    emulator.store.delete("nodeclaims", "default-abc12")  # kubectl delete nodeclaim default-abc12
    assert emulator.store.get("nodeclaims", "default-abc12")["metadata"]["deletionTimestamp"]

    publish(sync, [claim(), launching], (), workflow, clock.now())
    publish(sync, [claim(), launching], (), workflow, clock.now())  # every pass while the object lingers

    (command, again) = workflow.commands
    assert (command.reason, command.instance_id, command.node_name, command.claim_id) == (
        "deleted",
        "i-0123",
        "ip-10-0-0-9.ec2.internal",
        "default-abc12",
    )
    assert not command.replace, "like Karpenter: pods that need a node get one from the provisioner"
    # the same execution as `kubectl delete node` of that node (`services.lifecycle`): deleting both starts
    # one drain, and a start while it runs is a no-op
    by_node = DisruptionCommand(
        "i-0123", "deleted", node_name=command.node_name, requested_at=clock.now() + 60
    )
    assert again.execution_name() == command.execution_name() == by_node.execution_name() == "deleted-i-0123"
    # the workflow forgets the claim at its end; the object is then released
    assert "default-abc12" in publish(sync, [launching], (), workflow, clock.now()).released
    assert [o["metadata"]["name"] for o in emulator.store.list("nodeclaims", None)] == ["default-new"]
    assert len(workflow.commands) == 2, "a launched claim without an instance has nothing to drain"


def test_a_node_class_whose_reservations_cannot_be_read_shows_it_and_is_not_ready(world) -> None:  # type: ignore[no-untyped-def]
    emulator, objects, sync, clock = world
    seed(emulator)
    result = merged(objects)
    sync.publish_pools(result.verdicts, {})
    cls = emulator.store.get("ec2nodeclasses", "default")
    assert condition(cls, "CapacityReservationsReady")["status"] == "True"  # no terms: resolved
    problem = (
        "capacityReservationSelectorTerms[0]: DescribeCapacityReservations failed: UnauthorizedOperation"
    )
    clock.advance(30)
    assert sync.publish_pools(result.verdicts, {}, {}, {"default": problem}) == 1
    cls = emulator.store.get("ec2nodeclasses", "default")
    failed = condition(cls, "CapacityReservationsReady")
    assert (failed["status"], failed["reason"], failed["message"]) == (
        "False",
        "CapacityReservationResolutionFailed",
        problem,
    )
    assert (condition(cls, "Ready")["status"], condition(cls, "Ready")["message"]) == ("False", problem)
    # the pool's NodeClassReady follows the class's validation: Longshore keeps provisioning it
    assert condition(emulator.store.get("nodepools", "default"), "NodeClassReady")["status"] == "True"
    assert sync.publish_pools(result.verdicts, {}, {}, {"default": problem}) == 0  # nothing new, no write

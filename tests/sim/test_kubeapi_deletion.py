"""DELETE through the real client on the emulator's virtual clock: grace periods, finalizers, garbage collection.

Matrix: a scheduled pod lingers with deletionTimestamp for its terminationGracePeriodSeconds (default 30 s)
and disappears once the clock passes it; grace 0 and unscheduled pods go at once; a shorter second delete
shortens the wait; finalizers hold any object until removed; preconditions; ReplicaSet deletion with
Background, Foreground and Orphan propagation; namespace deletion removes its contents.
"""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import KubeApiEmulator
from tests.sim import manifests


def _exists(core: client.CoreV1Api, name: str, namespace: str = "default") -> bool:
    try:
        core.read_namespaced_pod(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


@pytest.fixture
def scheduled(emulator: KubeApiEmulator, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", manifests.pod("p"))
    emulator.store.bind("default", "p", "n1")


@pytest.mark.usefixtures("scheduled")
def test_scheduled_pod_lingers_for_its_default_grace_period(
    core: client.CoreV1Api, clock: VirtualClock
) -> None:
    deleted = core.delete_namespaced_pod("p", "default")
    assert deleted.metadata.deletion_grace_period_seconds == 30
    assert deleted.metadata.deletion_timestamp.isoformat() == "2026-01-01T00:00:30+00:00"
    clock.advance(29)
    assert _exists(core, "p")
    clock.advance(1)
    assert not _exists(core, "p")


@pytest.mark.usefixtures("scheduled")
def test_grace_period_zero_deletes_at_once(core: client.CoreV1Api) -> None:
    core.delete_namespaced_pod("p", "default", grace_period_seconds=0)
    assert not _exists(core, "p")


def test_unscheduled_pod_is_deleted_at_once(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", manifests.pod("pending"))
    core.delete_namespaced_pod("pending", "default")
    assert not _exists(core, "pending")


@pytest.mark.usefixtures("scheduled")
def test_second_delete_can_shorten_the_grace_period(core: client.CoreV1Api, clock: VirtualClock) -> None:
    core.delete_namespaced_pod("p", "default", body=client.V1DeleteOptions(grace_period_seconds=600))
    clock.advance(10)
    core.delete_namespaced_pod("p", "default", grace_period_seconds=5)
    clock.advance(5)
    assert not _exists(core, "p")


def test_finalizers_hold_an_object_until_removed(core: client.CoreV1Api, clock: VirtualClock) -> None:
    node = manifests.node("n1")
    node["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    core.create_node(node)
    core.delete_node("n1")
    clock.advance(3600)
    lingering = core.read_node("n1")
    assert lingering.metadata.deletion_timestamp is not None
    core.patch_node("n1", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["karpenter.sh/termination"]}})
    assert core.list_node().items == []


def test_no_new_finalizers_on_an_object_being_deleted(core: client.CoreV1Api) -> None:
    node = manifests.node("n1")
    node["metadata"]["finalizers"] = ["a"]
    core.create_node(node)
    core.delete_node("n1")
    with pytest.raises(ApiException) as caught:
        core.patch_node("n1", {"metadata": {"finalizers": ["b"]}})
    assert caught.value.status == 403


def test_delete_precondition_on_uid(core: client.CoreV1Api) -> None:
    core.create_node(manifests.node("n1"))
    with pytest.raises(ApiException) as caught:
        core.delete_node("n1", body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other")))
    assert caught.value.status == 409
    assert [n.metadata.name for n in core.list_node().items] == ["n1"]


def _replicaset_with_pods(emulator: KubeApiEmulator, count: int) -> None:
    rs = emulator.store.create("replicasets", manifests.replicaset("web", count))
    for i in range(count):
        emulator.store.create(
            "pods", manifests.pod(f"web-{i}", labels={"app": "web"}, owner=manifests.owner_ref(rs))
        )


def test_background_deletion_collects_dependent_pods(
    emulator: KubeApiEmulator, apps: client.AppsV1Api, core: client.CoreV1Api
) -> None:
    _replicaset_with_pods(emulator, 3)
    apps.delete_namespaced_replica_set("web", "default", propagation_policy="Background")
    assert core.list_namespaced_pod("default").items == []


def test_orphan_deletion_keeps_pods_without_owner(
    emulator: KubeApiEmulator, apps: client.AppsV1Api, core: client.CoreV1Api
) -> None:
    _replicaset_with_pods(emulator, 2)
    apps.delete_namespaced_replica_set("web", "default", propagation_policy="Orphan")
    pods = core.list_namespaced_pod("default").items
    assert [(p.metadata.name, p.metadata.owner_references) for p in pods] == [
        ("web-0", None),
        ("web-1", None),
    ]


def test_foreground_deletion_waits_for_dependents(
    emulator: KubeApiEmulator, apps: client.AppsV1Api, core: client.CoreV1Api, clock: VirtualClock
) -> None:
    # GIVEN a ReplicaSet whose pods are running on a node (so they terminate gracefully)
    _replicaset_with_pods(emulator, 2)
    for i in range(2):
        emulator.store.bind("default", f"web-{i}", "n1")
    # WHEN it is deleted in the foreground
    apps.delete_namespaced_replica_set("web", "default", propagation_policy="Foreground")
    # THEN it lingers with the foregroundDeletion finalizer while its pods terminate, and goes with them
    owner = apps.read_namespaced_replica_set("web", "default")
    assert owner.metadata.finalizers == ["foregroundDeletion"]
    assert all(p.metadata.deletion_timestamp for p in core.list_namespaced_pod("default").items)
    clock.advance(30)
    assert core.list_namespaced_pod("default").items == []
    assert apps.list_namespaced_replica_set("default").items == []


def test_namespace_deletion_removes_its_contents(core: client.CoreV1Api, apps: client.AppsV1Api) -> None:
    core.create_namespace({"metadata": {"name": "team"}})
    apps.create_namespaced_deployment("team", manifests.deployment("web", 1, namespace="team"))
    core.create_namespaced_pod("team", manifests.pod("p", namespace="team"))
    core.delete_namespace("team")
    assert apps.list_namespaced_deployment("team").items == []
    assert "team" not in {n.metadata.name for n in core.list_namespace().items}

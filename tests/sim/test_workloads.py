"""Workload controllers on the store: Deployments, ReplicaSets, DaemonSets and pod garbage collection.

Matrix: scaling a Deployment up and down (`kubectl scale`), a template change making a new ReplicaSet and
retiring the old one, scale-down deleting unscheduled pods before running ones, status counts, a DaemonSet pod
per admitted node (nodeSelector and taints, with the controller's automatic tolerations) pinned by
matchFields, DaemonSet pods removed with their node, and orphaned pods force-deleted after the quarantine.
"""

from __future__ import annotations

import pytest

from longshore_sim.clock import VirtualClock
from longshore_sim.cluster.scheduler import SimpleScheduler
from longshore_sim.cluster.workloads import (
    DaemonSetController,
    DeploymentController,
    PodGarbageCollector,
    ReplicaSetController,
)
from longshore_sim.kubeapi.store import ObjectStore
from tests.sim import manifests


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def store(clock: VirtualClock) -> ObjectStore:
    return ObjectStore(clock)


def settle(store: ObjectStore) -> None:
    """Run the controllers until nothing changes (what SimulatedCluster does at each instant)."""
    controllers = [DeploymentController(store), ReplicaSetController(store)]
    scheduler = SimpleScheduler(store, store.clock)
    for _ in range(10):
        before = store.resource_version
        for controller in controllers:
            controller.reconcile()
        scheduler.schedule()
        if store.resource_version == before:
            return
    raise AssertionError("controllers did not settle")


def active_pods(store: ObjectStore, prefix: str = "") -> list[dict]:  # type: ignore[type-arg]
    return [
        p
        for p in store.list("pods")
        if not p["metadata"].get("deletionTimestamp") and p["metadata"]["name"].startswith(prefix)
    ]


def test_deployment_scales_like_kubectl_scale(store: ObjectStore) -> None:
    store.create("deployments", manifests.deployment("inflate", 0))
    settle(store)
    assert active_pods(store) == []
    store.modify("deployments", "inflate", "default", lambda d: d["spec"].update(replicas=5))
    settle(store)
    pods = active_pods(store)
    assert len(pods) == 5
    assert all(p["metadata"]["labels"]["app"] == "inflate" for p in pods)
    assert {p["metadata"]["ownerReferences"][0]["kind"] for p in pods} == {"ReplicaSet"}
    store.modify("deployments", "inflate", "default", lambda d: d["spec"].update(replicas=2))
    settle(store)
    assert len(active_pods(store)) == 2
    status = store.get("deployments", "inflate", "default")["status"]
    assert (status["replicas"], status["updatedReplicas"]) == (2, 2)


def test_template_change_rolls_to_a_new_replicaset(store: ObjectStore) -> None:
    store.create("deployments", manifests.deployment("web", 2))
    settle(store)
    old = {rs["metadata"]["name"] for rs in store.list("replicasets")}
    store.modify(
        "deployments",
        "web",
        "default",
        lambda d: d["spec"]["template"]["spec"]["containers"][0].update(image="nginx:2"),
    )
    settle(store)
    replicasets = {rs["metadata"]["name"]: rs["spec"]["replicas"] for rs in store.list("replicasets")}
    new = set(replicasets) - old
    assert len(new) == 1
    assert replicasets[new.pop()] == 2
    assert all(replicasets[name] == 0 for name in old)
    images = {p["spec"]["containers"][0]["image"] for p in active_pods(store)}
    assert images == {"nginx:2"}


def test_scale_down_removes_unscheduled_pods_first(store: ObjectStore) -> None:
    node = manifests.node("n1")
    node["status"]["allocatable"] = {"cpu": "250m", "memory": "1Gi", "pods": "110"}
    store.create("nodes", node, keep_status=True)
    store.create("deployments", manifests.deployment("web", 4, cpu="100m"))
    settle(store)
    bound = {p["metadata"]["name"] for p in active_pods(store) if p["spec"].get("nodeName")}
    assert len(bound) == 2
    store.modify("deployments", "web", "default", lambda d: d["spec"].update(replicas=2))
    settle(store)
    assert {p["metadata"]["name"] for p in active_pods(store)} == bound


def test_daemonset_runs_on_every_admitted_node(store: ObjectStore) -> None:
    store.create("nodes", manifests.node("plain", labels={"os": "linux"}), keep_status=True)
    store.create("nodes", manifests.node("cordoned", labels={"os": "linux"}), keep_status=True)
    store.modify("nodes", "cordoned", None, lambda n: n["spec"].update(unschedulable=True))
    store.create(
        "nodes",
        manifests.node("tainted", labels={"os": "linux"}, taints=[{"key": "gpu", "effect": "NoSchedule"}]),
        keep_status=True,
    )
    store.create("nodes", manifests.node("windows", labels={"os": "windows"}), keep_status=True)
    store.create("daemonsets", manifests.daemonset("agent", nodeSelector={"os": "linux"}))
    controller = DaemonSetController(store)
    controller.reconcile()
    SimpleScheduler(store, store.clock).schedule()
    placed = {p["spec"].get("nodeName") for p in store.list("pods", "kube-system")}
    assert placed == {"plain", "cordoned"}
    pod = store.list("pods", "kube-system")[0]
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms[0]["matchFields"][0]["key"] == "metadata.name"
    assert store.get("daemonsets", "agent", "kube-system")["status"]["desiredNumberScheduled"] == 2
    # a node going away takes its daemon pod with it
    store.delete("nodes", "plain")
    controller.reconcile()
    remaining = [
        p["spec"].get("nodeName")
        for p in store.list("pods", "kube-system")
        if not p["metadata"].get("deletionTimestamp")
    ]
    assert remaining == ["cordoned"]


def test_pod_gc_collects_orphans_after_quarantine(store: ObjectStore, clock: VirtualClock) -> None:
    store.create("pods", manifests.pod("orphan", node_name="gone"))
    gc = PodGarbageCollector(store, clock)
    assert gc.reconcile() == clock.now() + 40
    clock.advance(39)
    gc.reconcile()
    assert [p["metadata"]["name"] for p in store.list("pods")] == ["orphan"]
    clock.advance(1)
    gc.reconcile()
    assert store.list("pods") == []

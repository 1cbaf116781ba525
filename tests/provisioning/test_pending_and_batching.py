"""Which pods the provisioner counts (Karpenter's `IsProvisionable`) and how a batch window closes (1 s idle, 10 s max)."""

from __future__ import annotations

from typing import Any

import pytest

from longshore.services.batching import collect_batch
from longshore.services.snapshot import pending_pods, provisionable_manifest
from longshore_sim.clock import VirtualClock

UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}


def pod(name: str = "web-1", **changes: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Pending", "conditions": [dict(UNSCHEDULABLE)]},
    }
    for path, value in changes.items():
        target = manifest
        *parents, leaf = path.split("__")
        for key in parents:
            target = target.setdefault(key, {})
        target[leaf] = value
    return manifest


@pytest.mark.parametrize(
    ("manifest", "counted"),
    [
        (pod(), True),
        (pod(status__conditions=[]), False),  # the kube-scheduler has not tried yet
        (pod(status__conditions=[{**UNSCHEDULABLE, "reason": "SchedulerError"}]), False),
        (pod(status__conditions=[{**UNSCHEDULABLE, "status": "True"}]), False),
        (pod(spec__nodeName="node-a"), False),
        (pod(status__nominatedNodeName="node-a"), False),  # preemption in progress
        (pod(metadata__ownerReferences=[{"kind": "DaemonSet", "name": "ds", "controller": True}]), False),
        (pod(metadata__ownerReferences=[{"kind": "Node", "name": "node-a", "controller": True}]), False),
        (pod(metadata__annotations={"kubernetes.io/config.mirror": "x"}), False),
        (pod(metadata__deletionTimestamp="2026-01-01T00:00:00Z"), False),
        (pod(status__phase="Succeeded"), False),
        (pod(metadata__ownerReferences=[{"kind": "ReplicaSet", "name": "web-1a", "controller": True}]), True),
    ],
)
def test_only_unschedulable_pods_that_need_a_node_are_counted(
    manifest: dict[str, Any], counted: bool
) -> None:
    assert provisionable_manifest(manifest) is counted
    pods, skipped = pending_pods([manifest])
    assert [p.name for p in pods] == (["web-1"] if counted else [])
    assert skipped == ()


def test_an_unreadable_pod_is_reported_not_raised() -> None:
    bad = pod(spec__containers=[{"name": "c", "resources": {"requests": {"cpu": "lots"}}}])
    pods, skipped = pending_pods([bad, pod("web-2")])
    assert [p.name for p in pods] == ["web-2"]
    assert [(s.kind, s.name) for s in skipped] == [("Pod", "web-1")]
    assert "cpu" in skipped[0].reason


def test_the_window_closes_after_one_idle_second() -> None:
    clock = VirtualClock(100.0)
    window = collect_batch(lambda: ["a", "b"], clock, idle_s=1.0, max_s=10.0)
    assert window.uids == {"a", "b"} and window.waited_s == 1.0


def test_new_pods_keep_the_window_open_until_they_stop() -> None:
    clock = VirtualClock(100.0)
    arrivals = iter([["a"], ["a", "b"], ["a", "b", "c"], ["a", "b", "c"]])
    window = collect_batch(lambda: next(arrivals), clock, idle_s=1.0, max_s=10.0)
    assert window.uids == {"a", "b", "c"} and window.waited_s == 3.0


def test_the_window_never_stays_open_longer_than_the_maximum() -> None:
    clock = VirtualClock(100.0)
    counter = iter(range(1000))
    window = collect_batch(lambda: [str(next(counter))], clock, idle_s=1.0, max_s=10.0)
    assert window.waited_s == 10.0 and len(window.uids) == 11


def test_nothing_pending_means_no_wait() -> None:
    clock = VirtualClock(100.0)
    assert collect_batch(lambda: [], clock, idle_s=1.0, max_s=10.0).waited_s == 0.0
    assert clock.now() == 100.0

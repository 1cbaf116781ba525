"""The availability rules of the simulation's checker can fail: an unsafe termination and a voluntarily evicted
pod with nowhere to run are counted, and ordinary rescheduling is not."""

from __future__ import annotations

from typing import Any

from longshore.config import load_cluster_text
from longshore.core.model import ClusterConfig
from longshore_sim.checker import RuleChecker
from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi.store import ObjectStore


def one_pool(spec: str = "") -> ClusterConfig:
    """A v1 NodePool `default` (with `spec`, YAML lines indented under `spec:`) and its EC2NodeClass."""
    return load_cluster_text(
        f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec:
{spec}  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {{name: default}}
spec:
  amiSelectorTerms: [{{alias: al2023@latest}}]
  role: r
  subnetSelectorTerms: [{{tags: {{a: b}}}}]
  securityGroupSelectorTerms: [{{tags: {{a: b}}}}]
""",
        "test",
    )


CONFIG = one_pool()


def world() -> tuple[ObjectStore, RuleChecker, VirtualClock]:
    clock = VirtualClock(start=1_000.0)
    store = ObjectStore(clock=clock)
    return store, RuleChecker(store, CONFIG, origin=1_000.0), clock


def node(store: ObjectStore, name: str, reason: str | None = None) -> None:
    annotations = {"longshore.io/disruption-reason": reason} if reason else {}
    store.create(
        "nodes",
        {
            "metadata": {
                "name": name,
                "annotations": annotations,
                "labels": {"karpenter.sh/nodepool": "default"},
            }
        },
    )


def pod(store: ObjectStore, name: str, node_name: str | None, *, unschedulable: bool = False) -> None:
    status: dict[str, Any] = {"phase": "Running" if node_name else "Pending"}
    if unschedulable:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node_name:
        spec["nodeName"] = node_name
    store.create(
        "pods",
        {
            "metadata": {
                "name": name,
                "namespace": "default",
                "ownerReferences": [{"kind": "ReplicaSet", "name": "web-5d8f", "controller": True}],
            },
            "spec": spec,
            "status": status,
        },
        "default",
        keep_status=True,
    )


def test_a_voluntarily_evicted_pod_with_nowhere_to_run_is_counted() -> None:
    store, checker, clock = world()
    node(store, "n1", reason="empty")
    pod(store, "web-1", "n1")
    checker.scan(clock.now())
    # the drain evicts it; its replacement finds no node with room for 30 s
    store.delete("pods", "web-1", "default", grace_period_seconds=0)
    pod(store, "web-2", None, unschedulable=True)
    checker.scan(clock.now())
    clock.advance(30)
    checker.scan(clock.now())
    assert checker.voluntary_unavailable_pod_seconds == 30.0
    assert any("nowhere to run" in v for v in checker.violations)


def test_ordinary_rescheduling_counts_nothing() -> None:
    store, checker, clock = world()
    node(store, "n1", reason="underutilized")
    node(store, "n2")
    pod(store, "web-1", "n1")
    checker.scan(clock.now())
    store.delete("pods", "web-1", "default", grace_period_seconds=0)
    pod(store, "web-2", "n2")  # bound at once to a node with room
    checker.scan(clock.now())
    clock.advance(30)
    checker.scan(clock.now())
    assert checker.voluntary_unavailable_pod_seconds == 0.0 and checker.violations == []


def test_terminating_a_node_that_still_runs_a_pod_is_unsafe_unless_its_deadline_passed() -> None:
    store, checker, clock = world()
    node(store, "n1", reason="drifted")
    pod(store, "web-1", "n1")
    checker.scan(clock.now())
    checker.note_termination("n1", "i-1", clock.now(), "by Longshore")
    assert checker.unsafe_terminations == 1
    store2, checker2, clock2 = world()
    node(store2, "n1", reason="interruption")
    pod(store2, "web-1", "n1")
    checker2.note_deadline("n1", clock2.now() - 1)  # the reclaim deadline passed: what is left goes
    checker2.note_termination("n1", "i-1", clock2.now(), "by Longshore")
    assert checker2.unsafe_terminations == 0

"""The simulated kube-scheduler: which node each pending pod is bound to, and the Unschedulable condition.

Matrix: fit by requests (cpu, memory, pod count, terminating pods still count); untolerated taints (including a
node that is not Ready) and tolerations; cordoned nodes; nodeSelector; required node affinity (In, NotIn, Gt,
matchFields); hostname pod anti-affinity (both directions); required pod affinity; zone topology spread;
priority order; LeastAllocated spreading; kube-scheduler's exact message; no rewrite of an unchanged condition.
"""

from __future__ import annotations

from typing import Any

import pytest

from longshore_sim.clock import VirtualClock
from longshore_sim.cluster.scheduler import SimpleScheduler
from longshore_sim.kubeapi.store import ObjectStore
from tests.sim import manifests


@pytest.fixture
def store() -> ObjectStore:
    return ObjectStore(VirtualClock())


@pytest.fixture
def scheduler(store: ObjectStore) -> SimpleScheduler:
    return SimpleScheduler(store, store.clock)


def add_node(
    store: ObjectStore, name: str, cpu: str = "4", memory: str = "16Gi", pods: str = "110", **kw: Any
) -> None:
    body = manifests.node(
        name, labels={"kubernetes.io/hostname": name, **kw.pop("labels", {})}, taints=kw.pop("taints", None)
    )
    body["status"]["allocatable"] = {"cpu": cpu, "memory": memory, "pods": pods}
    if kw.pop("ready", True) is False:
        body["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    body["spec"].update(kw)
    store.create("nodes", body, keep_status=True)


def add_pod(store: ObjectStore, name: str, cpu: str = "1", **spec: Any) -> None:
    labels = spec.pop("labels", {"app": "web"})
    store.create("pods", manifests.pod(name, cpu=cpu, labels=labels, **spec))


def placement(store: ObjectStore) -> dict[str, str | None]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in store.list("pods")}


def condition(store: ObjectStore, name: str) -> dict[str, Any]:
    pod = store.get("pods", name, "default")
    return next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")


def test_binds_pods_that_fit_and_marks_the_rest_unschedulable(
    store: ObjectStore, scheduler: SimpleScheduler
) -> None:
    add_node(store, "n1", cpu="2")
    for name in ("a", "b", "c"):
        add_pod(store, name, cpu="900m")
    result = scheduler.schedule()
    assert placement(store) == {"a": "n1", "b": "n1", "c": None}
    assert [k for k, _ in result.unschedulable] == ["default/c"]
    cond = condition(store, "c")
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_message_counts_each_reason(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_node(store, "small", cpu="1", memory="1Gi")
    add_node(store, "tainted", taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}])
    add_node(store, "gpu", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    add_pod(store, "p", cpu="2", memory="2Gi")
    scheduler.schedule()
    assert condition(store, "p")["message"] == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
        "1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) had untolerated taint {karpenter.sh/unregistered: }. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_no_nodes_at_all(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_pod(store, "p")
    scheduler.schedule()
    assert condition(store, "p")["message"] == "no nodes available to schedule pods"


def test_pod_count_limit(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_node(store, "n1", pods="1")
    add_pod(store, "a", cpu="10m")
    add_pod(store, "b", cpu="10m")
    scheduler.schedule()
    assert placement(store) == {"a": "n1", "b": None}
    assert "1 Too many pods" in condition(store, "b")["message"]


def test_terminating_pods_still_use_room(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_node(store, "n1", cpu="1")
    add_pod(store, "old", cpu="1", nodeName="n1")
    store.delete("pods", "old", "default")  # graceful: still on the node for 30 s
    add_pod(store, "new", cpu="1")
    scheduler.schedule()
    assert placement(store)["new"] is None
    store.clock.advance(30)  # type: ignore[attr-defined]
    store.process_due()
    scheduler.schedule()
    assert placement(store) == {"new": "n1"}


def test_tolerated_taint_and_not_ready_node(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_node(store, "gpu", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    add_node(store, "booting", ready=False)
    add_pod(store, "plain")
    add_pod(
        store,
        "tolerant",
        tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
    )
    scheduler.schedule()
    assert placement(store) == {"plain": None, "tolerant": "gpu"}
    assert (
        "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
        in condition(store, "plain")["message"]
    )


def test_prefer_no_schedule_does_not_block(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_node(store, "n1", taints=[{"key": "soft", "effect": "PreferNoSchedule"}])
    add_pod(store, "p")
    scheduler.schedule()
    assert placement(store) == {"p": "n1"}


def test_cordoned_node(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_node(store, "n1", unschedulable=True)
    add_pod(store, "p")
    scheduler.schedule()
    assert placement(store) == {"p": None}
    assert "1 node(s) were unschedulable" in condition(store, "p")["message"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"nodeSelector": {"zone": "b"}}, "nb"),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}
                            ]
                        }
                    }
                }
            },
            "nb",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}
                            ]
                        }
                    }
                }
            },
            "na",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["c"]}]},
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": ["nb"]}
                                    ]
                                },
                            ]
                        }
                    }
                }
            },
            "nb",
        ),
        ({"nodeSelector": {"zone": "c"}}, None),
    ],
    ids=["nodeSelector", "NotIn", "Gt", "terms-are-ored-matchFields", "no-match"],
)
def test_node_selection(
    store: ObjectStore, scheduler: SimpleScheduler, spec: dict[str, Any], expected: str | None
) -> None:
    add_node(store, "na", labels={"zone": "a", "cores": "16"})
    add_node(store, "nb", labels={"zone": "b", "cores": "4"})
    add_pod(store, "p", **spec)
    scheduler.schedule()
    assert placement(store) == {"p": expected}
    if expected is None:
        assert "2 node(s) didn't match Pod's node affinity/selector" in condition(store, "p")["message"]


ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}


def test_hostname_anti_affinity_one_per_node(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_node(store, "n1")
    add_node(store, "n2")
    for name in ("a", "b", "c"):
        add_pod(store, name, cpu="100m", affinity=ANTI)
    scheduler.schedule()
    placed = placement(store)
    assert sorted(filter(None, placed.values())) == ["n1", "n2"]
    assert placed["c"] is None
    assert "2 node(s) didn't match pod anti-affinity rules" in condition(store, "c")["message"]


def test_existing_pods_anti_affinity_is_symmetric(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_node(store, "n1")
    add_pod(
        store,
        "guard",
        cpu="100m",
        labels={"app": "guard"},
        nodeName="n1",
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
    )
    add_pod(store, "web", cpu="100m")
    scheduler.schedule()
    assert placement(store)["web"] is None
    assert "1 node(s) didn't satisfy existing pods anti-affinity rules" in condition(store, "web")["message"]


def test_required_pod_affinity_follows_its_target(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_node(store, "n1")
    add_node(store, "n2")
    add_pod(store, "db", cpu="100m", labels={"app": "db"}, nodeName="n2")
    add_pod(
        store,
        "web",
        cpu="100m",
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        },
    )
    scheduler.schedule()
    assert placement(store)["web"] == "n2"


def test_zone_topology_spread(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_node(store, "a1", labels={"topology.kubernetes.io/zone": "a"})
    add_node(store, "b1", labels={"topology.kubernetes.io/zone": "b"}, cpu="1")
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    for name in ("p1", "p2", "p3", "p4"):
        add_pod(store, name, cpu="600m", topologySpreadConstraints=spread)
    scheduler.schedule()
    placed = placement(store)
    # zone b fits one pod: a gets one, b one, then a second pod in a would make skew 2 - 1 = 1 (allowed), the
    # fourth would be skew 3 - 1 = 2
    assert sorted(v for v in placed.values() if v) == ["a1", "a1", "b1"]
    unplaced = [k for k, v in placed.items() if v is None]
    assert len(unplaced) == 1
    assert "didn't match pod topology spread constraints" in condition(store, unplaced[0])["message"]


def test_priority_first(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_node(store, "n1", cpu="1")
    add_pod(store, "low", cpu="1", priority=0)
    add_pod(store, "high", cpu="1", priority=1000)
    scheduler.schedule()
    assert placement(store) == {"low": None, "high": "n1"}


def test_least_allocated_spreads(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_node(store, "n1")
    add_node(store, "n2")
    add_pod(store, "a")
    add_pod(store, "b")
    scheduler.schedule()
    assert sorted(placement(store).values()) == ["n1", "n2"]  # type: ignore[type-var]


def test_unchanged_condition_is_not_rewritten(store: ObjectStore, scheduler: SimpleScheduler) -> None:
    add_pod(store, "p")
    scheduler.schedule()
    version = store.resource_version
    scheduler.schedule()
    assert store.resource_version == version


def test_gated_and_foreign_scheduler_pods_are_left_alone(
    store: ObjectStore, scheduler: SimpleScheduler
) -> None:
    add_node(store, "n1")
    add_pod(store, "gated", schedulingGates=[{"name": "wait"}])
    add_pod(store, "foreign", schedulerName="other")
    scheduler.schedule()
    assert placement(store) == {"gated": None, "foreign": None}
    assert condition(store, "gated")["reason"] == "SchedulingGated"


def test_a_bound_volume_keeps_its_pod_in_its_zone_and_a_missing_claim_is_unschedulable(
    store: ObjectStore, scheduler: SimpleScheduler
) -> None:
    zone_key = "topology.ebs.csi.aws.com/zone"
    add_node(store, "a", labels={zone_key: "us-east-1a"})
    add_node(store, "b", labels={zone_key: "us-east-1b"})
    term = {"matchExpressions": [{"key": zone_key, "operator": "In", "values": ["us-east-1b"]}]}
    store.create(
        "persistentvolumes",
        {"metadata": {"name": "pv-1"}, "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}},
    )
    store.create(
        "persistentvolumeclaims", {"metadata": {"name": "data"}, "spec": {"volumeName": "pv-1"}}, "default"
    )
    add_pod(store, "db", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
    add_pod(store, "lost", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "gone"}}])
    add_node(
        store, "a2", cpu="64", labels={zone_key: "us-east-1a"}
    )  # emptier, so scored first without the volume
    scheduler.schedule()
    assert placement(store) == {"db": "b", "lost": None}
    assert 'persistentvolumeclaim "gone" not found' in condition(store, "lost")["message"]

"""Volume topology end to end: the provisioner (over the API emulator, moto EC2) places a pending pod whose
claim is bound to a zonal EBS PersistentVolume in that volume's zone only, and leaves a pod whose claim does
not exist pending with a Warning Event naming the claim (kubernetes-sigs/karpenter `volumetopology.go`).
The sim's kube-scheduler honours the volume's zone too, so the pod binds to the new node there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from longshore.core import labels as wk
from longshore.core.volume_topology import BIND_COMPLETED
from longshore_sim.world import SimulatedWorld
from tests.provisioning.conftest import events, pods

MakeWorld = Callable[..., SimulatedWorld]
pytestmark = pytest.mark.slow  # a simulated world with moto, as tests/provisioning/test_provisioning.py

EBS_ZONE = "topology.ebs.csi.aws.com/zone"


def volume(name: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0123456789abcdef0"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": EBS_ZONE, "operator": "In", "values": [zone]}]}
                    ]
                }
            },
        },
    }


def claim(name: str, volume_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "annotations": {BIND_COMPLETED: "yes"}},
        "spec": {"volumeName": volume_name, "storageClassName": "gp3", "accessModes": ["ReadWriteOnce"]},
    }


def pod_with_claim(name: str, claim_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {"name": "db", "image": "postgres", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
        },
    }


def node_of(world: SimulatedWorld, pod_name: str) -> str:
    return next(
        str(p["spec"].get("nodeName") or "") for p in pods(world) if p["metadata"]["name"] == pod_name
    )


def test_a_pod_with_a_claim_bound_to_a_us_east_1b_volume_gets_a_node_in_us_east_1b(
    make_world: MakeWorld,
) -> None:
    world = make_world()
    world.apply(volume("pv-db", "us-east-1b"))
    world.apply(claim("data-db-0", "pv-db"))
    world.apply(pod_with_claim("db-0", "data-db-0"))
    world.invoke(timeout_s=90)

    claims = world.store.list()
    assert claims, [(e["reason"], e["message"]) for e in events(world)]
    assert {c.zone for c in claims} == {"us-east-1b"}
    volume_terms = [r for c in claims for r in c.requirements if r.key == wk.ZONE]  # the EBS key, normalized
    assert volume_terms and all(r.values == ("us-east-1b",) for r in volume_terms)
    node = node_of(world, "db-0")
    assert node, "the pod is bound"
    labels = next(n["metadata"]["labels"] for n in world.cluster.nodes() if n["metadata"]["name"] == node)
    assert labels[wk.ZONE] == "us-east-1b"


def test_a_pod_whose_claim_does_not_exist_stays_pending_with_a_reason(make_world: MakeWorld) -> None:
    world = make_world()
    world.apply(pod_with_claim("db-0", "missing"))
    world.invoke(timeout_s=30)

    assert not world.store.list() and not node_of(world, "db-0")
    reasons = [
        e["message"] for e in events(world, "FailedScheduling") if e["involvedObject"]["name"] == "db-0"
    ]
    assert any("PersistentVolumeClaim default/missing not found" in m for m in reasons), reasons

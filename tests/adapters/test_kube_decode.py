"""Compact decoding of listed pods and nodes (`adapters.kube.decode`), alone and through the emulator.

Matrix: a realistic bound pod, pending pod and node (bench.scale_objects, shaped as EKS returns them) parse to
the same `Pod` / `ExistingNode` whole and compacted; pods with affinity, host ports, init containers,
disruption annotations and owner references keep them; malformed objects stay malformed (the parser still
names the field); the compact form is a small part of the object; `KubeCluster` lists return compact objects
and ask for gzip, which the emulator honours for large bodies.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from bench.scale_objects import node, pod

from longshore.adapters.kube.cluster import KubeCluster
from longshore.adapters.kube.decode import compact_node, compact_pod
from longshore.core.model import ClusterConfig
from longshore.services import snapshot
from longshore_sim.kubeapi import KubeApiEmulator


def _special_pod() -> dict[str, Any]:
    manifest = pod(7, None)
    spec = manifest["spec"]
    spec["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "svc-7"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    spec["containers"][0]["ports"].append({"containerPort": 7000, "hostPort": 7000, "protocol": "TCP"})
    spec["initContainers"] = [
        {
            "name": "init",
            "image": "busybox",
            "env": [{"name": "A", "value": "b"}],
            "resources": {"requests": {"cpu": "1"}},
        }
    ]
    spec["priority"] = 1000
    manifest["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = "true"
    return manifest


@pytest.mark.parametrize(
    "manifest", [pod(1, "node-a"), pod(2, None), _special_pod()], ids=["bound", "pending", "special"]
)
def test_a_compact_pod_parses_to_the_same_pod(manifest: dict[str, Any]) -> None:
    compact = compact_pod(copy.deepcopy(manifest))
    without_last_applied = copy.deepcopy(manifest)
    del without_last_applied["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert snapshot.parse_pod(compact) == snapshot.parse_pod(without_last_applied)
    assert snapshot.provisionable_manifest(compact) == snapshot.provisionable_manifest(manifest)
    assert "managedFields" not in compact["metadata"]
    assert "kubectl.kubernetes.io/last-applied-configuration" not in compact["metadata"]["annotations"]
    assert all(
        set(c) <= {"name", "resources", "ports", "restartPolicy"} for c in compact["spec"]["containers"]
    )
    assert len(json.dumps(compact)) < 0.4 * len(json.dumps(manifest))


def test_a_compact_node_builds_the_same_existing_node() -> None:
    manifest = node(3)
    bound = snapshot.parse_pod(pod(1, manifest["metadata"]["name"]))
    assert not isinstance(bound, snapshot.Skipped)
    config = ClusterConfig("c", "us-east-1", "1.31", node_pools=(), node_classes=())
    whole = snapshot.existing_nodes([manifest], [bound], config)
    compact = compact_node(copy.deepcopy(manifest))
    assert snapshot.existing_nodes([compact], [bound], config) == whole
    assert "images" not in compact["status"] and "managedFields" not in compact["metadata"]
    assert snapshot.provider_id_of(compact) == snapshot.provider_id_of(manifest)
    assert len(json.dumps(compact)) < 0.3 * len(json.dumps(manifest))


def test_malformed_objects_stay_malformed_for_the_parser_to_name() -> None:
    broken = pod(4, None)
    broken["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    skipped = snapshot.parse_pod(compact_pod(broken))
    assert isinstance(skipped, snapshot.Skipped) and "lots" in skipped.reason
    assert compact_pod({"metadata": "x", "spec": "y", "status": 3}) == {
        "metadata": {},
        "spec": "y",
        "status": 3,
    }


@pytest.fixture
def emulator() -> Iterator[KubeApiEmulator]:
    with KubeApiEmulator() as running:
        yield running


def test_lists_come_back_compact_and_gzipped(emulator: KubeApiEmulator) -> None:
    node_name = node(0)["metadata"]["name"]
    emulator.store.create("nodes", node(0), None, keep_status=True)
    for i in range(60):
        manifest = pod(i, None)
        emulator.store.create("pods", manifest, "default", keep_status=True)
        if i % 2:
            emulator.store.bind("default", manifest["metadata"]["name"], node_name)
    api_client = emulator.api_client()
    kube = KubeCluster(api_client)
    before = emulator.bytes_sent
    pods = kube.list_pods()
    sent = emulator.bytes_sent - before
    api_client.close()
    assert len(pods) == 60 and all("managedFields" not in p["metadata"] for p in pods)
    raw = sum(len(json.dumps(p)) for p in emulator.store.list("pods"))
    assert sent < raw / 5  # gzip on the wire
    assert len(kube.list_nodes()) == 1 and "images" not in kube.list_nodes()[0]["status"]
    assert {p["metadata"]["name"] for p in kube.list_pending_pods()} == {
        pod(i, None)["metadata"]["name"] for i in range(0, 60, 2)
    }

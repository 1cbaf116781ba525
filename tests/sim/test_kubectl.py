"""The stock kubectl against the emulator: apply without `--validate=false`, server-side apply, Table columns,
Karpenter's resources, scale. Skipped only where no kubectl binary is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from longshore_sim.kubeapi import KubeApiEmulator
from longshore_sim.kubeapi.tables import human_duration

KUBECTL = shutil.which("kubectl")
MANIFESTS = Path(__file__).resolve().parent / "kubectl"
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


def kubeconfig(url: str, folder: Path) -> Path:
    path = folder / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: sim, cluster: {{server: '{url}'}}}}]\n"
        "users: [{name: sim, user: {token: sandbox}}]\n"
        "contexts: [{name: sim, context: {cluster: sim, user: sim}}]\n"
        "current-context: sim\n"
    )
    return path


@pytest.fixture
def kubectl(emulator: KubeApiEmulator, tmp_path: Path):  # type: ignore[no-untyped-def]
    env = {**os.environ, "KUBECONFIG": str(kubeconfig(emulator.url, tmp_path)), "HOME": str(tmp_path)}

    def run(*args: str) -> str:
        done = subprocess.run(
            [KUBECTL or "kubectl", *args], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    return run


def rows(table: str) -> list[list[str]]:
    return [line.split() for line in table.strip().splitlines()]


@needs_kubectl
@pytest.mark.slow
def test_apply_validates_against_the_served_openapi_and_get_prints_the_real_columns(kubectl, clock) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a Deployment manifest, WHEN kubectl applies it with validation on (the default)
    assert "deployment.apps/web created" in kubectl("apply", "-f", str(MANIFESTS / "deployment.yaml"))
    clock.advance(75)
    # THEN `kubectl get` prints the API server's columns, with ages on the emulator's clock
    assert rows(kubectl("get", "deployments")) == [
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        ["web", "0/2", "0", "0", "75s"],
    ]
    # AND applying again is a no-op, as is a server-side apply of the same file
    assert "unchanged" in kubectl("apply", "-f", str(MANIFESTS / "deployment.yaml"))
    assert "serverside-applied" in kubectl("apply", "--server-side", "-f", str(MANIFESTS / "deployment.yaml"))


@needs_kubectl
@pytest.mark.slow
def test_karpenter_resources_have_karpenter_columns_and_a_pool_scales(kubectl) -> None:  # type: ignore[no-untyped-def]
    out = kubectl("apply", "-f", str(MANIFESTS / "nodepool.yaml"))
    assert "nodepool.karpenter.sh/default created" in out
    assert "ec2nodeclass.karpenter.k8s.aws/default created" in out
    assert rows(kubectl("get", "nodepools"))[0] == ["NAME", "NODECLASS", "NODES", "READY", "AGE"]
    assert rows(kubectl("get", "nodepools"))[1][:2] == ["default", "default"]
    header = rows(kubectl("get", "nodepools", "-o", "wide"))[0]
    assert header == ["NAME", "NODECLASS", "NODES", "READY", "AGE", "WEIGHT", "CPU", "MEMORY"]
    assert "scaled" in kubectl("scale", "nodepool", "default", "--replicas=3")
    assert kubectl("get", "nodepool", "default", "-o", "jsonpath={.spec.replicas}") == "3"


@needs_kubectl
@pytest.mark.slow
def test_nodes_and_pods_print_status_columns(emulator: KubeApiEmulator, kubectl) -> None:  # type: ignore[no-untyped-def]
    emulator.store.create(
        "nodes",
        {
            "metadata": {"name": "ip-10-0-0-1.ec2.internal", "labels": {}},
            "spec": {"unschedulable": True},
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "nodeInfo": {"kubeletVersion": "v1.31.0"},
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
            },
        },
    )
    table = rows(kubectl("get", "nodes", "-o", "wide"))
    assert table[0][:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert table[1][:5] == ["ip-10-0-0-1.ec2.internal", "Ready,SchedulingDisabled", "<none>", "0s", "v1.31.0"]
    assert table[1][5] == "10.0.0.1"


def test_ages_are_formatted_as_kubectl_formats_them() -> None:
    assert [human_duration(s) for s in (5, 119, 150, 600, 7200, 30000, 200000, 86400 * 30)] == [
        "5s",
        "119s",
        "2m30s",
        "10m",
        "120m",
        "8h",
        "2d7h",
        "30d",
    ]


def test_clients_that_do_not_ask_for_a_table_get_objects(core) -> None:  # type: ignore[no-untyped-def]
    # The production code's kubernetes client never asks for `as=Table`: it keeps getting typed objects.
    assert core.list_node().items == []


@needs_kubectl
def test_nodeclaims_print_type_capacity_zone_and_node(emulator: KubeApiEmulator, kubectl) -> None:  # type: ignore[no-untyped-def]
    emulator.store.create(
        "nodeclaims",
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "name": "default-abc12",
                "labels": {
                    "node.kubernetes.io/instance-type": "m5.large",
                    "karpenter.sh/capacity-type": "spot",
                    "topology.kubernetes.io/zone": "us-east-1a",
                    "karpenter.sh/nodepool": "default",
                },
            },
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
            },
            "status": {
                "nodeName": "ip-10-0-0-9.ec2.internal",
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
    )
    assert rows(kubectl("get", "nodeclaims")) == [
        ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"],
        ["default-abc12", "m5.large", "spot", "us-east-1a", "ip-10-0-0-9.ec2.internal", "True", "0s"],
    ]


@needs_kubectl
@pytest.mark.slow
def test_a_watch_prints_the_same_columns_as_a_get(emulator: KubeApiEmulator, tmp_path: Path) -> None:
    # GIVEN `kubectl get nodes --watch-only` (the watch half of `kubectl get -w`)
    env = {**os.environ, "KUBECONFIG": str(kubeconfig(emulator.url, tmp_path)), "HOME": str(tmp_path)}
    watch = subprocess.Popen(
        [KUBECTL or "kubectl", "get", "nodes", "--watch-only"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        time.sleep(2)  # the watch is open
        # WHEN a node is added
        emulator.store.create(
            "nodes",
            {
                "metadata": {"name": "ip-10-0-0-2.ec2.internal"},
                "status": {
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "nodeInfo": {"kubeletVersion": "v1.31.0"},
                },
            },
        )
        # THEN its event prints as a Table row with the API server's columns, not kubectl's NAME/AGE fallback
        assert watch.stdout is not None
        first = watch.stdout.readline().split()
        row = first if first[0] != "NAME" else watch.stdout.readline().split()
    finally:
        watch.kill()
        watch.wait(10)
    assert row == ["ip-10-0-0-2.ec2.internal", "Ready", "<none>", "0s", "v1.31.0"]


@needs_kubectl
@pytest.mark.slow
def test_storage_objects_are_created_and_read_by_kubectl(kubectl, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    manifest = tmp_path / "storage.yaml"
    manifest.write_text(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: gp3}\n"
        "provisioner: ebs.csi.aws.com\nvolumeBindingMode: WaitForFirstConsumer\n---\n"
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv-db}\n"
        "spec:\n  capacity: {storage: 10Gi}\n  accessModes: [ReadWriteOnce]\n  nodeAffinity:\n    required:\n"
        "      nodeSelectorTerms:\n      - matchExpressions:\n"
        "        - {key: topology.ebs.csi.aws.com/zone, operator: In, values: [us-east-1b]}\n---\n"
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: default}\n"
        "spec: {volumeName: pv-db, storageClassName: gp3, accessModes: [ReadWriteOnce]}\n"
    )
    out = kubectl("apply", "-f", str(manifest))
    assert "storageclass.storage.k8s.io/gp3 created" in out
    assert "persistentvolume/pv-db created" in out
    assert "persistentvolumeclaim/data created" in out
    assert (
        kubectl(
            "get",
            "pv",
            "pv-db",
            "-o",
            "jsonpath={.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}",
        )
        == "us-east-1b"
    )
    assert kubectl("get", "pvc", "data", "-o", "jsonpath={.spec.volumeName}") == "pv-db"
    assert kubectl("get", "sc", "gp3", "-o", "jsonpath={.volumeBindingMode}") == "WaitForFirstConsumer"

"""`longshore status` through a kubeconfig, as a user would run it against EKS: NodePools, EC2NodeClasses and
Karpenter's NodeClaims from the cluster, pending pods planned, nodes judged; nothing written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from longshore.cli.status import command
from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import KubeApiEmulator
from tests.builders import pod_manifest
from tests.planner.fakes import node_manifest, running_pod
from tests.planner.test_explain import CONFIG
from tests.workflow.fakes import START


@pytest.fixture
def emulator() -> Iterator[KubeApiEmulator]:
    with KubeApiEmulator(clock=VirtualClock(START)) as running:
        yield running


def kubeconfig(emulator: KubeApiEmulator, folder: Path) -> Path:
    path = folder / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "eks", "cluster": {"server": emulator.url}}],
                "users": [{"name": "me", "user": {"token": "t"}}],
                "contexts": [{"name": "prod", "context": {"cluster": "eks", "user": "me"}}],
                "current-context": "prod",
            }
        )
    )
    return path


def karpenter_nodeclaim(name: str, node: str, type_name: str) -> dict[str, Any]:
    stamp = "2024-01-01T00:00:00Z"
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "creationTimestamp": stamp,
            "labels": {
                "karpenter.sh/nodepool": "default",
                "node.kubernetes.io/instance-type": type_name,
                "topology.kubernetes.io/zone": "us-east-1a",
                "karpenter.sh/capacity-type": "on-demand",
            },
        },
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
        "status": {
            "providerID": f"aws:///us-east-1a/i-{node}",
            "nodeName": node,
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": stamp}
                for t in ("Launched", "Registered", "Initialized", "Ready")
            ],
        },
    }


def seed(emulator: KubeApiEmulator, *, pool_operator: str = "In", placement_group: str | None = None) -> None:
    for doc in yaml.safe_load_all(CONFIG):
        if doc["kind"] == "NodePool":
            doc["spec"]["template"]["spec"]["requirements"][1]["operator"] = pool_operator
            emulator.store.create("nodepools", doc)
        else:
            if placement_group is not None:
                doc["spec"]["placementGroupSelector"] = {"name": placement_group}
            emulator.store.create("ec2nodeclasses", doc)
    for node in ("n1", "n2"):
        emulator.store.create(
            "nodes", node_manifest(node, f"i-{node}", type_name="m5.xlarge"), keep_status=True
        )
        emulator.store.create(
            "nodeclaims", karpenter_nodeclaim(f"default-{node}", node, "m5.xlarge"), keep_status=True
        )
    emulator.store.create("pods", running_pod("web", "n1", cpu="3"), keep_status=True)
    pending = pod_manifest("burst", cpu="6", memory="4Gi")
    pending["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    emulator.store.create("pods", pending, keep_status=True)


def status(emulator: KubeApiEmulator, tmp_path: Path, *extra: str) -> dict[str, Any]:
    args = [
        "--kubeconfig",
        str(kubeconfig(emulator, tmp_path)),
        "--context",
        "prod",
        "--cluster-name",
        "demo-cluster",
        "--now",
        str(START),
        "--json",
        *extra,
    ]
    result = CliRunner().invoke(command, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_status_reads_karpenters_objects_and_says_what_it_would_do(
    emulator: KubeApiEmulator, tmp_path: Path
) -> None:
    # GIVEN a cluster Karpenter runs: a NodePool, an EC2NodeClass, two NodeClaims and their nodes, one pod
    # pending that fits no node, and an empty node
    seed(emulator)
    writes_before = [r for r in emulator.requests if r.method != "GET"]
    # WHEN a user asks for the status through their kubeconfig
    report = status(emulator, tmp_path)
    # THEN the pool comes from the cluster, ready, with its two nodes and their cost
    (pool,) = report["pools"]
    assert pool["name"] == "default" and pool["ready"] and pool["nodes"] == 2
    assert pool["source"] == "nodepools.karpenter.sh/default" and pool["cost_per_hour"] == pytest.approx(
        0.384
    )
    # AND the pending pod gets a node it fits (6 cpu: not an m5.xlarge)
    (claim,) = report["launch"]["claims"]
    assert claim["instance_type"] == "m5.2xlarge" and claim["pods"] == 1
    # AND the empty node is a disruption decision; nothing was written to the cluster
    assert any("n2" in text for text in report["disruption"]["decisions"])
    assert [r for r in emulator.requests if r.method != "GET"] == writes_before


def test_an_invalid_pool_in_the_cluster_is_reported_not_used(
    emulator: KubeApiEmulator, tmp_path: Path
) -> None:
    seed(emulator, pool_operator="Within")
    report = status(emulator, tmp_path)
    (pool,) = report["pools"]
    assert not pool["ready"] and "Within" in pool["reason"]
    assert report["launch"]["claims"] == []


def test_plan_without_pods_plans_the_pods_pending_in_the_cluster(
    emulator: KubeApiEmulator, tmp_path: Path
) -> None:
    from longshore.cli.plan import command as plan_command

    seed(emulator)
    args = ["--kubeconfig", str(kubeconfig(emulator, tmp_path)), "--cluster-name", "demo-cluster", "--json"]
    result = CliRunner().invoke(plan_command, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (claim,) = json.loads(result.output)["nodeclaims"]
    assert claim["instance_type"] == "m5.2xlarge" and claim["pods"] == ["default/burst"]


def test_plan_without_pods_plans_the_reservations_of_a_file(
    emulator: KubeApiEmulator, tmp_path: Path
) -> None:
    """`--reservations` in the live form: the cluster's EC2NodeClass selects from the file (`cli.reservations`)."""
    from longshore.cli.plan import command as plan_command

    for doc in yaml.safe_load_all(CONFIG):
        if doc["kind"] == "NodePool":
            doc["spec"]["template"]["spec"]["requirements"][1]["values"] = ["reserved", "on-demand"]
            emulator.store.create("nodepools", doc)
        else:
            doc["spec"]["capacityReservationSelectorTerms"] = [{"id": "cr-live"}]
            emulator.store.create("ec2nodeclasses", doc)
    pending = pod_manifest("burst", cpu="6", memory="4Gi")
    pending["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    emulator.store.create("pods", pending, keep_status=True)
    reservations = tmp_path / "reservations.yaml"
    reservations.write_text(
        "- {CapacityReservationId: cr-live, InstanceType: m5.2xlarge, AvailabilityZone: us-east-1a,"
        " AvailableInstanceCount: 1}\n"
    )
    args = ["--kubeconfig", str(kubeconfig(emulator, tmp_path)), "--cluster-name", "demo-cluster", "--json"]
    result = CliRunner().invoke(
        plan_command, [*args, "--reservations", str(reservations)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    (claim,) = json.loads(result.stdout)["nodeclaims"]
    assert (claim["capacity_type"], claim["reservation_id"], claim["pods"]) == (
        "reserved",
        "cr-live",
        ["default/burst"],
    )


def test_plan_without_pods_offers_the_partitions_of_a_placement_groups_file(
    emulator: KubeApiEmulator, tmp_path: Path
) -> None:
    """`--placement-groups` in the live form: the cluster's EC2NodeClass selects from the file."""
    from longshore.cli.plan import command as plan_command

    for doc in yaml.safe_load_all(CONFIG):
        if doc["kind"] == "EC2NodeClass":
            doc["spec"]["placementGroupSelector"] = {"name": "hdfs"}
        emulator.store.create("nodepools" if doc["kind"] == "NodePool" else "ec2nodeclasses", doc)
    pending = pod_manifest("db", cpu="1", node_selector={"karpenter.k8s.aws/placement-group-partition": "2"})
    pending["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    emulator.store.create("pods", pending, keep_status=True)
    groups = tmp_path / "groups.yaml"
    groups.write_text("- {GroupName: hdfs, GroupId: pg-1, Strategy: partition, PartitionCount: 3}\n")
    args = ["--kubeconfig", str(kubeconfig(emulator, tmp_path)), "--cluster-name", "demo-cluster", "--json"]
    result = CliRunner().invoke(
        plan_command, [*args, "--placement-groups", str(groups)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    (claim,) = json.loads(result.stdout)["nodeclaims"]
    labels = claim["labels"]
    assert (
        labels["karpenter.k8s.aws/placement-group-id"],
        labels["karpenter.k8s.aws/placement-group-partition"],
    ) == (
        "pg-1",
        "2",
    )


BUFFER_CONFIG = """apiVersion: longshore.io/v1alpha1
kind: Cluster
metadata: {name: demo-cluster}
spec: {region: us-east-1, poolSource: both}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: small}
template:
  spec:
    containers: [{name: pause, image: pause, resources: {requests: {cpu: "1"}}}]
---
apiVersion: autoscaling.x-k8s.io/v1alpha1
kind: CapacityBuffer
metadata: {name: spare}
spec: {podTemplateRef: {name: small}, replicas: 1}
"""


def test_status_shows_config_file_and_cluster_buffers_and_plans_them_after_the_real_pods(
    emulator: KubeApiEmulator, tmp_path: Path
) -> None:
    # GIVEN the cluster above, a CapacityBuffer object (2 x 1 CPU from a PodTemplate in the cluster) and one
    # in the config file (1 x 1 CPU from a PodTemplate of the file)
    seed(emulator)
    template = {
        "spec": {"containers": [{"name": "p", "image": "pause", "resources": {"requests": {"cpu": "1"}}}]}
    }
    emulator.store.create(
        "podtemplates", {"metadata": {"name": "warm", "namespace": "default"}, "template": template}
    )
    emulator.store.create(
        "capacitybuffers",
        {
            "apiVersion": "autoscaling.x-k8s.io/v1alpha1",
            "kind": "CapacityBuffer",
            "metadata": {"name": "warm", "namespace": "default"},
            "spec": {"podTemplateRef": {"name": "warm"}, "replicas": 2},
        },
    )
    config = tmp_path / "cluster.yaml"
    config.write_text(BUFFER_CONFIG + "---\n" + CONFIG)
    writes_before = [r for r in emulator.requests if r.method != "GET"]
    # WHEN a user asks for the status with that config
    report = status(emulator, tmp_path, "--config", str(config))
    # THEN both buffers are listed, each with its source and where its virtual pods would go: the empty
    # node n2 (4 CPU) holds all three, so nothing launches for them and n2 is no longer a disruption
    rows = {row["name"]: row for row in report["buffers"]}
    assert (
        rows["default/spare"]["source"].startswith("--config:")
        and rows["default/warm"]["source"] == "cluster"
    )
    assert [(r["replicas"], r["on_existing"], r["unplaced"]) for r in rows.values()] == [(1, 1, 0), (2, 2, 0)]
    assert report["launch"]["fits_existing"] == 0  # virtual pods are not counted as pending pods
    assert not any("n2" in text for text in report["disruption"]["decisions"])
    assert "CapacityBuffer" in report["disruption"]["left_alone"]["n2"]
    # AND the command wrote nothing (no status: only the provisioner writes)
    assert [r for r in emulator.requests if r.method != "GET"] == writes_before
    args = ["--kubeconfig", str(kubeconfig(emulator, tmp_path)), "--cluster-name", "demo-cluster"]
    text = CliRunner().invoke(command, [*args, "--now", str(START), "--config", str(config)]).output
    assert "capacity buffers:\n  default/spare (" in text


# -- placement groups: the planner's lookup (`cli.placement_groups`) -----------------------------------------

GROUPS = Path(__file__).parents[1] / "fixtures" / "aws" / "placement-groups.json"  # hdfs: 3 partitions
PARTITION = "karpenter.k8s.aws/placement-group-partition"


def pending_in_partition(emulator: KubeApiEmulator, name: str, partition: str) -> None:
    pod = pod_manifest(name, cpu="1", node_selector={PARTITION: partition})
    pod["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    emulator.store.create("pods", pod, keep_status=True)


def status_result(emulator: KubeApiEmulator, tmp_path: Path, *extra: str) -> Result:
    args = ["--kubeconfig", str(kubeconfig(emulator, tmp_path)), "--cluster-name", "demo-cluster"]
    return CliRunner().invoke(command, [*args, "--now", str(START), *extra], catch_exceptions=False)


def test_status_offers_the_partitions_of_the_group_read_from_a_file(
    emulator: KubeApiEmulator, tmp_path: Path
) -> None:
    # GIVEN the cluster's EC2NodeClass selects the partition group hdfs; a pod asks for partition 5 of it
    seed(emulator, placement_group="hdfs")
    pending_in_partition(emulator, "odd", "5")
    # WHEN the status is read without the groups, the key is open and the pod gets a node
    assert not status(emulator, tmp_path)["launch"]["unschedulable"]
    # AND with them (a DescribePlacementGroups answer), the group is listed and partition 5 exists nowhere
    report = status(emulator, tmp_path, "--placement-groups", str(GROUPS))
    assert report["placement_groups"] == {
        "found": {
            "default": {
                "id": "pg-0123456789abcdef0",
                "name": "hdfs",
                "strategy": "partition",
                "partitions": 3,
            }
        },
        "unresolved": {},
    }
    [(pod, reason)] = [(item["pod"], item["reason"]) for item in report["launch"]["unschedulable"]]
    assert pod == "default/odd" and PARTITION in reason
    text = status_result(emulator, tmp_path, "--placement-groups", str(GROUPS)).stdout
    assert (
        "placement groups:\n  EC2NodeClass default: placement group hdfs (pg-0123456789abcdef0, partition, 3 partitions)"
        in text
    )


def test_a_failed_group_lookup_is_the_planners_decision_in_the_status(
    emulator: KubeApiEmulator, tmp_path: Path
) -> None:
    # GIVEN the node class selects a group the answer does not have; n1 runs a pod, n2 is empty
    seed(emulator, placement_group="gone")
    # WHEN the status is read with that answer
    result = status_result(emulator, tmp_path, "--json", "--placement-groups", str(GROUPS))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    why = "EC2NodeClass default: spec.placementGroupSelector name gone matches no available placement group"
    # THEN the failure is named, on stderr and in the report
    assert report["placement_groups"] == {"found": {}, "unresolved": {"default": why}}
    assert f"{GROUPS}: {why}; this pass the planner plans no replacement in its pools" in result.stderr
    # AND the disruption part is the planner's: the empty node may still go (no pod moves)
    assert any("n2" in text for text in report["disruption"]["decisions"])
    # AND once n2 runs a pod too, neither node is consolidated: no replacement is planned in the class
    emulator.store.create("pods", running_pod("api", "n2", cpu="1"), keep_status=True)
    left_alone = status(emulator, tmp_path, "--placement-groups", str(GROUPS))["disruption"]["left_alone"]
    assert left_alone == {
        node: "the placement group of node class default could not be looked up, "
        "so no replacement can be planned with its partitions"
        for node in ("n1", "n2")
    }
    # AND the pending pod is planned as the provisioner plans it: the key open
    (claim,) = report["launch"]["claims"]
    assert claim["instance_type"] == "m5.2xlarge"


@pytest.mark.slow  # --live reads every instance type and price from moto (a few seconds)
def test_live_looks_the_groups_up_in_ec2_through_the_provisioners_adapter(
    emulator: KubeApiEmulator, tmp_path: Path
) -> None:
    """`--live` without a file: DescribePlacementGroups on EC2 (moto, with `longshore_sim.placement_groups`
    standing in for the placement-group calls moto lacks), through `Ec2PlacementGroups`."""
    import boto3
    from moto import mock_aws

    from longshore_sim.placement_groups import PlacementGroups

    seed(emulator, placement_group="hdfs")
    with mock_aws():
        boto3.setup_default_session(region_name="us-east-1")
        try:
            made = PlacementGroups().attach(boto3.DEFAULT_SESSION).create("hdfs", "partition", 2)
            report = status(emulator, tmp_path, "--live")
        finally:
            boto3.DEFAULT_SESSION = None
    assert report["placement_groups"]["found"] == {
        "default": {"id": made.group_id, "name": "hdfs", "strategy": "partition", "partitions": 2}
    }

"""Taking over a cluster Karpenter ran (`longshore adopt`): moto for EC2 and DynamoDB, the API emulator for
Kubernetes, Karpenter's own objects and tags. Zero nodes replaced, zero evictions, then managed as Longshore's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from click.testing import CliRunner
from moto import mock_aws

from longshore.adapters.aws.dynamodb import DynamoClaimStore, DynamoTable
from longshore.adapters.kube.cluster import KubeCluster
from longshore.adapters.memory import MemoryOfferingAvailability
from longshore.cli.adopt import command
from longshore.cli.explain import offline_catalog
from longshore.config import load_cluster_text
from longshore.core.commands import DisruptionReason
from longshore.core.disruption import planner
from longshore.services.disruption_snapshot import take_snapshot
from longshore_sim.aws import create_table
from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import KubeApiEmulator
from tests.planner.fakes import node_manifest, running_pod
from tests.planner.test_explain import CONFIG
from tests.planner.test_status import karpenter_nodeclaim, kubeconfig
from tests.workflow.fakes import START

pytestmark = pytest.mark.slow


@pytest.fixture
def world(tmp_path: Path) -> Iterator[dict[str, Any]]:
    with mock_aws(), KubeApiEmulator(clock=VirtualClock(START)) as emulator:
        ec2 = boto3.client("ec2", region_name="us-east-1")
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_table(dynamodb, "longshore")
        config = tmp_path / "cluster.yaml"
        config.write_text(CONFIG)
        yield {"ec2": ec2, "dynamodb": dynamodb, "emulator": emulator, "config": config, "tmp": tmp_path}


def karpenter_instance(ec2: Any, claim: str) -> str:
    """An instance as Karpenter launches it: its tags, not Longshore's."""
    tags = {
        "karpenter.sh/nodeclaim": claim,
        "karpenter.sh/nodepool": "default",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "kubernetes.io/cluster/demo-cluster": "owned",
        "eks:eks-cluster-name": "demo-cluster",
    }
    reservation = ec2.run_instances(
        ImageId="ami-12345678",
        InstanceType="m5.xlarge",
        MinCount=1,
        MaxCount=1,
        Placement={"AvailabilityZone": "us-east-1a"},
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ],
    )
    return str(reservation["Instances"][0]["InstanceId"])


def seed(world: dict[str, Any], *, controller_replicas: int = 0) -> dict[str, str]:
    emulator: KubeApiEmulator = world["emulator"]
    for doc in yaml.safe_load_all(CONFIG):
        emulator.store.create("nodepools" if doc["kind"] == "NodePool" else "ec2nodeclasses", doc)
    nodes = {}
    for node in ("n1", "n2"):
        instance = karpenter_instance(world["ec2"], f"default-{node}")
        nodes[node] = instance
        emulator.store.create("nodes", node_manifest(node, instance, type_name="m5.xlarge"), keep_status=True)
        claim = karpenter_nodeclaim(f"default-{node}", node, "m5.xlarge")
        claim["status"]["providerID"] = f"aws:///us-east-1a/{instance}"
        claim["metadata"]["finalizers"] = ["karpenter.sh/termination"]
        emulator.store.create("nodeclaims", claim, keep_status=True)
    emulator.store.create("pods", running_pod("web", "n1", cpu="1"), keep_status=True)
    emulator.store.create(
        "deployments",
        {
            "metadata": {
                "name": "karpenter",
                "namespace": "kube-system",
                "labels": {"app.kubernetes.io/name": "karpenter"},
            },
            "spec": {
                "replicas": controller_replicas,
                "selector": {"matchLabels": {"app": "karpenter"}},
                "template": {
                    "metadata": {"labels": {"app": "karpenter"}},
                    "spec": {"containers": [{"name": "c", "image": "k"}]},
                },
            },
        },
    )
    return nodes


def adopt(world: dict[str, Any], *extra: str) -> Any:
    args = [
        "--config", str(world["config"]), "--cluster-name", "demo-cluster",
        "--kubeconfig", str(kubeconfig(world["emulator"], world["tmp"])), "--table", "longshore", "--json", *extra,
    ]  # fmt: skip
    return CliRunner().invoke(command, args, catch_exceptions=False)


def test_adopt_refuses_while_karpenter_runs(world: dict[str, Any]) -> None:
    seed(world, controller_replicas=1)
    result = adopt(world)
    assert result.exit_code == 1
    assert "kube-system/karpenter" in result.output and "scale it to zero" in result.output


def test_adoption_replaces_nothing_and_the_adopted_nodes_are_then_managed(world: dict[str, Any]) -> None:
    # GIVEN a cluster Karpenter ran, its controller scaled to zero
    instances = seed(world)
    emulator: KubeApiEmulator = world["emulator"]
    # WHEN the dry run shows the plan, THEN it changes nothing
    dry = adopt(world, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output)["adopted"] == ["default-n1", "default-n2"]
    assert world["dynamodb"].scan(TableName="longshore")["Count"] == 0
    # WHEN adopted for real
    result = adopt(world)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["adopted"] == ["default-n1", "default-n2"]
    # THEN no node was drained, tainted, replaced or deleted, and no pod was evicted
    writes = [
        r for r in emulator.requests if r.method != "GET" and r.resource.split("/")[0] in ("nodes", "pods")
    ]
    assert writes == []
    live = world["ec2"].describe_instances(
        Filters=[{"Name": "instance-state-name", "Values": ["running", "pending"]}]
    )
    assert sorted(i["InstanceId"] for r in live["Reservations"] for i in r["Instances"]) == sorted(
        instances.values()
    )
    # AND the instances are Longshore's, the NodeClaims are marked as managed by it
    tags = {t["Key"]: t["Value"] for t in live["Reservations"][0]["Instances"][0]["Tags"]}
    assert tags["longshore.io/cluster"] == "demo-cluster"
    assert all(
        o["metadata"]["labels"]["longshore.io/managed-by"] == "longshore"
        for o in emulator.store.list("nodeclaims", None)
    )
    # AND running it again adopts nothing twice
    assert json.loads(adopt(world).output)["adopted"] == []
    # AND the planner now manages them: the empty adopted node is a disruption decision, with no drift
    config = load_cluster_text(CONFIG, "cluster.yaml", cluster_name="demo-cluster")
    store = DynamoClaimStore(DynamoTable(world["dynamodb"], "longshore"))
    api = emulator.api_client()
    snapshot = take_snapshot(
        KubeCluster(api), store, MemoryOfferingAvailability(), offline_catalog("us-east-1"), config, START
    )
    assert {n.node.name for n in snapshot.input.nodes} == {"n1", "n2"}
    decisions = planner.plan(snapshot.input).decisions
    assert [(d.reason, d.node_names) for d in decisions] == [(DisruptionReason.EMPTY, ("n2",))]

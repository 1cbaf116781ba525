"""SimulatedCluster on moto and a virtual clock, observed through the real kubernetes client.

Matrix: an instance launched with CreateFleet becomes a Node exactly `boot_delay` virtual seconds later, with
the well-known labels, bootstrap labels and taints, providerID, capacity/allocatable and Ready; pending pods
stay Unschedulable while `karpenter.sh/unregistered` is on the node and run once it is removed through the
API; agent startup taints go away on their own; `kubectl scale` semantics; terminating the instance removes
the Node and its pods, which are recreated Pending; instances of other clusters are ignored; observers see
the pending count over time; an instance that terminates before booting never registers.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from kubernetes import client
from moto import mock_aws

from longshore_sim.cluster import KubeletSettings, Sample, SimulatedCluster
from tests.sim import manifests

pytestmark = pytest.mark.slow

CLUSTER = "demo"
USER_DATA = (
    "#!/bin/bash\n/etc/eks/bootstrap.sh demo --kubelet-extra-args '"
    "--node-labels=karpenter.sh/nodepool=default,team=blue "
    "--register-with-taints=karpenter.sh/unregistered:NoExecute,node.cilium.io/agent-not-ready=true:NoExecute "
    "--max-pods=20'"
)


@pytest.fixture
def ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


@pytest.fixture
def subnet(ec2: Any) -> str:
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    return str(
        ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24", AvailabilityZone="us-east-1b")["Subnet"][
            "SubnetId"
        ]
    )


@pytest.fixture
def cluster(ec2: Any) -> Iterator[SimulatedCluster]:
    with SimulatedCluster(ec2=ec2, cluster_name=CLUSTER, ec2_poll_interval=None) as running:
        running.watch_ec2_client(ec2)
        yield running


@pytest.fixture
def core(cluster: SimulatedCluster) -> Iterator[client.CoreV1Api]:
    api = cluster.api_client()
    yield client.CoreV1Api(api)
    api.close()


def launch(
    ec2: Any, subnet: str, *, instance_type: str = "m5.large", cluster: str = CLUSTER, spot: bool = False
) -> str:
    template = ec2.create_launch_template(
        LaunchTemplateName=f"lt-{instance_type}-{cluster}-{spot}",
        LaunchTemplateData={
            "ImageId": "ami-12345678",
            "UserData": base64.b64encode(USER_DATA.encode()).decode(),
            "TagSpecifications": [
                {
                    "ResourceType": "instance",
                    "Tags": [
                        {"Key": "longshore.io/cluster", "Value": cluster},
                        {"Key": "karpenter.sh/nodepool", "Value": "default"},
                    ],
                }
            ],
        },
    )["LaunchTemplate"]["LaunchTemplateId"]
    fleet = ec2.create_fleet(
        Type="instant",
        TargetCapacitySpecification={
            "TotalTargetCapacity": 1,
            "DefaultTargetCapacityType": "spot" if spot else "on-demand",
        },
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateId": template, "Version": "$Latest"},
                "Overrides": [{"InstanceType": instance_type, "SubnetId": subnet}],
            }
        ],
    )
    return str(fleet["Instances"][0]["InstanceIds"][0])


def remove_unregistered_taint(core: client.CoreV1Api, node: client.V1Node) -> None:
    """What the registration step of the provisioner does, through the API."""
    kept = [t.to_dict() for t in node.spec.taints if t.key != "karpenter.sh/unregistered"]
    core.patch_node(
        node.metadata.name,
        {"spec": {"taints": [{k: v for k, v in t.items() if v is not None} for t in kept]}},
    )


@pytest.mark.slow
def test_instance_registers_after_the_boot_delay(
    cluster: SimulatedCluster, ec2: Any, subnet: str, core: client.CoreV1Api
) -> None:
    # GIVEN an on-demand m5.large launched for the cluster
    instance_id = launch(ec2, subnet)
    # WHEN 29 virtual seconds pass, there is no node; at 30 there is
    cluster.step(29)
    assert core.list_node().items == []
    cluster.step(1)
    [node] = core.list_node().items
    # THEN it carries what the kubelet would register
    labels = node.metadata.labels
    assert node.metadata.name == labels["kubernetes.io/hostname"]
    assert {
        k: labels[k]
        for k in (
            "node.kubernetes.io/instance-type",
            "topology.kubernetes.io/zone",
            "topology.kubernetes.io/region",
            "kubernetes.io/arch",
            "kubernetes.io/os",
            "karpenter.sh/capacity-type",
            "karpenter.sh/nodepool",
            "team",
        )
    } == {
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/zone": "us-east-1b",
        "topology.kubernetes.io/region": "us-east-1",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "karpenter.sh/capacity-type": "on-demand",
        "karpenter.sh/nodepool": "default",
        "team": "blue",
    }
    assert labels["topology.k8s.aws/zone-id"].startswith("use1-az")
    assert node.spec.provider_id == f"aws:///us-east-1b/{instance_id}"
    assert {(t.key, t.effect) for t in node.spec.taints} == {
        ("karpenter.sh/unregistered", "NoExecute"),
        ("node.cilium.io/agent-not-ready", "NoExecute"),
    }
    assert node.status.capacity["cpu"] == "2"
    assert node.status.capacity["pods"] == "20"
    assert node.status.allocatable["memory"] == f"{(7700 - (11 * 20 + 255) - 100) * 1024}Ki"
    assert [(c.type, c.status) for c in node.status.conditions if c.type == "Ready"] == [("Ready", "True")]


def test_spot_and_arm64_labels(
    cluster: SimulatedCluster, ec2: Any, subnet: str, core: client.CoreV1Api
) -> None:
    launch(ec2, subnet, instance_type="m6g.large", spot=True)
    cluster.step(30)
    [node] = core.list_node().items
    assert (
        node.metadata.labels["karpenter.sh/capacity-type"],
        node.metadata.labels["kubernetes.io/arch"],
    ) == ("spot", "arm64")
    assert node.status.capacity["memory"] == f"{(7700 - 64) * 1024}Ki"


def test_pods_wait_for_registration_then_run(
    cluster: SimulatedCluster, ec2: Any, subnet: str, core: client.CoreV1Api
) -> None:
    cluster.apply(manifests.deployment("inflate", 3, cpu="500m"))
    cluster.step(1)
    pending = core.list_namespaced_pod("default").items
    assert len(pending) == 3
    assert {c.reason for p in pending for c in p.status.conditions if c.type == "PodScheduled"} == {
        "Unschedulable"
    }
    launch(ec2, subnet)
    cluster.step(40)  # registered, agent taint gone after 5 s, but still unregistered: pods must wait
    assert all(p.spec.node_name is None for p in core.list_namespaced_pod("default").items)
    [node] = core.list_node().items
    assert [t.key for t in node.spec.taints] == ["karpenter.sh/unregistered"]
    remove_unregistered_taint(core, node)
    cluster.step(1)
    pods = core.list_namespaced_pod("default").items
    assert {p.spec.node_name for p in pods} == {node.metadata.name}
    assert {p.status.phase for p in pods} == {"Running"}


def test_terminated_instance_takes_its_node_and_pods(
    cluster: SimulatedCluster, ec2: Any, subnet: str, core: client.CoreV1Api
) -> None:
    instance_id = launch(ec2, subnet)
    cluster.step(30)
    remove_unregistered_taint(core, core.list_node().items[0])
    cluster.step(10)
    cluster.apply(manifests.deployment("web", 2, cpu="100m"))
    cluster.step(1)
    assert {p.status.phase for p in core.list_namespaced_pod("default").items} == {"Running"}
    old = {p.metadata.name for p in core.list_namespaced_pod("default").items}
    ec2.terminate_instances(InstanceIds=[instance_id])
    cluster.step(1)
    assert core.list_node().items == []
    pods = core.list_namespaced_pod("default").items
    assert len(pods) == 2
    assert not old & {p.metadata.name for p in pods}
    assert {p.status.phase for p in pods} == {"Pending"}


def test_instance_terminated_while_booting_never_registers(
    cluster: SimulatedCluster, ec2: Any, subnet: str, core: client.CoreV1Api
) -> None:
    instance_id = launch(ec2, subnet)
    cluster.step(10)
    ec2.terminate_instances(InstanceIds=[instance_id])
    cluster.step(60)
    assert core.list_node().items == []


def test_other_clusters_instances_are_ignored(
    cluster: SimulatedCluster, ec2: Any, subnet: str, core: client.CoreV1Api
) -> None:
    launch(ec2, subnet, cluster="someone-else")
    cluster.step(60)
    assert core.list_node().items == []


def test_polling_finds_unwatched_launches(ec2: Any, subnet: str) -> None:
    with SimulatedCluster(
        ec2=ec2, cluster_name=CLUSTER, ec2_poll_interval=10, kubelet=KubeletSettings(boot_delay=30)
    ) as cluster:
        cluster.step(1)
        launch(ec2, subnet)  # no hook: found by the poll at t=10, so it boots at t=40
        cluster.step(38)
        assert cluster.store.list("nodes") == []
        cluster.step(2)
        assert len(cluster.store.list("nodes")) == 1


def test_observers_see_pending_pods_over_time(
    cluster: SimulatedCluster, ec2: Any, subnet: str, core: client.CoreV1Api
) -> None:
    seen: list[Sample] = []
    cluster.observe(seen.append)
    start = cluster.now()
    cluster.apply(manifests.deployment("inflate", 2))
    cluster.step(5)
    launch(ec2, subnet)
    cluster.step(30)
    remove_unregistered_taint(core, core.list_node().items[0])
    cluster.step(10)
    timeline = [(s.time - start, s.pending_pods, s.nodes, s.running_pods) for s in seen]
    assert (0.0, 2, 0, 0) in timeline
    assert (35.0, 2, 1, 0) in timeline
    assert timeline[-1] == (45.0, 0, 1, 2)

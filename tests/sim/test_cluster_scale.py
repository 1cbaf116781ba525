"""SimulatedCluster at scale (slow): a 2,001-pod burst across three Deployments onto 36 launched nodes, then
31 idle virtual days. Asserts outcomes only; `pytest --durations` gives the wall time quoted in docs/emulator.md.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longshore_sim.cluster import SimulatedCluster
from tests.sim import manifests

USER_DATA = "#!/bin/bash\n/etc/eks/bootstrap.sh demo --kubelet-extra-args '--max-pods=110'"
DAY = 86_400


@pytest.fixture
def ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


@pytest.mark.slow
def test_burst_of_2001_pods_then_31_idle_days(ec2: Any) -> None:
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/20", AvailabilityZone="us-east-1a")["Subnet"][
        "SubnetId"
    ]
    template = ec2.create_launch_template(
        LaunchTemplateName="burst",
        LaunchTemplateData={
            "ImageId": "ami-12345678",
            "UserData": base64.b64encode(USER_DATA.encode()).decode(),
            "TagSpecifications": [
                {"ResourceType": "instance", "Tags": [{"Key": "longshore.io/cluster", "Value": "demo"}]}
            ],
        },
    )["LaunchTemplate"]["LaunchTemplateId"]
    with SimulatedCluster(ec2=ec2, cluster_name="demo", ec2_poll_interval=None) as cluster:
        cluster.watch_ec2_client(ec2)
        for name in ("a", "b", "c"):
            cluster.apply(manifests.deployment(name, 667, cpu="250m"))
        cluster.step(1)
        assert cluster.sample().pending_pods == 2001
        # 36 x m5.4xlarge: 16 vCPU each, about 63 pods of 250m per node
        ec2.create_fleet(
            Type="instant",
            TargetCapacitySpecification={"TotalTargetCapacity": 36, "DefaultTargetCapacityType": "on-demand"},
            LaunchTemplateConfigs=[
                {
                    "LaunchTemplateSpecification": {"LaunchTemplateId": template, "Version": "$Latest"},
                    "Overrides": [{"InstanceType": "m5.4xlarge", "SubnetId": subnet}],
                }
            ],
        )
        cluster.step(40)
        after_boot = cluster.sample()
        assert (after_boot.pending_pods, after_boot.running_pods, after_boot.ready_nodes) == (0, 2001, 36)
        start = cluster.now()
        cluster.step(31 * DAY)
        idle = cluster.sample()
        assert idle.time - start == 31 * DAY
        assert (idle.pending_pods, idle.running_pods, idle.nodes) == (0, 2001, 36)

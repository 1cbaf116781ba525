"""The fleet emulator of the moto kit (sim/aws.py) allocates the way EC2 does.

Matrix: ordering by a price function, refused pools reported in `Errors` with their code, pools switched back
on, nothing launched when every pool is refused; emulators attached to a session reach clients made later.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from longshore_sim.aws import FleetEmulator
from longshore_sim.throttle import ThrottleInjector
from tests.adapters.conftest import World


def _fleet(world: World, types: list[str], capacity_type: str = "spot", ec2: Any = None) -> dict[str, Any]:
    ec2 = ec2 or world.ec2
    template = ec2.create_launch_template(  # type: ignore[attr-defined]
        LaunchTemplateName=f"t-{len(types)}-{capacity_type}-{id(types)}",
        LaunchTemplateData={"ImageId": world.seeded.images[("AL2023", "x86_64", "")]},
    )["LaunchTemplate"]["LaunchTemplateName"]
    return ec2.create_fleet(  # type: ignore[no-any-return]
        Type="instant",
        TargetCapacitySpecification={"TotalTargetCapacity": 1, "DefaultTargetCapacityType": capacity_type},
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": template, "Version": "$Latest"},
                "Overrides": [
                    {"InstanceType": t, "SubnetId": world.seeded.subnets["us-east-1a"]} for t in types
                ],
            }
        ],
    )


@pytest.mark.slow
def test_emulator_orders_pools_by_price_and_reports_refused_ones(world: World) -> None:
    prices = {"m5.large": 0.04, "c5.large": 0.03, "r5.large": 0.05}
    emulator = world.fleet  # one emulator per client: a second one would only see the first one's choice
    emulator.price_of = lambda t, z, ct: prices.get(t)
    emulator.make_unavailable("c5.large", "us-east-1a", "spot", "MaxSpotInstanceCountExceeded")

    answer = _fleet(world, ["r5.large", "m5.large", "c5.large"])
    assert [i["InstanceType"] for i in answer["Instances"]] == ["m5.large"]
    assert [
        (e["LaunchTemplateAndOverrides"]["Overrides"]["InstanceType"], e["ErrorCode"])
        for e in answer["Errors"]
    ] == [("c5.large", "MaxSpotInstanceCountExceeded")]

    emulator.make_available("c5.large", "us-east-1a", "spot")
    again = _fleet(world, ["r5.large", "m5.large", "c5.large"])
    assert [i["InstanceType"] for i in again["Instances"]] == ["c5.large"] and again.get("Errors", []) == []


def test_emulator_launches_nothing_when_every_pool_is_refused(world: World) -> None:
    for t in ("m5.large", "c5.large"):
        world.fleet.make_unavailable(t, "us-east-1a", "on-demand")
    answer = _fleet(world, ["m5.large", "c5.large"], "on-demand")
    assert answer["Instances"] == []
    assert sorted(e["ErrorCode"] for e in answer["Errors"]) == ["InsufficientInstanceCapacity"] * 2
    assert world.live_instances() == []


@pytest.mark.slow
def test_emulators_attached_to_a_session_reach_clients_created_later(world: World) -> None:
    session = boto3.session.Session(
        region_name="us-east-1"
    )  # a fresh session: the hooks must not leak elsewhere
    emulator = FleetEmulator().attach(session)
    throttle = ThrottleInjector().attach(session, "ec2")
    emulator.make_unavailable("m5.large", "us-east-1a", "spot")
    throttle.throttle("DescribeSubnets", 1)

    ec2 = session.client("ec2", config=Config(retries={"total_max_attempts": 1, "mode": "standard"}))
    with pytest.raises(ClientError, match="RequestLimitExceeded"):
        ec2.describe_subnets()
    assert ec2.describe_subnets()["Subnets"]
    answer = _fleet(world, ["m5.large", "c5.large"], ec2=ec2)
    assert [i["InstanceType"] for i in answer["Instances"]] == ["c5.large"]
    assert [e["ErrorCode"] for e in answer["Errors"]] == ["InsufficientInstanceCapacity"]

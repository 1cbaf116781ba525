"""The seeded moto world (sim/aws.py `seed_cluster`) holds what production code reads.

One world per module (the tests only read it). Matrix: subnets/SG tagged for discovery in three zones; the
public SSM parameters of every AMI variant point at registered images of the right architecture, and the
resolver finds each by alias and by family; the table's keys, GSI and TTL; the queue's DLQ; the node role's
instance profile; the EKS cluster.
"""

from __future__ import annotations

import json

import pytest

from longshore.adapters.aws.amis import AmiResolver, ssm_parameter_name
from longshore.core.model import SelectorTerm
from longshore_sim.aws import AMI_VARIANTS
from tests.adapters.conftest import CLUSTER, World, node_class


@pytest.mark.slow
def test_seeded_network_and_identity(shared_world: World) -> None:
    world = shared_world
    subnets = world.ec2.describe_subnets(
        Filters=[{"Name": "tag:karpenter.sh/discovery", "Values": [CLUSTER]}]
    )["Subnets"]  # type: ignore[attr-defined]
    assert sorted(s["AvailabilityZone"] for s in subnets) == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert all(s["AvailableIpAddressCount"] > 4000 for s in subnets)
    groups = world.ec2.describe_security_groups(
        Filters=[{"Name": "tag:karpenter.sh/discovery", "Values": [CLUSTER]}]
    )  # type: ignore[attr-defined]
    assert [g["GroupId"] for g in groups["SecurityGroups"]] == [world.seeded.security_group_id]
    profiles = world.session.client("iam").list_instance_profiles_for_role(RoleName=world.seeded.role_name)
    assert [p["InstanceProfileName"] for p in profiles["InstanceProfiles"]] == [world.seeded.instance_profile]
    cluster = world.session.client("eks").describe_cluster(name=CLUSTER)["cluster"]
    assert (
        cluster["version"] == "1.30"
        and cluster["kubernetesNetworkConfig"]["serviceIpv4Cidr"] == "10.100.0.0/16"
    )


def test_every_ami_variant_has_a_public_parameter_and_an_image(shared_world: World) -> None:
    world = shared_world
    ssm = world.session.client("ssm")
    for family, arch, accelerator in AMI_VARIANTS:
        image_id = ssm.get_parameter(Name=ssm_parameter_name(family, "1.30", arch, accelerator))["Parameter"][
            "Value"
        ]
        [image] = world.ec2.describe_images(ImageIds=[image_id])["Images"]  # type: ignore[attr-defined]
        assert image["Architecture"] == arch
        assert image["State"] == "available"


def test_table_and_queues_follow_the_contract(shared_world: World) -> None:
    world = shared_world
    dynamodb = world.session.client("dynamodb")
    table = dynamodb.describe_table(TableName=world.seeded.table_name)["Table"]
    assert {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]} == {"pk": "HASH", "sk": "RANGE"}
    [index] = table["GlobalSecondaryIndexes"]
    assert (index["IndexName"], index["KeySchema"][0]["AttributeName"]) == ("by-instance", "instance_id")
    ttl = dynamodb.describe_time_to_live(TableName=world.seeded.table_name)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "ttl"
    sqs = world.session.client("sqs")
    attributes = sqs.get_queue_attributes(QueueUrl=world.seeded.queue_url, AttributeNames=["All"])[
        "Attributes"
    ]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=world.seeded.dlq_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    assert json.loads(attributes["RedrivePolicy"])["deadLetterTargetArn"] == dlq_arn


@pytest.mark.parametrize(("family", "arch", "accelerator"), AMI_VARIANTS)
def test_every_family_and_variant_resolves_through_its_public_parameter(
    shared_world: World, family: str, arch: str, accelerator: str
) -> None:
    world = shared_world
    resolver = AmiResolver(world.session.client("ssm"), world.ec2)
    alias = family.lower()  # al2, al2023, bottlerocket, windows2019, windows2022, windows2025
    by_alias = node_class(ami_selector_terms=(SelectorTerm(alias=f"{alias}@latest"),))
    by_family = node_class(ami_family=family, ami_selector_terms=())
    expected = world.seeded.images[(family, arch, accelerator)]
    assert resolver.resolve(by_alias, "1.30", arch, accelerator) == expected
    assert resolver.resolve(by_family, "1.30", arch, accelerator) == expected

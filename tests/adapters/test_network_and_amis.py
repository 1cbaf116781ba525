"""Subnets, security groups and AMIs from selector terms, against the seeded moto world.

Matrix: subnet terms by tag (value and "*"), id, Name; the per-zone choice by free IPs; security groups by tag,
id and name; empty selections name the node class; AMIs for every family x arch x GPU variant through the
public SSM parameters of the cluster's version, by alias (latest and pinned), and Custom selector terms (id,
name + owner, tags, ssmParameter) with the newest image winning.
"""

from __future__ import annotations

import pytest

from longshore.adapters.aws.amis import AmiError, AmiResolver, parse_alias, ssm_parameter_name
from longshore.adapters.aws.network import (
    SelectionError,
    Subnet,
    select_security_groups,
    select_subnets,
    subnet_per_zone,
)
from longshore.core.model import SelectorTerm
from longshore_sim.aws import put_public_parameter, register_image
from tests.adapters.conftest import CLUSTER, World, node_class

DISCOVERY = SelectorTerm(tags=(("karpenter.sh/discovery", CLUSTER),))


def test_subnets_by_tag_value_wildcard_id_and_name(world: World) -> None:
    seeded = world.seeded.subnets
    assert {s.subnet_id for s in select_subnets(world.ec2, [DISCOVERY])} == set(seeded.values())
    assert len(select_subnets(world.ec2, [SelectorTerm(tags=(("karpenter.sh/discovery", "*"),))])) == 3
    assert [s.subnet_id for s in select_subnets(world.ec2, [SelectorTerm(id=seeded["us-east-1b"])])] == [
        seeded["us-east-1b"]
    ]
    by_name = select_subnets(world.ec2, [SelectorTerm(name=f"{CLUSTER}-private-us-east-1c")])
    assert [s.zone for s in by_name] == ["us-east-1c"]
    ored = select_subnets(
        world.ec2, [SelectorTerm(id=seeded["us-east-1a"]), SelectorTerm(id=seeded["us-east-1c"])]
    )
    assert [s.zone for s in ored] == ["us-east-1a", "us-east-1c"]


@pytest.mark.slow
def test_tags_within_a_term_are_anded(world: World) -> None:
    term = SelectorTerm(tags=(("karpenter.sh/discovery", CLUSTER), ("Name", f"{CLUSTER}-private-us-east-1a")))
    assert [s.zone for s in select_subnets(world.ec2, [term])] == ["us-east-1a"]


def test_the_subnet_with_the_most_free_ips_wins_in_each_zone(world: World) -> None:
    small = world.ec2.create_subnet(  # type: ignore[attr-defined]
        VpcId=world.seeded.vpc_id,
        CidrBlock="10.0.200.0/24",
        AvailabilityZone="us-east-1a",
        TagSpecifications=[
            {"ResourceType": "subnet", "Tags": [{"Key": "karpenter.sh/discovery", "Value": CLUSTER}]}
        ],
    )["Subnet"]["SubnetId"]
    chosen = subnet_per_zone(select_subnets(world.ec2, [DISCOVERY]))
    assert chosen["us-east-1a"].subnet_id == world.seeded.subnets["us-east-1a"] != small
    assert sorted(chosen) == ["us-east-1a", "us-east-1b", "us-east-1c"]
    tie = subnet_per_zone(
        [Subnet("subnet-b", "z", 10), Subnet("subnet-a", "z", 10), Subnet("subnet-c", "z", 5)]
    )
    assert tie["z"].subnet_id == "subnet-a"


def test_empty_selections_name_the_node_class_and_field(world: World) -> None:
    with pytest.raises(SelectionError, match=r"EC2NodeClass web: spec.subnetSelectorTerms match no subnet"):
        select_subnets(world.ec2, [SelectorTerm(tags=(("karpenter.sh/discovery", "other"),))], "web")
    with pytest.raises(SelectionError, match=r"EC2NodeClass web: spec.securityGroupSelectorTerms"):
        select_security_groups(world.ec2, [SelectorTerm(name="nope")], "web")


def test_security_groups_by_tag_id_and_name(world: World) -> None:
    group = world.seeded.security_group_id
    assert select_security_groups(world.ec2, [DISCOVERY]) == (group,)
    assert select_security_groups(world.ec2, [SelectorTerm(id=group)]) == (group,)
    assert select_security_groups(world.ec2, [SelectorTerm(name=f"{CLUSTER}-nodes")]) == (group,)


def test_parameter_names_follow_the_published_layout() -> None:
    assert (
        ssm_parameter_name("AL2", "1.30", "arm64")
        == "/aws/service/eks/optimized-ami/1.30/amazon-linux-2-arm64/recommended/image_id"
    )
    assert (
        ssm_parameter_name("AL2", "1.30", "x86_64", "nvidia")
        == "/aws/service/eks/optimized-ami/1.30/amazon-linux-2-gpu/recommended/image_id"
    )
    assert (
        ssm_parameter_name("AL2023", "1.31", "arm64", "nvidia")
        == "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/arm64/nvidia/recommended/image_id"
    )
    assert (
        ssm_parameter_name("Bottlerocket", "1.30", "x86_64", "nvidia")
        == "/aws/service/bottlerocket/aws-k8s-1.30-nvidia/x86_64/latest/image_id"
    )
    assert (
        ssm_parameter_name("Bottlerocket", "1.30", "arm64", version="1.20.0")
        == "/aws/service/bottlerocket/aws-k8s-1.30/arm64/1.20.0/image_id"
    )


@pytest.mark.slow
def test_pinned_alias_reads_the_pinned_parameter(world: World) -> None:
    image = register_image(world.ec2, "bottlerocket-pinned", "x86_64")
    put_public_parameter(
        "us-east-1", ssm_parameter_name("Bottlerocket", "1.30", "x86_64", version="1.20.0"), image
    )
    pinned = node_class(ami_selector_terms=(SelectorTerm(alias="bottlerocket@1.20.0"),))
    assert AmiResolver(world.session.client("ssm"), world.ec2).resolve(pinned, "1.30", "x86_64") == image


def test_a_new_release_is_picked_up_once_the_cached_answer_is_older_than_the_ttl(world: World) -> None:
    name = ssm_parameter_name("AL2023", "1.30", "x86_64")
    first = register_image(world.ec2, "al2023-release-1", "x86_64")
    second = register_image(world.ec2, "al2023-release-2", "x86_64")
    put_public_parameter("us-east-1", name, first)
    resolver = AmiResolver(world.session.client("ssm"), world.ec2, ttl_s=300)
    latest = node_class(ami_selector_terms=(SelectorTerm(alias="al2023@latest"),))
    resolver.refresh_if_stale(1000.0)
    assert resolver.resolve(latest, "1.30", "x86_64") == first
    put_public_parameter("us-east-1", name, second)  # AWS publishes a new AMI
    resolver.refresh_if_stale(1299.0)
    assert resolver.resolve(latest, "1.30", "x86_64") == first, "still within the TTL"
    resolver.refresh_if_stale(1300.0)
    assert resolver.resolve(latest, "1.30", "x86_64") == second


def test_missing_parameter_and_bad_alias_are_clear_errors(world: World) -> None:
    resolver = AmiResolver(world.session.client("ssm"), world.ec2)
    with pytest.raises(
        AmiError,
        match=r"EC2NodeClass default: SSM parameter /aws/service/eks/optimized-ami/1.99/.* cannot be read \(ParameterNotFound\)",
    ):
        resolver.resolve(node_class(), "1.99", "x86_64")
    with pytest.raises(AmiError, match="alias 'ubuntu@latest'"):
        parse_alias("ubuntu@latest")
    with pytest.raises(AmiError, match=r"Custom needs spec\.amiSelectorTerms"):
        resolver.resolve(node_class(ami_family="Custom", ami_selector_terms=()), "1.30", "x86_64")


def test_custom_selector_terms_pick_the_newest_image_of_the_architecture(world: World) -> None:
    older = register_image(world.ec2, "team-node-1", "x86_64", owner="123456789012", tags={"team": "web"})
    newer = register_image(world.ec2, "team-node-2", "x86_64", owner="123456789012", tags={"team": "web"})
    arm = register_image(world.ec2, "team-node-arm", "arm64", owner="123456789012", tags={"team": "web"})
    world.ec2.create_tags(Resources=[older], Tags=[{"Key": "team", "Value": "web"}])  # type: ignore[attr-defined]
    images = world.ec2.describe_images(ImageIds=[older, newer])["Images"]  # type: ignore[attr-defined]
    newest = max(images, key=lambda i: (i["CreationDate"], i["Name"]))["ImageId"]
    ssm = world.session.client("ssm")

    by_tags = node_class(ami_family="Custom", ami_selector_terms=(SelectorTerm(tags=(("team", "web"),)),))
    assert AmiResolver(ssm, world.ec2).resolve(by_tags, "1.30", "x86_64") == newest
    assert AmiResolver(ssm, world.ec2).resolve(by_tags, "1.30", "arm64") == arm
    by_id = node_class(ami_family="Custom", ami_selector_terms=(SelectorTerm(id=older),))
    assert AmiResolver(ssm, world.ec2).resolve(by_id, "1.30", "x86_64") == older
    by_name = node_class(
        ami_family="Custom", ami_selector_terms=(SelectorTerm(name="team-node-1", owner="self"),)
    )
    assert AmiResolver(ssm, world.ec2).resolve(by_name, "1.30", "x86_64") == older
    put_public_parameter("us-east-1", "/aws/service/custom/team-image", arm)
    by_parameter = node_class(
        ami_family="Custom",
        ami_selector_terms=(SelectorTerm(ssm_parameter="/aws/service/custom/team-image"),),
    )
    assert AmiResolver(ssm, world.ec2).resolve(by_parameter, "1.30", "arm64") == arm
    with pytest.raises(AmiError, match="match no x86_64 image"):
        AmiResolver(ssm, world.ec2).resolve(by_parameter, "1.30", "x86_64")

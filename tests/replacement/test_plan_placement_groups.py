"""A surge replacement is offered the node class's placement group as the provisioner's plan is
(`services.placement_groups`, through `Ec2PlacementGroups` on moto, with `longshore_sim.placement_groups`
answering DescribePlacementGroups): a pod that asks for a partition gets a claim narrowed to it; a group that
cannot be looked up offers no claim in its pools, so the disruption rolls back rather than moving the pod
onto a node outside the group."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longshore.adapters.aws.network import Ec2PlacementGroups
from longshore.core import labels as wk
from longshore.core.model import ClusterConfig, SelectorTerm
from longshore.core.placement_groups import PlacementGroup, launch_partition
from longshore.ports.workflow import ReplacementUnavailableError
from longshore.services.replacement import ClusterReplacementLauncher
from longshore_sim.placement_groups import PlacementGroups
from tests.replacement.conftest import (
    NOW,
    NeverLaunches,
    Planning,
    catalog,
    cluster_config,
    node_class,
    node_manifest,
    old_claim,
    running_pod,
)


@pytest.fixture
def ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


def config(group_name: str) -> ClusterConfig:
    base = cluster_config()
    klass = replace(node_class(), placement_group=SelectorTerm(name=group_name))
    return replace(base, node_classes=(klass,))


def plan(the_config: ClusterConfig, groups: Any) -> Any:
    world = Planning(the_config)
    node = node_manifest("old", "i-0000000000000old1", config=the_config)
    node["metadata"]["labels"][wk.PLACEMENT_GROUP_PARTITION] = "2"
    world.cluster.add_node(node)
    claim = old_claim(node)
    world.store.put(claim)
    pinned = running_pod("db-0", "old", cpu="1")
    pinned["spec"]["nodeSelector"] = {wk.PLACEMENT_GROUP_PARTITION: "2"}
    world.cluster.add_pod(pinned)
    launcher = ClusterReplacementLauncher(
        cluster=world.cluster,
        store=world.store,
        offerings=world.offerings,
        launcher=NeverLaunches(),
        config=the_config,
        catalog=catalog,
        placement_groups=groups,
    )
    return launcher.plan(claim, world.cluster.get_node("old"), "drifted", NOW)


def test_the_replacement_is_narrowed_to_the_partition_its_pod_asks_for(ec2: Any) -> None:
    made = PlacementGroups().attach(ec2).create("hdfs", "partition", partition_count=3)
    [claim] = plan(config("hdfs"), Ec2PlacementGroups(ec2)).claims
    group = PlacementGroup(made.group_id, "hdfs", "partition", 3)
    assert launch_partition(claim.requirements, group) == 2
    assert dict(claim.labels)[wk.PLACEMENT_GROUP_ID] == made.group_id


def test_a_group_that_cannot_be_looked_up_offers_no_replacement(ec2: Any) -> None:
    PlacementGroups().attach(ec2)  # the account has no group `hdfs`: EC2's InvalidPlacementGroup.Unknown
    with pytest.raises(ReplacementUnavailableError, match="no node pool can take its pods"):
        plan(config("hdfs"), Ec2PlacementGroups(ec2))
    [open_key] = plan(config("hdfs"), None).claims  # without the port: the key is open, as before
    assert open_key.pods == ("default/db-0",)

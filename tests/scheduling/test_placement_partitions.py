"""Placement-group partitions as offerings (`core.placement_groups`, issue #17): a pod that selects a partition,
or spreads over them, gets claims narrowed to one partition that launch with its number; other pods and pools
outside a placement group plan as before. Each plan is verified by the independent checker."""

from __future__ import annotations

from collections import Counter

import pytest

from longshore.core import labels as wk
from longshore.core.placement_groups import (
    PlacementGroup,
    group_requirements,
    launch_partition,
)
from longshore.core.requirements import KeyRequirement, Requirements
from longshore.core.scheduling import Plan, solve
from tests.builders import (
    catalog,
    expr,
    instance_type,
    node,
    node_affinity,
    pod,
    pool,
    replicas,
    scheduling_input,
    zone_spread,
)
from tests.scheduling.checker import check

HDFS = PlacementGroup("pg-00000000000000001", "hdfs", "partition", 3)
HPC = PlacementGroup("pg-00000000000000002", "hpc", "cluster")
ZONES = ("us-east-1a",)


def _catalog():
    return catalog(
        instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096, zones=ZONES),
        instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.192, zones=ZONES),
    )


def _plan(pods, group: PlacementGroup | None = HDFS, **fields) -> Plan:
    groups = (("default", group),) if group is not None else ()
    inp = scheduling_input(pods, [pool()], _catalog(), placement_groups=groups, **fields)
    plan = solve(inp)
    assert check(inp, plan) == []
    return plan


def _claim(plan: Plan, key: str):
    return next(c for c in plan.new_claims if key in c.pods)


def _partition(claim) -> int | None:
    return launch_partition(claim.requirements, HDFS)


def test_a_pod_selecting_a_partition_gets_a_claim_that_launches_in_it_and_is_labelled_with_it():
    plan = _plan([pod("x", cpu="100m", node_selector={wk.PLACEMENT_GROUP_PARTITION: "2"})])
    claim = _claim(plan, "default/x")
    assert _partition(claim) == 2
    labels = dict(claim.labels)
    assert labels[wk.PLACEMENT_GROUP_PARTITION] == "2"
    assert labels[wk.PLACEMENT_GROUP_ID] == HDFS.group_id


def test_a_partition_the_group_does_not_have_leaves_the_pod_pending_with_the_key_named():
    plan = _plan([pod("x", cpu="100m", node_selector={wk.PLACEMENT_GROUP_PARTITION: "4"})])
    assert not plan.new_claims
    assert wk.PLACEMENT_GROUP_PARTITION in plan.reason_for("default/x")


def test_a_spread_over_the_partition_key_puts_one_claim_in_each_partition():
    spread = zone_spread("web", key=wk.PLACEMENT_GROUP_PARTITION)
    plan = _plan(replicas("web", 6, cpu="1", spread=[spread]))
    assert not plan.unschedulable
    per_pod = Counter(_partition(_claim(plan, f"default/web-{i}")) for i in range(6))
    assert per_pod == {1: 2, 2: 2, 3: 2}


def test_a_spread_counts_the_pods_on_existing_nodes_by_their_partition_label():
    spread = zone_spread("web", key=wk.PLACEMENT_GROUP_PARTITION)
    running = [pod(f"old-{i}", cpu="1", labels={"app": "web"}) for i in range(2)]
    existing = node(
        "n1",
        allocatable={"cpu": "2", "memory": "4Gi", "pods": "2"},
        labels={wk.PLACEMENT_GROUP_ID: HDFS.group_id, wk.PLACEMENT_GROUP_PARTITION: "1"},
        pods=running,
    )
    plan = _plan(replicas("web", 4, cpu="1", spread=[spread]), nodes=(existing,))
    assert Counter(_partition(_claim(plan, f"default/web-{i}")) for i in range(4)) == {2: 2, 3: 2}


def test_a_pod_excluding_partitions_launches_in_the_lowest_one_left():
    away = node_affinity([expr(wk.PLACEMENT_GROUP_PARTITION, "NotIn", "1")])
    claim = _claim(_plan([pod("x", cpu="100m", affinity=away)]), "default/x")
    assert _partition(claim) == 2


def test_a_pod_that_does_not_ask_leaves_the_partition_to_ec2():
    claim = _claim(_plan([pod("x", cpu="100m")]), "default/x")
    assert _partition(claim) is None
    assert wk.PLACEMENT_GROUP_PARTITION not in dict(claim.labels)
    assert dict(claim.labels)[wk.PLACEMENT_GROUP_ID] == HDFS.group_id


def test_a_cluster_group_launches_without_a_partition_and_a_pool_without_a_group_plans_as_before():
    claim = _claim(_plan([pod("x", cpu="100m")], HPC), "default/x")
    assert dict(claim.labels)[wk.PLACEMENT_GROUP_ID] == HPC.group_id
    assert launch_partition(claim.requirements, HPC) is None
    assert wk.PLACEMENT_GROUP_PARTITION not in dict(claim.labels)
    plain = _plan([pod("y", cpu="100m")], None)
    assert not any(key.startswith("karpenter.k8s.aws/placement") for key, _ in plain.new_claims[0].labels)
    by_id = pod("z", cpu="100m", node_selector={wk.PLACEMENT_GROUP_ID: HPC.group_id})
    assert _plan([by_id], HPC).new_claims and not _plan([by_id], HDFS).new_claims


def test_group_requirements_and_launch_partition_rules():
    assert group_requirements(None) == Requirements()
    assert group_requirements(HPC).values(wk.PLACEMENT_GROUP_PARTITION) is None
    assert group_requirements(HDFS).values(wk.PLACEMENT_GROUP_PARTITION) == frozenset({"1", "2", "3"})
    assert launch_partition(group_requirements(HDFS), HDFS) is None  # all partitions open: EC2 picks
    only = Requirements.from_keyed([KeyRequirement.in_(wk.PLACEMENT_GROUP_PARTITION, ("3", "2"))])
    assert launch_partition(only, HDFS) == 2
    assert launch_partition(only, HPC) is None and launch_partition(only, None) is None
    with pytest.raises(ValueError, match="allows none of its partitions"):
        launch_partition(
            Requirements.from_keyed([KeyRequirement.in_(wk.PLACEMENT_GROUP_PARTITION, ("9",))]), HDFS
        )

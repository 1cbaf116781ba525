"""Issue #17 on the simulated cluster: placement-group partitions as offerings (`partition-placement-group`).

Six datanode pods spread over the 3 partitions of the placement group `hdfs` (topologySpreadConstraints on
`karpenter.k8s.aws/placement-group-partition`): each partition gets one node launched with
`Placement.PartitionNumber`, labelled with it, holding 2 datanodes. Two client pods that ask for no partition get
a node launched without one; the simulated EC2 places it, and the lifecycle labels the node with the partition
DescribeInstances reports. Every node's label is the partition its instance runs in. Zero rule violations.
"""

from __future__ import annotations

from collections import Counter

import pytest

from longshore.core import labels as wk
from tests.scenarios.test_disruption_scenarios import assert_clean, run

pytestmark = pytest.mark.slow


def test_spread_pods_get_a_node_in_each_partition_and_every_node_carries_its_partition() -> None:
    runner, summary = run("partition-placement-group")
    assert_clean(summary)
    world = runner.world
    (group,) = world.placement_groups._groups.values()
    assert (group.strategy, group.partition_count) == ("partition", 3)
    nodes = world.cluster.store.view("nodes")
    booted = world.cluster.kubelet.booted_templates
    partition_of_node: dict[str, str] = {}
    launched_with: dict[str, int | None] = {}
    for node in nodes:
        instance_id = node["spec"]["providerID"].rsplit("/", 1)[1]
        labels = node["metadata"]["labels"]
        assert labels[wk.PLACEMENT_GROUP_ID] == group.group_id
        assert labels[wk.PLACEMENT_GROUP_PARTITION] == str(world.placement_groups.partition_of(instance_id))
        partition_of_node[node["metadata"]["name"]] = labels[wk.PLACEMENT_GROUP_PARTITION]
        launched_with[node["metadata"]["name"]] = booted[instance_id]["Placement"].get("PartitionNumber")
    pods = world.cluster.store.view("pods")
    assert len(pods) == 8 and all(p["spec"].get("nodeName") for p in pods)
    where = [(p["metadata"]["labels"]["app"], p["spec"]["nodeName"]) for p in pods]
    datanodes = Counter(partition_of_node[node] for app, node in where if app == "datanode")
    assert datanodes == {"1": 2, "2": 2, "3": 2}
    assert all(
        launched_with[node] == int(partition_of_node[node]) for app, node in where if app == "datanode"
    )
    clients = {node for app, node in where if app == "client"}
    assert clients and all(launched_with[node] is None for node in clients), "no partition asked: EC2 picks"

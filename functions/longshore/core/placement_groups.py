"""Placement groups: the requirements a node class's group adds to its pools, and the partition a claim launches in.

Theory of operation, after aws/karpenter-provider-aws (`pkg/providers/instancetype/offering/offering.go`
`InjectOfferings`, `placement_group_resolver.go`, `pkg/providers/launchtemplate/launchtemplate.go`,
`pkg/cloudprovider/cloudprovider.go`):

- A node class's `placementGroupSelector` resolves (`adapters.aws.network.select_placement_group`) to one
  available `PlacementGroup`: id, name, strategy (`cluster` | `partition` | `spread`) and, for `partition`,
  its `PartitionCount`.
- **Requirements.** Every type of a pool of that node class carries `karpenter.k8s.aws/placement-group-id In
  [id]`; with the `partition` strategy also `karpenter.k8s.aws/placement-group-partition In [1..count]`
  (`group_requirements`). Karpenter puts both on the instance types and expands each offering into one per
  partition; here they join the pool's template requirements, which has the same effect on scheduling: a pod
  may select a partition (node selector, affinity) or spread over them (topologySpreadConstraints with the
  partition key find the domains `1..count`), and a claim whose pods do so is narrowed to those partitions.
  A pod asking for a partition the group does not have, or for a placement group the pool is not in, fits
  no type of that pool. Cluster and spread groups add the id only.
- **Launch** (`launch_partition`). A claim narrowed to some partitions (its allowed set a strict subset of
  `1..count`) launches with `Placement.PartitionNumber` = the lowest of them (Karpenter picks the lowest
  too: EC2 takes one number; Karpenter compares them as strings, so `10` comes before `2` there) and its
  node is labelled with it. A claim left open launches without one: EC2 picks the partition, and the node is
  labelled at registration from the instance's `Placement.PartitionNumber` (Karpenter's
  `PlacementGroupRegistrationHook`). A group without the partition strategy never sets one.
Nothing here talks to AWS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from longshore.core import labels as wk
from longshore.core.requirements import KeyRequirement, Requirements

PARTITION: Final = "partition"
STRATEGIES: Final = ("cluster", PARTITION, "spread")


@dataclass(frozen=True, slots=True)
class PlacementGroup:
    """One available EC2 placement group a node class selected."""

    group_id: str
    name: str
    strategy: str  # cluster | partition | spread
    partition_count: int = 0  # the partition strategy only

    def partitions(self) -> tuple[str, ...]:
        """The partition numbers as label values, `1..count`; () for other strategies."""
        if self.strategy != PARTITION or self.partition_count <= 0:
            return ()
        return tuple(str(number) for number in range(1, self.partition_count + 1))


ByClass = tuple[tuple[str, PlacementGroup], ...]
"""Node class name -> the placement group it selected (sorted by name, hashable for `SchedulingInput`)."""


def group_of(by_class: ByClass, node_class: str) -> PlacementGroup | None:
    return next((group for name, group in by_class if name == node_class), None)


def group_requirements(group: PlacementGroup | None) -> Requirements:
    """What every type of a pool in `group` carries (module docstring); empty without a group."""
    if group is None:
        return Requirements()
    keyed = [KeyRequirement.in_(wk.PLACEMENT_GROUP_ID, (group.group_id,))]
    partitions = group.partitions()
    if partitions:
        keyed.append(KeyRequirement.in_(wk.PLACEMENT_GROUP_PARTITION, partitions))
    return Requirements.from_keyed(keyed)


def launch_partition(requirements: Requirements, group: PlacementGroup | None) -> int | None:
    """The `Placement.PartitionNumber` a claim with `requirements` launches with: the lowest partition they
    allow when they allow only some of the group's; None when they leave it open (EC2 picks) or the group is
    not a partition group. Requirements that allow none of them raise `ValueError` (the plan never makes such
    a claim)."""
    if group is None:
        return None
    partitions = group.partitions()
    allowed = [number for number in partitions if requirements.allows(wk.PLACEMENT_GROUP_PARTITION, number)]
    if not partitions or len(allowed) == len(partitions):
        return None
    if not allowed:
        raise ValueError(
            f"placement group {group.name or group.group_id}: the claim allows none of its partitions "
            f"1..{group.partition_count} ({wk.PLACEMENT_GROUP_PARTITION})"
        )
    return int(allowed[0])

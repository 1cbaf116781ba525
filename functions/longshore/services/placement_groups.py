"""The placement groups a plan offers (`core.placement_groups`), looked up through `ports.cloud.PlacementGroups`.

Rules: only node classes that select a group (`placementGroupSelector`) and that a planned (not static) pool
uses are looked up, each through the same port, so the provisioner, the disruption planner and the CLI offer
the same partitions. A class that selects a group whose lookup answers None (the port logged why) is
`unresolved`; each caller says what that means for it: the provisioner plans its pools with the key open
(the launch then fails naming the node class and the field); the disruption planner plans no replacement in
them and disrupts none of their nodes gracefully but empty ones (`core.disruption.state`); the surge plan
offers no claim in them (`services.replacement_plan`); `longshore plan` names the selector on stderr and plans
them with the key open (`cli.placement_groups`).
"""

from __future__ import annotations

from dataclasses import dataclass

from longshore.core.model import ClusterConfig
from longshore.core.placement_groups import ByClass, PlacementGroup
from longshore.ports.cloud import PlacementGroups


@dataclass(frozen=True, slots=True)
class GroupLookup:
    """The groups found (node class -> group, sorted) and the node classes whose lookup failed."""

    found: ByClass = ()
    unresolved: frozenset[str] = frozenset()


def lookup(groups: PlacementGroups | None, config: ClusterConfig) -> GroupLookup:
    """Each wanted node class's group (module docstring); nothing without a port."""
    if groups is None:
        return GroupLookup()
    wanted = {p.node_class for p in config.node_pools if p.replicas is None}
    found: list[tuple[str, PlacementGroup]] = []
    unresolved: set[str] = set()
    for node_class in config.node_classes:
        if node_class.placement_group is None or node_class.name not in wanted:
            continue
        group = groups.group(node_class)
        if group is None:
            unresolved.add(node_class.name)
        else:
            found.append((node_class.name, group))
    return GroupLookup(tuple(sorted(found, key=lambda item: item[0])), frozenset(unresolved))


def groups_by_class(groups: PlacementGroups | None, config: ClusterConfig) -> ByClass:
    """The placement group of each node class that selects one and that a planned (not static) pool uses."""
    return lookup(groups, config).found

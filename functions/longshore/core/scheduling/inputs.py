"""What the scheduler is asked: pending pods, the nodes that exist or are launching, the pools and the catalog.

Theory of operation: `SchedulingInput` is a snapshot, taken by a caller (the provisioner service, `longshore
plan`, a test). Nodes carry their own labels, taints, allocatable and bound pods, so the scheduler never
looks anything up. In-flight claims are `ExistingNode`s with `in_flight=True`: their DaemonSet pods are not
bound yet, so the scheduler subtracts the DaemonSets that would land there, and their ephemeral and startup
taints are ignored. Pool usage (for limits) is counted from the nodes labelled with the pool unless the
caller passes `pool_usage` explicitly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from longshore.core import labels as wk
from longshore.core.catalog import Catalog
from longshore.core.model import NodeClass, NodePool, Pairs, Settings, Taint
from longshore.core.placement_groups import ByClass as PlacementByClass
from longshore.core.pods import Pod
from longshore.core.reservations import ByClass
from longshore.core.resources import EMPTY, Resources

if TYPE_CHECKING:
    from longshore.core.scheduling.node_bases import NodeBases

OfferingKey = tuple[str, str, str]  # (instance type, zone, capacity type)


@dataclass(frozen=True, slots=True)
class ExistingNode:
    """A node in the cluster, or a claim that is launching, with the pods bound to it."""

    name: str
    labels: Pairs
    allocatable: Resources
    taints: tuple[Taint, ...] = ()
    pods: tuple[Pod, ...] = ()
    capacity: Resources | None = None  # what pool limits count; defaults to allocatable
    initialized: bool = True
    in_flight: bool = False
    startup_taints: tuple[Taint, ...] = ()
    deleting: bool = False

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)

    @property
    def nodepool(self) -> str | None:
        return self.label(wk.NODEPOOL)

    @property
    def zone(self) -> str | None:
        return self.label(wk.ZONE)

    def counted_capacity(self) -> Resources:
        return self.capacity if self.capacity is not None else self.allocatable


@dataclass(frozen=True, slots=True)
class SchedulingInput:
    pods: tuple[Pod, ...]
    pools: tuple[NodePool, ...]
    node_classes: tuple[NodeClass, ...]
    catalog: Catalog
    nodes: tuple[ExistingNode, ...] = ()
    in_flight: tuple[ExistingNode, ...] = ()
    daemonsets: tuple[Pod, ...] = ()  # one pod template per DaemonSet
    unavailable: frozenset[OfferingKey] = frozenset()
    pool_usage: Mapping[str, Resources] | None = None  # pool -> capacity in use (incl. "nodes")
    settings: Settings = field(
        default_factory=Settings
    )  # incl. the spot diversity rule (`settings.spot_diversity`)
    max_instance_types: int = 60
    #: Node class name -> its active capacity reservations (`core.reservations`), sorted by name.
    reservations: ByClass = ()
    #: Node class name -> the placement group it selected (`core.placement_groups`), sorted by name.
    placement_groups: PlacementByClass = ()
    #: The warm container's node bases (`node_bases`): the same plan, computed from what changed.
    bases: NodeBases | None = field(default=None, compare=False, repr=False)

    def usage_of(self, pool: str) -> Resources:
        if self.pool_usage is not None:
            return self.pool_usage.get(pool, EMPTY)
        used = EMPTY
        for node in (*self.nodes, *self.in_flight):
            if node.nodepool == pool and not node.deleting:
                used = used + node.counted_capacity() + Resources.of({"nodes": 1})
        return used

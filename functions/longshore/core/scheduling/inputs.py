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

from longshore.core import labels as wk
from longshore.core.catalog import Catalog
from longshore.core.model import NodeClass, NodePool, Pairs, Settings, Taint
from longshore.core.pods import Pod
from longshore.core.reservations import ByClass
from longshore.core.resources import EMPTY, Resources

#: The default cap on one spot (instance type, zone) pool's share of a batch's spot vCPU (`solver_diversity`).
SPOT_POOL_SHARE = 0.5
#: Batches with fewer spot claims are left as priced: too few nodes to spread.
SPOT_DIVERSITY_MIN_CLAIMS = 10
#: The most spot diversity may add to a plan's cost, as a share of it.
SPOT_DIVERSITY_COST = 0.01

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
    settings: Settings = field(default_factory=Settings)
    max_instance_types: int = 60
    #: Spot diversity (`solver_diversity`): no spot (type, zone) pool holds more than this share of the batch's
    #: spot vCPU, once the batch has at least `spot_diversity_min_claims` spot claims, at a cost of at most
    #: `spot_diversity_cost` of the plan's; a share of 1.0 turns it off.
    spot_pool_share: float = SPOT_POOL_SHARE
    spot_diversity_min_claims: int = SPOT_DIVERSITY_MIN_CLAIMS
    spot_diversity_cost: float = SPOT_DIVERSITY_COST
    #: Node class name -> its active capacity reservations (`core.reservations`), sorted by name.
    reservations: ByClass = ()

    def usage_of(self, pool: str) -> Resources:
        if self.pool_usage is not None:
            return self.pool_usage.get(pool, EMPTY)
        used = EMPTY
        for node in (*self.nodes, *self.in_flight):
            if node.nodepool == pool and not node.deleting:
                used = used + node.counted_capacity() + Resources.of({"nodes": 1})
        return used

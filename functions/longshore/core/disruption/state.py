"""What the disruption planner sees: managed nodes with their pods, PDBs, and the resolved drift targets.

Theory of operation: the planner Lambda snapshots the cluster (nodes, their claims, pods, PDBs) into these
frozen values. A `ManagedNode` joins a Kubernetes node with the claim it was launched for: the claim gives
the price, the capacity type, the hashes and AMI it was built from, and the launch time; the node gives the
labels, annotations, taints, readiness and the pods bound to it.

Placement groups: the snapshot carries each node class's group as the provisioner sees it
(`placement_groups`, `core.placement_groups`), so a simulated replacement is offered the same partitions. A
node class whose group could not be looked up this pass (`placement_unresolved`) keeps its pools' nodes out
of drift, consolidation and graceful expiry (`placement_blocker`; an empty node may still go, no pod moves)
and its pools offer no replacement: planning them with the partition key open could move a pod that asks for
a partition onto a node outside the group (Karpenter skips a NodePool whose node class is not ready, and its
nodes are no disruption candidates).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from longshore.core.catalog import Catalog
from longshore.core.model import ClusterConfig, Pairs
from longshore.core.placement_groups import ByClass as PlacementByClass
from longshore.core.pods import LabelSelector, Pod
from longshore.core.resources import Resources
from longshore.core.scheduling.inputs import ExistingNode, OfferingKey

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
DO_NOT_CONSOLIDATE = "karpenter.sh/do-not-consolidate"  # v1alpha5 node annotation
DO_NOT_EVICT = "karpenter.sh/do-not-evict"  # v1alpha5 pod annotation
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


@dataclass(frozen=True, slots=True)
class NodeCondition:
    """One `status.conditions` entry of a Node: its type, status and when it last changed (epoch seconds)."""

    type: str
    status: str
    since: float


@dataclass(frozen=True, slots=True)
class InstanceStatus:
    """EC2's DescribeInstanceStatus for one instance: the system and instance status checks (`ok`,
    `impaired`, `insufficient-data`, `initializing`, `not-applicable`), the earliest `ImpairedSince` of a
    failed check, and the scheduled events not yet completed as (code, not-before epoch)."""

    system: str = "ok"
    instance: str = "ok"
    impaired_since: float | None = None
    events: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class ManagedNode:
    """A node this cluster launched, with what its claim remembers about how it was built."""

    node: ExistingNode  # name, labels, allocatable, taints, bound pods
    instance_id: str
    nodepool: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float  # $/h of its offering
    created_at: float
    claim_id: str | None = None
    initialized_at: float | None = None
    last_pod_event_at: float | None = None  # last bind or removal of a (non-DaemonSet) pod
    annotations: Pairs = ()
    ready: bool = True
    disrupting: bool = False  # tainted karpenter.sh/disrupted, or a workflow runs for it
    nominated: bool = False  # the provisioner expects pending pods to land here
    nodepool_hash: str | None = None
    nodeclass_hash: str | None = None
    image_id: str | None = None
    conditions: tuple[NodeCondition, ...] = ()  # the Node's status conditions (node auto-repair reads them)
    instance_status: InstanceStatus | None = None  # EC2 status checks, when the planner reads them
    # a node in a Capacity Block: when it must start draining (40 min before the block ends, `core.reservations`)
    reservation_drain_at: float | None = None

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def pods(self) -> tuple[Pod, ...]:
        return self.node.pods

    def annotation(self, key: str) -> str | None:
        return dict(self.annotations).get(key)

    def reschedulable_pods(self) -> tuple[Pod, ...]:
        """Pods that must find a new home when the node goes (not DaemonSet, mirror, terminal or terminating)."""
        return tuple(
            p
            for p in self.node.pods
            if not p.is_daemonset and not p.is_mirror and not p.is_terminal and not p.deleting
        )

    @property
    def is_empty(self) -> bool:
        return not self.reschedulable_pods()

    def idle_since(self) -> float:
        """When the consolidateAfter clock started: the last pod event, else initialization, else launch."""
        for moment in (self.last_pod_event_at, self.initialized_at):
            if moment is not None:
                return moment
        return self.created_at


@dataclass(frozen=True, slots=True)
class PdbView:
    namespace: str
    name: str
    selector: LabelSelector
    disruptions_allowed: int

    def covers(self, pod: Pod) -> bool:
        return pod.namespace == self.namespace and self.selector.matches(pod.label_map())


@dataclass(frozen=True, slots=True)
class DisruptionInput:
    """One planner pass's snapshot. `now` is epoch seconds from the injected clock."""

    now: float
    config: ClusterConfig
    nodes: tuple[ManagedNode, ...]
    catalog: Catalog
    pending: tuple[Pod, ...] = ()
    pdbs: tuple[PdbView, ...] = ()
    daemonsets: tuple[Pod, ...] = ()
    unavailable: frozenset[OfferingKey] = frozenset()
    unmanaged: tuple[ExistingNode, ...] = ()  # nodes we do not own but pods may move to
    in_flight: tuple[ExistingNode, ...] = ()  # claims launching
    current_images: Mapping[str, frozenset[str]] = field(default_factory=dict)  # node class -> resolved AMIs
    pool_usage: Mapping[str, Resources] | None = None
    consolidation_min_savings_fraction: float = 0.05  # savings must reach this share of removed $/h
    buffers: tuple[Pod, ...] = ()  # CapacityBuffers' virtual pods (`core.disruption.buffer_hold`)
    placement_groups: PlacementByClass = ()  # node class -> its placement group (module docstring)
    placement_unresolved: frozenset[str] = frozenset()  # node classes whose group lookup failed this pass

    def placement_blocker(self, nodepool: str) -> str | None:
        """Why a node of `nodepool` may not be disrupted gracefully now: its node class's placement group
        could not be looked up (module docstring); None otherwise."""
        pool = next((p for p in self.config.node_pools if p.name == nodepool), None)
        if pool is None or pool.node_class not in self.placement_unresolved:
            return None
        return (
            f"the placement group of node class {pool.node_class} could not be looked up, "
            "so no replacement can be planned with its partitions"
        )

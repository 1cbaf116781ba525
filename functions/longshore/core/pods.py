"""Pods as the scheduler sees them: requests, node constraints, pod (anti-)affinity, spread and ports.

Theory of operation: a `Pod` is frozen and holds only what placement needs; `core.pod_manifest.
pod_from_manifest` builds it from a Kubernetes Pod dict. `Pod.requests` holds only what the manifest asks
for (the scheduler adds the `pods: 1` slot itself).

Node constraints keep Kubernetes' shape: `node_selector` is ANDed with *one* of the ORed
`required_node_terms`; preferences (`preferred_node_terms`, preferred pod (anti-)affinity, `ScheduleAnyway`
spreads) are kept apart so the scheduler can relax them one at a time, as Karpenter does. Labels in
`PER_POD_LABELS` differ between otherwise identical replicas and never decide placement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from longshore.core.model import Pairs, Requirement, pairs
from longshore.core.resources import EMPTY, Resources
from longshore.core.taints import Toleration

WhenUnsatisfiable = Literal["DoNotSchedule", "ScheduleAnyway"]
InclusionPolicy = Literal["Honor", "Ignore"]

#: Labels that differ between otherwise identical replicas; they never decide placement.
PER_POD_LABELS = frozenset(
    {
        "statefulset.kubernetes.io/pod-name",
        "apps.kubernetes.io/pod-index",
        "batch.kubernetes.io/job-completion-index",
    }
)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A Kubernetes label selector: `match_labels` ANDed with `match_expressions` (In/NotIn/Exists/DoesNotExist).

    The empty selector matches every pod (as in topology spread and affinity terms)."""

    match_labels: Pairs = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for expr in self.match_expressions:
            present = expr.key in labels
            if expr.operator == "In" and not (present and labels[expr.key] in expr.values):
                return False
            if expr.operator == "NotIn" and present and labels[expr.key] in expr.values:
                return False
            if expr.operator == "Exists" and not present:
                return False
            if expr.operator == "DoesNotExist" and present:
                return False
        return True

    def with_labels(self, extra: Pairs) -> LabelSelector:
        """This selector narrowed by `extra` exact labels (used for `matchLabelKeys`)."""
        return LabelSelector(pairs({**dict(self.match_labels), **dict(extra)}), self.match_expressions)

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.match_labels]
        parts += [
            f"{e.key} {e.operator} [{','.join(e.values)}]".rstrip(" []") for e in self.match_expressions
        ]
        return ",".join(parts) or "(all pods)"


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """A pod (anti-)affinity term: pods matching `selector` in `namespaces` define the `topology_key` domains.

    `weight` is set for preferred terms only. Empty `namespaces` and no `namespace_selector` means the pod's
    own namespace; a `namespace_selector` (even empty = all namespaces) widens it."""

    selector: LabelSelector
    topology_key: str
    namespaces: tuple[str, ...] = ()
    all_namespaces: bool = False
    weight: int = 0

    def covers_namespace(self, own_namespace: str, namespace: str) -> bool:
        if self.all_namespaces:
            return True
        return namespace in (self.namespaces or (own_namespace,))


@dataclass(frozen=True, slots=True)
class TopologySpread:
    """A topology spread constraint (the defaults are Kubernetes')."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: WhenUnsatisfiable
    selector: LabelSelector
    min_domains: int | None = None
    match_label_keys: tuple[str, ...] = ()
    node_affinity_policy: InclusionPolicy = "Honor"
    node_taints_policy: InclusionPolicy = "Ignore"


@dataclass(frozen=True, slots=True)
class HostPort:
    """A host port a container binds; two conflict on the same port and protocol when either IP is a wildcard
    or both IPs are equal."""

    port: int
    protocol: str = "TCP"
    ip: str = ""

    def conflicts(self, other: HostPort) -> bool:
        if self.port != other.port or self.protocol != other.protocol:
            return False
        wildcard = ("", "0.0.0.0", "::")
        return self.ip in wildcard or other.ip in wildcard or self.ip == other.ip


@dataclass(frozen=True, slots=True)
class PreferredNodeTerm:
    weight: int
    requirements: tuple[Requirement, ...]


#: `Pod.placement_key`: namespace, labels without `PER_POD_LABELS`, requests, node selector, required and
#: preferred node terms, pod affinity, anti-affinity and their preferred forms, tolerations, spreads, host
#: ports, owner kind and name, priority.
PlacementKey = tuple[
    str,
    Pairs,
    Resources,
    Pairs,
    tuple[tuple[Requirement, ...], ...],
    tuple[PreferredNodeTerm, ...],
    tuple[PodAffinityTerm, ...],
    tuple[PodAffinityTerm, ...],
    tuple[PodAffinityTerm, ...],
    tuple[PodAffinityTerm, ...],
    tuple[Toleration, ...],
    tuple[TopologySpread, ...],
    tuple[HostPort, ...],
    str,
    str,
    int,
]


@dataclass(frozen=True, slots=True)
class VolumeClaim:
    """A PersistentVolumeClaim a pod's volume uses: `spec.volumes[].persistentVolumeClaim.claimName`, or for an
    ephemeral volume (`spec.volumes[].ephemeral`) the claim its controller makes, `<pod name>-<volume name>`."""

    claim: str
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod, reduced to what scheduling, disruption and reporting need."""

    namespace: str
    name: str
    uid: str = ""
    labels: Pairs = ()
    annotations: Pairs = ()
    requests: Resources = EMPTY
    node_selector: Pairs = ()
    required_node_terms: tuple[tuple[Requirement, ...], ...] = ()  # ORed terms; empty = no requirement
    preferred_node_terms: tuple[PreferredNodeTerm, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_spread: tuple[TopologySpread, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    owner_kind: str = ""
    owner_name: str = ""
    priority: int = 0
    priority_class: str = ""
    node_name: str = ""
    nominated_node_name: str = ""
    phase: str = "Pending"
    unschedulable: bool = False  # condition PodScheduled=False, reason Unschedulable
    deleting: bool = False  # metadata.deletionTimestamp set
    created_at: str = ""  # metadata.creationTimestamp, RFC 3339 (orders the queue)
    scheduler_name: str = "default-scheduler"
    volume_claims: tuple[VolumeClaim, ...] = ()  # read per pass by `core.volume_topology`

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    @property
    def is_daemonset(self) -> bool:
        return self.owner_kind == "DaemonSet"

    @property
    def is_mirror(self) -> bool:
        return self.owner_kind == "Node" or any(
            k == "kubernetes.io/config.mirror" for k, _ in self.annotations
        )

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def is_bound(self) -> bool:
        return bool(self.node_name)

    def counts_for_topology(self) -> bool:
        """Terminal and terminating pods never count for spread or affinity (Karpenter `IgnoredForTopology`)."""
        return not self.is_terminal and not self.deleting

    def is_provisionable(self) -> bool:
        """Karpenter's rule (kubernetes-sigs/karpenter `pkg/utils/pod/scheduling.go` `IsProvisionable`), minus the Unschedulable condition, which `plan` cannot know:
        unbound, not nominated, not a DaemonSet or mirror pod, not terminal or terminating."""
        return (
            not self.node_name
            and not self.nominated_node_name
            and not self.is_daemonset
            and not self.is_mirror
            and not self.is_terminal
            and not self.deleting
        )

    def placement_key(self) -> PlacementKey:
        """What `placement_signature` keeps, as a plain tuple: two pods have equal keys exactly when their
        signatures are equal, and a key is much cheaper to build and hash than a `Pod` (the solver groups
        20,000 pods by it and builds one signature per class)."""
        return (
            self.namespace,
            tuple(kv for kv in self.labels if kv[0] not in PER_POD_LABELS),
            self.requests,
            self.node_selector,
            self.required_node_terms,
            self.preferred_node_terms,
            self.pod_affinity,
            self.pod_anti_affinity,
            self.preferred_pod_affinity,
            self.preferred_pod_anti_affinity,
            self.tolerations,
            self.topology_spread,
            self.host_ports,
            self.owner_kind,
            self.owner_name,
            self.priority,
        )

    def placement_signature(self) -> Pod:
        """This pod with its identity removed: equal signatures schedule identically (the pod class key)."""
        (
            namespace,
            labels,
            requests,
            node_selector,
            required_node_terms,
            preferred_node_terms,
            pod_affinity,
            pod_anti_affinity,
            preferred_pod_affinity,
            preferred_pod_anti_affinity,
            tolerations,
            topology_spread,
            host_ports,
            owner_kind,
            owner_name,
            priority,
        ) = self.placement_key()
        return Pod(
            namespace=namespace,
            name="",
            labels=labels,
            requests=requests,
            node_selector=node_selector,
            required_node_terms=required_node_terms,
            preferred_node_terms=preferred_node_terms,
            pod_affinity=pod_affinity,
            pod_anti_affinity=pod_anti_affinity,
            preferred_pod_affinity=preferred_pod_affinity,
            preferred_pod_anti_affinity=preferred_pod_anti_affinity,
            tolerations=tolerations,
            topology_spread=topology_spread,
            host_ports=host_ports,
            owner_kind=owner_kind,
            owner_name=owner_name,
            priority=priority,
        )

"""The normalised cluster model: node pools, node classes and cluster settings, with Karpenter v1 semantics.

Theory of operation: every Karpenter dialect (v1alpha5 Provisioner + AWSNodeTemplate, v1beta1 and v1 NodePool
+ EC2NodeClass) is parsed at the edge (`longshore.config`) and normalised into these frozen dataclasses. Where
the dialects differ in *meaning*, the model keeps the difference explicitly (for example `Expiry.forceful`:
graceful in v1alpha5/v1beta1, forceful in v1) and records where the pool came from in `Origin`, so later
decisions can follow the kind the pool was written in. Nothing here reads files or the environment.

Units: durations are whole seconds (`None` means "Never"); resources use `Resources` internal units.
Mappings are stored as sorted tuples of pairs so that every value is hashable and comparable; use
`dict(...)` to read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from longshore.core.resources import EMPTY, Limits, Resources

if TYPE_CHECKING:  # core.buffers builds on core.pods, which builds on this module
    from longshore.core.buffers import BufferTemplate, CapacityBuffer

Pairs = tuple[tuple[str, str], ...]

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
ConsolidationPolicy = Literal[
    "WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"
]  # Balanced: Karpenter v1.14+
RebalancePolicy = Literal["ignore", "notify", "replace"]
AmiFamily = Literal[
    "AL2", "AL2023", "Bottlerocket", "Ubuntu", "Windows2019", "Windows2022", "Windows2025", "Custom"
]


def pairs(mapping: dict[str, str] | None) -> Pairs:
    """Sorted, hashable form of a string mapping."""
    return tuple(sorted((mapping or {}).items()))


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a document came from: the dialect decides semantics that differ between Karpenter versions."""

    api_version: str
    kind: str
    file: str = ""
    line: int | None = None

    @property
    def is_v1alpha5(self) -> bool:
        return self.api_version in ("karpenter.sh/v1alpha5", "karpenter.k8s.aws/v1alpha1")

    @property
    def is_v1beta1(self) -> bool:
        return self.api_version.endswith("/v1beta1")

    @property
    def dialect(self) -> str:
        """`v1alpha5` (Provisioner/AWSNodeTemplate), `v1beta1` or `v1`."""
        if self.is_v1alpha5:
            return "v1alpha5"
        return "v1beta1" if self.is_v1beta1 else "v1"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One node selector requirement, as written (the algebra lives in `core.requirements`)."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()
    min_values: int | None = None


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: TaintEffect
    value: str = ""


@dataclass(frozen=True, slots=True)
class Budget:
    """A disruption budget: at most `nodes` (a count "5" or a percentage "10%") disrupted at once.

    With a `schedule` (5-field cron, or @daily-style macros) and `duration_seconds`, the budget applies
    only inside that window. `reasons` empty means every reason (Empty, Drifted, Underutilized, Expired...).
    """

    nodes: str = "10%"
    schedule: str | None = None
    duration_seconds: int | None = None
    reasons: tuple[str, ...] = ()


SAVINGS_THRESHOLD_ANNOTATION = "longshore.io/consolidation-min-savings"


@dataclass(frozen=True, slots=True)
class SavingsThreshold:
    """The least a consolidation move must save for the pool (a Longshore extension, not in Karpenter).

    Written as the NodePool annotation `longshore.io/consolidation-min-savings`: `"10%"` (a share of the $/h
    the move removes from the pool) or `"0.02"` / `"$0.02/h"` (dollars per hour). A move passes when the pool's
    share of its net savings reaches `max(per_hour, fraction x removed $/h)`.
    """

    per_hour: float = 0.0
    fraction: float = 0.0
    written: str = ""

    @staticmethod
    def parse(text: str) -> SavingsThreshold:
        """`"10%"`, `"0.02"` or `"$0.02/h"`; a ValueError says what is wrong."""
        value = text.strip()
        try:
            if value.endswith("%"):
                fraction = float(value[:-1]) / 100
                if not 0 <= fraction < 1:
                    raise ValueError
                return SavingsThreshold(fraction=fraction, written=value)
            amount = value.removeprefix("$").removesuffix("/h")
            per_hour = float(amount)
            if not 0 <= per_hour < 1e6 or amount != amount.strip():
                raise ValueError
            return SavingsThreshold(per_hour=per_hour, written=value)
        except ValueError:
            raise ValueError(
                f"{SAVINGS_THRESHOLD_ANNOTATION} {text!r} is neither a share of the removed cost such as "
                '"10%" (0-99%) nor dollars per hour such as "0.02" or "$0.02/h"'
            ) from None


@dataclass(frozen=True, slots=True)
class Disruption:
    consolidation_policy: ConsolidationPolicy = "WhenEmptyOrUnderutilized"
    consolidate_after_seconds: int | None = 0  # None = Never
    budgets: tuple[Budget, ...] = (Budget(),)
    consolidation_threshold: SavingsThreshold | None = None  # None: 5 % of the removed $/h (the default)


@dataclass(frozen=True, slots=True)
class Expiry:
    """Node expiry. `after_seconds=None` means Never.

    `forceful` is True for v1 pools (expiry ignores budgets and PDBs are bounded by terminationGracePeriod)
    and False for v1alpha5/v1beta1 pools (expiry is a graceful, budgeted disruption).
    """

    after_seconds: int | None = 720 * 3600
    forceful: bool = True


@dataclass(frozen=True, slots=True)
class KubeletConfig:
    """Kubelet settings that change scheduling (reserved resources, pod density) or node bootstrap."""

    cluster_dns: tuple[str, ...] = ()
    container_runtime: str | None = None
    max_pods: int | None = None
    pods_per_core: int | None = None
    system_reserved: Pairs = ()
    kube_reserved: Pairs = ()
    eviction_hard: Pairs = ()
    eviction_soft: Pairs = ()
    eviction_soft_grace_period: Pairs = ()
    eviction_max_pod_grace_period: int | None = None
    image_gc_high_threshold_percent: int | None = None
    image_gc_low_threshold_percent: int | None = None
    cpu_cfs_quota: bool | None = None
    extra: Pairs = ()  # other kubelet fields (AL2023 passes any field through), JSON-encoded values


@dataclass(frozen=True, slots=True)
class SelectorTerm:
    """One EC2 selector term (subnets, security groups, AMIs, capacity reservations).

    Terms are ORed; within a term, every set field must match (tags are ANDed; a tag value "*" means
    "key present"). `alias` is an AMI alias such as `al2023@latest`; `ssm_parameter` an SSM parameter name.
    """

    tags: Pairs = ()
    id: str | None = None
    name: str | None = None
    owner: str | None = None
    alias: str | None = None
    ssm_parameter: str | None = None
    instance_match_criteria: str | None = None  # capacity reservations only: "open" | "targeted"


@dataclass(frozen=True, slots=True)
class BlockDevice:
    device_name: str
    volume_size_gib: int | None = None
    volume_type: str | None = None
    encrypted: bool | None = None
    delete_on_termination: bool | None = None
    iops: int | None = None
    throughput: int | None = None
    kms_key_id: str | None = None
    snapshot_id: str | None = None
    root_volume: bool = False
    volume_initialization_rate: int | None = None  # MiB/s, v1 only


@dataclass(frozen=True, slots=True)
class NetworkInterface:
    """An extra network interface (v1 `networkInterfaces`, e.g. EFA)."""

    network_card_index: int
    device_index: int
    interface_type: str = "interface"  # "interface" | "efa-only"


@dataclass(frozen=True, slots=True)
class MetadataOptions:
    http_endpoint: str = "enabled"
    http_protocol_ipv6: str = "disabled"
    http_put_response_hop_limit: int = 1
    http_tokens: str = "required"


@dataclass(frozen=True, slots=True)
class NodeClass:
    """An EC2NodeClass (or v1alpha5 AWSNodeTemplate / inline provider): how nodes are launched."""

    name: str
    origin: Origin
    ami_family: AmiFamily = "AL2023"
    ami_selector_terms: tuple[SelectorTerm, ...] = ()
    subnet_selector_terms: tuple[SelectorTerm, ...] = ()
    security_group_selector_terms: tuple[SelectorTerm, ...] = ()
    capacity_reservation_selector_terms: tuple[SelectorTerm, ...] = ()
    role: str | None = None
    instance_profile: str | None = None
    user_data: str | None = None
    tags: Pairs = ()
    kubelet: KubeletConfig | None = None
    block_device_mappings: tuple[BlockDevice, ...] = ()
    instance_store_policy: str | None = None
    metadata_options: MetadataOptions = field(default_factory=MetadataOptions)
    detailed_monitoring: bool = False
    associate_public_ip_address: bool | None = None
    context: str | None = None
    launch_template_name: str | None = None  # v1alpha5 unmanaged launch template
    placement_group: SelectorTerm | None = None  # v1 placementGroupSelector (name or id)
    network_interfaces: tuple[NetworkInterface, ...] = ()
    ip_prefix_count: int | None = None
    connection_tracking: Pairs = ()  # v1 connectionTracking timeouts in seconds ("tcpEstablishedTimeout" ...)
    cpu_options: Pairs = ()  # v1 cpuOptions ("nestedVirtualization": "enabled"|"disabled")


@dataclass(frozen=True, slots=True)
class NodeOverlay:
    """A `karpenter.sh/v1alpha1` NodeOverlay: what the scheduling simulation assumes about the instance types
    (and offerings) its requirements match. `price` (USD/h) and `price_adjustment` (`+10%`, `-15%`, `+0.5`,
    `-0.25`) are exclusive; `capacity` adds extended resources. `core.overlays` applies them."""

    name: str
    origin: Origin
    requirements: tuple[Requirement, ...] = ()
    price: float | None = None
    price_adjustment: str | None = None
    capacity: Resources = EMPTY
    weight: int = 0


@dataclass(frozen=True, slots=True)
class NodePool:
    """A NodePool (or v1alpha5 Provisioner), normalised to v1 semantics."""

    name: str
    origin: Origin
    node_class: str  # name of the NodeClass it references
    weight: int = 0
    labels: Pairs = ()
    annotations: Pairs = ()
    requirements: tuple[Requirement, ...] = ()
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    expiry: Expiry = field(default_factory=Expiry)
    termination_grace_period_seconds: int | None = None
    disruption: Disruption = field(default_factory=Disruption)
    limits: Limits = field(default_factory=Limits)  # a limit of 0 is kept: a frozen pool
    kubelet: KubeletConfig | None = None  # v1alpha5/v1beta1 kept it on the pool; v1 on the node class
    rebalance: RebalancePolicy = "ignore"
    replicas: int | None = None  # v1 static NodePool: a fixed node count instead of provisioning for pods
    overlays: tuple[
        NodeOverlay, ...
    ] = ()  # the cluster's NodeOverlays, as the pool's instance types see them
    max_cost_per_hour: float | None = None  # annotation longshore.io/max-cost-per-hour (USD/h), None = no cap

    def effective_kubelet(self, node_class: NodeClass) -> KubeletConfig:
        """The kubelet config that applies: the pool's (older dialects), else the node class's, else defaults."""
        return self.kubelet or node_class.kubelet or KubeletConfig()


@dataclass(frozen=True, slots=True)
class InterruptionSettings:
    queue_name: str | None = None
    rebalance_default: RebalancePolicy = "ignore"
    max_receive_count: int = 5


@dataclass(frozen=True, slots=True)
class Settings:
    """Cluster-wide knobs (Karpenter's global settings / flags)."""

    vm_memory_overhead_percent: float = 0.075
    reserved_enis: int = 0
    batch_idle_seconds: float = 1.0
    batch_max_seconds: float = 10.0
    default_instance_profile: str | None = None  # v1alpha5 aws.defaultInstanceProfile
    isolated_vpc: bool = False
    enable_eni_limited_pod_density: bool = True
    tags: Pairs = ()  # tags added to every launched resource (v1alpha5 aws.tags)
    cluster_endpoint: str | None = None
    assume_role_arn: str | None = None
    enable_pod_eni: bool = False
    drift_enabled: bool = True  # v1alpha5 featureGates.driftEnabled (always on since v1)
    preference_policy: Literal["Respect", "Ignore"] = (
        "Respect"  # PREFERENCE_POLICY: honour preferred affinity
    )
    min_values_policy: Literal["Strict", "BestEffort"] = "Strict"  # MIN_VALUES_POLICY
    max_cost_per_hour: float | None = None  # cluster-wide cap in USD/h on the nodes of every pool (Longshore)
    spot_to_spot_consolidation: bool = False  # featureGates.spotToSpotConsolidation (off, as in Karpenter)


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    name: str
    region: str
    kubernetes_version: str
    node_pools: tuple[NodePool, ...]
    node_classes: tuple[NodeClass, ...]
    interruption: InterruptionSettings = field(default_factory=InterruptionSettings)
    settings: Settings = field(default_factory=Settings)
    pool_source: str = "config"  # or "cluster" | "both": where pools come from (`config.cluster_objects`)
    node_overlays: tuple[NodeOverlay, ...] = ()  # also on every pool (`NodePool.overlays`)
    buffers: tuple[CapacityBuffer, ...] = ()  # CapacityBuffer documents of the config file (`core.buffers`)
    buffer_templates: tuple[BufferTemplate, ...] = ()  # the PodTemplate documents of the config file

    def pool(self, name: str) -> NodePool:
        for pool in self.node_pools:
            if pool.name == name:
                return pool
        raise KeyError(name)

    def node_class_of(self, pool: NodePool) -> NodeClass:
        for node_class in self.node_classes:
            if node_class.name == pool.node_class:
                return node_class
        raise KeyError(pool.node_class)

    def pools_by_weight(self) -> tuple[NodePool, ...]:
        """Pools in the order the scheduler tries them: highest weight first, then name."""
        return tuple(sorted(self.node_pools, key=lambda p: (-p.weight, p.name)))

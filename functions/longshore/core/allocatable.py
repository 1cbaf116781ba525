"""Node capacity and allocatable per instance type, exactly as Karpenter's AWS provider computes them.

Theory of operation (aws/karpenter-provider-aws `pkg/providers/instancetype/types.go`):

    capacity.cpu               = vCPUs
    capacity.memory            = MiB (- 64 MiB CMA on arm64) - ceil(MiB x vmMemoryOverheadPercent) MiB
    capacity.pods              = kubelet.maxPods, else ENI-limited pods (AL2, AL2023, Bottlerocket, Custom):
                                 (ENIs - reservedENIs - node class efa-only ENIs on card 0) x (IPv4 per ENI - 1)
                                 + 2, else 110;
                                 then min(podsPerCore x vCPUs, pods) when podsPerCore > 0 (not Bottlerocket)
    capacity.ephemeral-storage = RAID0 instance store (instanceStorePolicy RAID0), else the root volume's size
                                 (block device with rootVolume, else the AMI family's root device), else 20 GiB
    kube-reserved              = cpu tiers 6 % of core 1, 1 % of core 2, 0.5 % of cores 3-4, 0.25 % above;
                                 memory 11 x pods + 255 MiB (pods: ENI-limited with no reserved ENIs for
                                 AL2/AL2023/Custom, capacity pods for Bottlerocket/Windows);
                                 ephemeral-storage 1 GiB; each key overridable by kubelet.kubeReserved
    system-reserved            = only what kubelet.systemReserved sets
    eviction threshold         = memory 100 MiB, ephemeral-storage 10 % of its capacity; overridden by
                                 evictionHard `memory.available` / `nodefs.available` (percentages of the
                                 capacity, rounded up; "100%" disables); evictionSoft does not count
    allocatable                = capacity - (kube-reserved + system-reserved + eviction), floored at 0,
                                 then memory - hugepages capacity

Extended resources (GPUs, EFA, branch ENIs) pass through from the instance type's capacity. DaemonSet
overhead is *not* subtracted here: it depends on the pool's taints and requirements, so the scheduler
computes it per pool and instance type. Results are memoised on the (hashable) inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from longshore.core import quantity
from longshore.core.catalog import DEFAULT_MAX_PODS, GIB, MIB, InstanceType
from longshore.core.model import KubeletConfig, NodeClass, Origin, Settings
from longshore.core.resources import Resources

CMA_ARM64_MIB = 64
DEFAULT_EPHEMERAL_GIB = 20
EVICTION_MEMORY_MIB = 100
EVICTION_NODEFS_PERCENT = 10.0
KUBE_RESERVED_EPHEMERAL_GIB = 1
_ENI_LIMITED_FAMILIES = frozenset({"AL2", "AL2023", "Bottlerocket", "Custom", "Ubuntu"})
_ENI_MEMORY_FAMILIES = frozenset({"AL2", "AL2023", "Custom", "Ubuntu"})
_ROOT_DEVICE = {"AL2": "/dev/xvda", "AL2023": "/dev/xvda", "Ubuntu": "/dev/xvda", "Bottlerocket": "/dev/xvdb"}
_CPU_TIERS = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, 1 << 31, 0.0025))

DEFAULT_NODE_CLASS = NodeClass(name="default", origin=Origin("karpenter.k8s.aws/v1", "EC2NodeClass"))


@dataclass(frozen=True, slots=True)
class Overhead:
    """What the node keeps for itself: kube-reserved, system-reserved and the hard eviction threshold."""

    kube_reserved: Resources
    system_reserved: Resources
    eviction_threshold: Resources

    @property
    def total(self) -> Resources:
        return self.kube_reserved + self.system_reserved + self.eviction_threshold


def kube_reserved_cpu_millicores(vcpus: int) -> int:
    """Karpenter's tiered CPU reservation (2 vCPU -> 70, 4 -> 80, 8 -> 90, 96 -> 310)."""
    millicores = vcpus * 1000
    reserved = 0
    for start, end, share in _CPU_TIERS:
        if millicores >= start:
            span = (end if millicores >= end else millicores) - start
            reserved += int(span * share)
    return reserved


def efa_only_interfaces(node_class: NodeClass, card: int | None = 0) -> int:
    """The node class's `efa-only` network interfaces (on network card `card`; every card when None)."""
    return sum(
        1
        for nic in node_class.network_interfaces
        if nic.interface_type == "efa-only" and (card is None or nic.network_card_index == card)
    )


def fits_network_interfaces(instance_type: InstanceType, node_class: NodeClass) -> bool:
    """Whether the type can carry the node class's efa-only interfaces: no more of them than the EFAs it
    supports (aws `pkg/providers/instancetype/compatibility` `networkInterfaceCheck`, case 5; the card and
    device checks need network-card data the catalog does not keep)."""
    wanted = efa_only_interfaces(node_class, card=None)
    return wanted == 0 or instance_type.capacity.get("vpc.amazonaws.com/efa") >= wanted


def eni_limited_pods(instance_type: InstanceType, reserved_enis: int = 0, efa_only: int = 0) -> int:
    """(ENIs - reserved - EFA-only) x (IPv4 per ENI - 1) + 2; falls back to the type's figure or 110.

    `efa_only` counts the node class's efa-only interfaces on the default network card: each takes an ENI
    slot there and carries no IP addresses (aws `pkg/providers/instancetype/types.go` `ENILimitedPods`).
    """
    if instance_type.enis <= 0 or instance_type.ipv4_per_eni <= 0:
        return instance_type.max_pods_eni if instance_type.max_pods_eni is not None else DEFAULT_MAX_PODS
    usable = instance_type.enis - reserved_enis - instance_type.efa_only_enis - efa_only
    if usable <= 0:
        return 0
    return usable * (instance_type.ipv4_per_eni - 1) + 2


def _memory_capacity(instance_type: InstanceType, settings: Settings) -> int:
    mib = instance_type.memory_mib - (CMA_ARM64_MIB if instance_type.arch == "arm64" else 0)
    overhead_mib = math.ceil(mib * settings.vm_memory_overhead_percent)
    return (mib - overhead_mib) * MIB


def _pods_capacity(
    instance_type: InstanceType, kubelet: KubeletConfig, node_class: NodeClass, settings: Settings
) -> int:
    if kubelet.max_pods is not None:
        pods = kubelet.max_pods
    elif node_class.ami_family in _ENI_LIMITED_FAMILIES:
        pods = eni_limited_pods(instance_type, settings.reserved_enis, efa_only_interfaces(node_class))
    else:
        pods = DEFAULT_MAX_PODS
    if kubelet.pods_per_core and kubelet.pods_per_core > 0 and node_class.ami_family != "Bottlerocket":
        pods = min(pods, kubelet.pods_per_core * instance_type.vcpus)
    return pods


def _ephemeral_capacity(instance_type: InstanceType, node_class: NodeClass) -> int:
    if node_class.instance_store_policy == "RAID0" and instance_type.instance_store_bytes > 0:
        return instance_type.instance_store_bytes
    devices = node_class.block_device_mappings
    root = next((d for d in devices if d.root_volume), None)
    if root is None:
        device_name = _ROOT_DEVICE.get(node_class.ami_family)
        root = next((d for d in devices if device_name and d.device_name == device_name), None)
    if root is not None and root.volume_size_gib:
        return root.volume_size_gib * GIB
    return DEFAULT_EPHEMERAL_GIB * GIB


def _percent(text: str) -> float:
    value = float(text.strip().rstrip("%"))
    return 0.0 if value == 100 else value


def _signal(capacity: int, text: str, resource: str) -> int:
    if text.strip().endswith("%"):
        return math.ceil(capacity / 100 * _percent(text))
    return quantity.parse(resource, text)


def _eviction(memory: int, storage: int, kubelet: KubeletConfig) -> Resources:
    threshold = {
        "memory": EVICTION_MEMORY_MIB * MIB,
        "ephemeral-storage": math.ceil(storage / 100 * EVICTION_NODEFS_PERCENT),
    }
    hard = dict(kubelet.eviction_hard)
    if "memory.available" in hard:
        threshold["memory"] = _signal(memory, hard["memory.available"], "memory")
    if "nodefs.available" in hard:
        threshold["ephemeral-storage"] = _signal(storage, hard["nodefs.available"], "ephemeral-storage")
    return Resources.of(threshold)


def _capacity(
    instance_type: InstanceType, kubelet: KubeletConfig, node_class: NodeClass, settings: Settings
) -> Resources:
    values = dict(instance_type.capacity.items)
    values["cpu"] = instance_type.vcpus * 1000
    values["memory"] = _memory_capacity(instance_type, settings)
    values["pods"] = _pods_capacity(instance_type, kubelet, node_class, settings)
    values["ephemeral-storage"] = _ephemeral_capacity(instance_type, node_class)
    if node_class.network_interfaces:  # the node class's interfaces replace the type's EFA count
        values["vpc.amazonaws.com/efa"] = efa_only_interfaces(node_class, card=None)
    if node_class.ami_family.startswith("Windows") and instance_type.ipv4_per_eni > 0:
        values["vpc.amazonaws.com/PrivateIPv4Address"] = instance_type.ipv4_per_eni - 1
    return Resources.of(values)


def _overhead(
    instance_type: InstanceType, kubelet: KubeletConfig, node_class: NodeClass, settings: Settings
) -> Overhead:
    capacity = _capacity(instance_type, kubelet, node_class, settings)
    if node_class.ami_family in _ENI_MEMORY_FAMILIES:
        reserve_pods = eni_limited_pods(instance_type, 0, efa_only_interfaces(node_class))
    else:
        reserve_pods = capacity.get("pods")
    kube = {
        "cpu": kube_reserved_cpu_millicores(instance_type.vcpus),
        "memory": (11 * reserve_pods + 255) * MIB,
        "ephemeral-storage": KUBE_RESERVED_EPHEMERAL_GIB * GIB,
    }
    for name, text in kubelet.kube_reserved:
        kube[name] = quantity.parse(name, text)
    system = Resources.of({name: quantity.parse(name, text) for name, text in kubelet.system_reserved})
    eviction = _eviction(capacity.get("memory"), capacity.get("ephemeral-storage"), kubelet)
    return Overhead(Resources.of(kube), system, eviction)


@lru_cache(maxsize=16384)
def _cached(
    instance_type: InstanceType, kubelet: KubeletConfig, node_class: NodeClass, settings: Settings
) -> tuple[Resources, Overhead, Resources]:
    capacity = _capacity(instance_type, kubelet, node_class, settings)
    spent = _overhead(instance_type, kubelet, node_class, settings)
    room = dict((capacity - spent.total).clamp_non_negative().items)
    hugepages = sum(amount for name, amount in capacity.items if name.startswith("hugepages-"))
    if hugepages:
        room["memory"] = max(0, room.get("memory", 0) - hugepages)
    return capacity, spent, Resources.of(room)


def _defaults(
    kubelet: KubeletConfig | None, node_class: NodeClass | None, settings: Settings | None
) -> tuple[KubeletConfig, NodeClass, Settings]:
    return kubelet or KubeletConfig(), node_class or DEFAULT_NODE_CLASS, settings or Settings()


def node_capacity(
    instance_type: InstanceType,
    kubelet: KubeletConfig | None = None,
    node_class: NodeClass | None = None,
    settings: Settings | None = None,
) -> Resources:
    """What a node of this type reports as `status.capacity` (what pool limits count)."""
    return _cached(instance_type, *_defaults(kubelet, node_class, settings))[0]


def overhead(
    instance_type: InstanceType,
    kubelet: KubeletConfig | None = None,
    node_class: NodeClass | None = None,
    settings: Settings | None = None,
) -> Overhead:
    """The breakdown of what capacity minus allocatable is made of."""
    return _cached(instance_type, *_defaults(kubelet, node_class, settings))[1]


def allocatable(
    instance_type: InstanceType,
    kubelet: KubeletConfig | None = None,
    node_class: NodeClass | None = None,
    settings: Settings | None = None,
) -> Resources:
    """What pods may request on a node of this type, before DaemonSets."""
    return _cached(instance_type, *_defaults(kubelet, node_class, settings))[2]

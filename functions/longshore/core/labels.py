"""Well-known node labels, their beta aliases, and the label domains a NodePool may not use.

Theory of operation: Karpenter (core `pkg/apis/v1/labels.go`, aws `pkg/apis/v1/labels.go`) splits node labels
into three groups. *Well-known* labels are set by Karpenter or the cloud provider from the instance type and
offering (zone, arch, instance family ...); pools and pods may narrow them. *Restricted* labels live in a
domain that the kubelet or Karpenter reserves (`kubernetes.io`, `k8s.io`, `karpenter.sh`, `karpenter.k8s.aws`)
or are set per node (`kubernetes.io/hostname`); a pool may not require or set them, because Karpenter could
never make the launched node carry them. Everything else is a *custom* label: a pool may define it and a pod
may select on it. Sub-domains `node.kubernetes.io`, `node-restriction.kubernetes.io` and `kops.k8s.io` are
exempt from the domain rule. Deprecated beta keys are rewritten to their stable names (`normalize_key`)
before any comparison, so `beta.kubernetes.io/arch` and `kubernetes.io/arch` are the same requirement.
"""

from __future__ import annotations

from typing import Final

# Kubernetes well-known labels.
ZONE: Final = "topology.kubernetes.io/zone"
REGION: Final = "topology.kubernetes.io/region"
INSTANCE_TYPE: Final = "node.kubernetes.io/instance-type"
ARCH: Final = "kubernetes.io/arch"
OS: Final = "kubernetes.io/os"
WINDOWS_BUILD: Final = "node.kubernetes.io/windows-build"
HOSTNAME: Final = "kubernetes.io/hostname"

# Karpenter (core) labels.
NODEPOOL: Final = "karpenter.sh/nodepool"
CAPACITY_TYPE: Final = "karpenter.sh/capacity-type"
REGISTERED: Final = "karpenter.sh/registered"
INITIALIZED: Final = "karpenter.sh/initialized"
DO_NOT_SYNC_TAINTS: Final = "karpenter.sh/do-not-sync-taints"
PROVISIONER_NAME: Final = "karpenter.sh/provisioner-name"  # v1alpha5 name of NODEPOOL

CAPACITY_TYPE_SPOT: Final = "spot"
CAPACITY_TYPE_ON_DEMAND: Final = "on-demand"
CAPACITY_TYPE_RESERVED: Final = "reserved"
CAPACITY_TYPES: Final = (CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_RESERVED)

# Karpenter AWS labels.
NODECLASS: Final = "karpenter.k8s.aws/ec2nodeclass"
#: The finalizer on every Node Longshore manages: deleting the Node starts the drain-and-terminate workflow,
#: and the finalizer is released only once the instance is gone (Karpenter's termination finalizer).
TERMINATION_FINALIZER: Final = "karpenter.sh/termination"
INSTANCE_CATEGORY: Final = "karpenter.k8s.aws/instance-category"
INSTANCE_FAMILY: Final = "karpenter.k8s.aws/instance-family"
INSTANCE_GENERATION: Final = "karpenter.k8s.aws/instance-generation"
INSTANCE_SIZE: Final = "karpenter.k8s.aws/instance-size"
INSTANCE_CPU: Final = "karpenter.k8s.aws/instance-cpu"
INSTANCE_CPU_MANUFACTURER: Final = "karpenter.k8s.aws/instance-cpu-manufacturer"
INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ: Final = "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"
INSTANCE_MEMORY: Final = "karpenter.k8s.aws/instance-memory"
INSTANCE_EBS_BANDWIDTH: Final = "karpenter.k8s.aws/instance-ebs-bandwidth"
INSTANCE_NETWORK_BANDWIDTH: Final = "karpenter.k8s.aws/instance-network-bandwidth"
INSTANCE_LOCAL_NVME: Final = "karpenter.k8s.aws/instance-local-nvme"
INSTANCE_GPU_NAME: Final = "karpenter.k8s.aws/instance-gpu-name"
INSTANCE_GPU_MANUFACTURER: Final = "karpenter.k8s.aws/instance-gpu-manufacturer"
INSTANCE_GPU_COUNT: Final = "karpenter.k8s.aws/instance-gpu-count"
INSTANCE_GPU_MEMORY: Final = "karpenter.k8s.aws/instance-gpu-memory"
INSTANCE_ACCELERATOR_NAME: Final = "karpenter.k8s.aws/instance-accelerator-name"
INSTANCE_ACCELERATOR_MANUFACTURER: Final = "karpenter.k8s.aws/instance-accelerator-manufacturer"
INSTANCE_ACCELERATOR_COUNT: Final = "karpenter.k8s.aws/instance-accelerator-count"
INSTANCE_HYPERVISOR: Final = "karpenter.k8s.aws/instance-hypervisor"
INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED: Final = "karpenter.k8s.aws/instance-encryption-in-transit-supported"
INSTANCE_CAPABILITY_FLEX: Final = "karpenter.k8s.aws/instance-capability-flex"
INSTANCE_TENANCY: Final = "karpenter.k8s.aws/instance-tenancy"
NITRO_SANDBOX: Final = "karpenter.k8s.aws/nitro-sandbox"
CAPACITY_RESERVATION_ID: Final = "karpenter.k8s.aws/capacity-reservation-id"
CAPACITY_RESERVATION_TYPE: Final = "karpenter.k8s.aws/capacity-reservation-type"
CAPACITY_RESERVATION_INTERRUPTIBLE: Final = "karpenter.k8s.aws/capacity-reservation-interruptible"
PLACEMENT_GROUP_ID: Final = "karpenter.k8s.aws/placement-group-id"
PLACEMENT_GROUP_PARTITION: Final = "karpenter.k8s.aws/placement-group-partition"
ZONE_ID: Final = "topology.k8s.aws/zone-id"

#: Instance-type labels whose values are integers (they may be constrained with Gt/Lt/Gte/Lte).
NUMERIC_INSTANCE_LABELS: Final = frozenset(
    {
        INSTANCE_GENERATION,
        INSTANCE_CPU,
        INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
        INSTANCE_MEMORY,
        INSTANCE_EBS_BANDWIDTH,
        INSTANCE_NETWORK_BANDWIDTH,
        INSTANCE_LOCAL_NVME,
        INSTANCE_GPU_COUNT,
        INSTANCE_GPU_MEMORY,
        INSTANCE_ACCELERATOR_COUNT,
    }
)

#: Instance-type labels every type defines: with its value, or as `DoesNotExist` when it has none (a type
#: without a GPU does not match `instance-gpu-name Exists`), as aws/karpenter-provider-aws
#: `pkg/providers/instancetype/types.go` `computeRequirements` starts each of them.
DEFINED_INSTANCE_LABELS: Final = frozenset(
    {
        INSTANCE_CPU_MANUFACTURER,
        INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
        INSTANCE_EBS_BANDWIDTH,
        INSTANCE_NETWORK_BANDWIDTH,
        INSTANCE_CATEGORY,
        INSTANCE_CAPABILITY_FLEX,
        INSTANCE_FAMILY,
        INSTANCE_GENERATION,
        INSTANCE_LOCAL_NVME,
        INSTANCE_SIZE,
        INSTANCE_GPU_NAME,
        INSTANCE_GPU_MANUFACTURER,
        INSTANCE_GPU_COUNT,
        INSTANCE_GPU_MEMORY,
        INSTANCE_ACCELERATOR_NAME,
        INSTANCE_ACCELERATOR_MANUFACTURER,
        INSTANCE_ACCELERATOR_COUNT,
    }
)

#: Labels Karpenter knows the values of; pools and pods may narrow them even though their domain is restricted.
WELL_KNOWN_LABELS: Final = frozenset(
    {
        NODEPOOL,
        ZONE,
        REGION,
        INSTANCE_TYPE,
        ARCH,
        OS,
        CAPACITY_TYPE,
        WINDOWS_BUILD,
        NODECLASS,
        INSTANCE_CATEGORY,
        INSTANCE_FAMILY,
        INSTANCE_GENERATION,
        INSTANCE_SIZE,
        INSTANCE_CPU,
        INSTANCE_CPU_MANUFACTURER,
        INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
        INSTANCE_MEMORY,
        INSTANCE_EBS_BANDWIDTH,
        INSTANCE_NETWORK_BANDWIDTH,
        INSTANCE_LOCAL_NVME,
        INSTANCE_GPU_NAME,
        INSTANCE_GPU_MANUFACTURER,
        INSTANCE_GPU_COUNT,
        INSTANCE_GPU_MEMORY,
        INSTANCE_ACCELERATOR_NAME,
        INSTANCE_ACCELERATOR_MANUFACTURER,
        INSTANCE_ACCELERATOR_COUNT,
        INSTANCE_HYPERVISOR,
        INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED,
        INSTANCE_CAPABILITY_FLEX,
        INSTANCE_TENANCY,
        NITRO_SANDBOX,
        CAPACITY_RESERVATION_ID,
        CAPACITY_RESERVATION_TYPE,
        CAPACITY_RESERVATION_INTERRUPTIBLE,
        PLACEMENT_GROUP_ID,
        PLACEMENT_GROUP_PARTITION,
        ZONE_ID,
    }
)

#: Deprecated keys and the stable key they mean.
ALIASES: Final = {
    "failure-domain.beta.kubernetes.io/zone": ZONE,
    "failure-domain.beta.kubernetes.io/region": REGION,
    "beta.kubernetes.io/arch": ARCH,
    "beta.kubernetes.io/os": OS,
    "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
    # The EBS CSI driver's zone key, which its PersistentVolumes carry (aws/karpenter-provider-aws
    # `pkg/operator/operator.go` adds it to Karpenter's NormalizedLabels).
    "topology.ebs.csi.aws.com/zone": ZONE,
}

#: Domains reserved by the kubelet (`kubernetes.io`, `k8s.io`) or by Karpenter; sub-domains included.
RESTRICTED_DOMAINS: Final = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws")
#: Sub-domains of the restricted domains that are nevertheless free to use.
DOMAIN_EXCEPTIONS: Final = ("kops.k8s.io", "node.kubernetes.io", "node-restriction.kubernetes.io")
#: Individual labels no pool may use, whatever their domain.
RESTRICTED_LABELS: Final = frozenset({HOSTNAME})


def normalize_key(key: str) -> str:
    """The stable name of a label key (`beta.kubernetes.io/arch` -> `kubernetes.io/arch`)."""
    return ALIASES.get(key, key)


def domain_of(key: str) -> str:
    """The DNS prefix of a label key (`karpenter.sh/nodepool` -> `karpenter.sh`; no prefix -> "")."""
    prefix, slash, _ = key.partition("/")
    return prefix if slash else ""


def _in_domain(domain: str, parent: str) -> bool:
    # Karpenter compares with strings.HasSuffix, so "notkubernetes.io" counts as kubernetes.io too.
    return domain.endswith(parent)


def is_restricted_domain(key: str) -> bool:
    """True when the key's domain is reserved (ignoring the well-known exemption)."""
    domain = domain_of(normalize_key(key))
    if any(_in_domain(domain, exempt) for exempt in DOMAIN_EXCEPTIONS):
        return False
    return any(_in_domain(domain, restricted) for restricted in RESTRICTED_DOMAINS)


def restricted_reason(key: str) -> str | None:
    """Why a pool may not require or set label `key`, or None when it may.

    Well-known labels are allowed; `kubernetes.io/hostname` and any other key in a restricted domain
    (`kubernetes.io`, `k8s.io`, `karpenter.sh`, `karpenter.k8s.aws`, except the sub-domains
    `node.kubernetes.io`, `node-restriction.kubernetes.io`, `kops.k8s.io`) are refused.
    """
    stable = normalize_key(key)
    if stable in WELL_KNOWN_LABELS:
        return None
    if stable in RESTRICTED_LABELS:
        return f"label {key!r} is restricted: it is set per node and cannot be required by a pool"
    if is_restricted_domain(stable):
        domain = domain_of(stable)
        parent = next(r for r in RESTRICTED_DOMAINS if _in_domain(domain, r))
        return (
            f"label {key!r} uses the restricted domain {parent!r}; use a well-known label of that domain "
            f"or a custom label outside the restricted domains ({', '.join(RESTRICTED_DOMAINS)})"
        )
    return None


def is_well_known(key: str) -> bool:
    return normalize_key(key) in WELL_KNOWN_LABELS


#: Labels in the `kubernetes.io` / `k8s.io` namespaces a kubelet may put on its own Node (`--node-labels`);
#: Kubernetes `IsKubeletLabel`. Any other key in those namespaces makes the kubelet refuse to start.
KUBELET_LABELS: Final = frozenset({HOSTNAME, ZONE, REGION, INSTANCE_TYPE, ARCH, OS, *ALIASES})
KUBELET_LABEL_NAMESPACES: Final = ("kubelet.kubernetes.io", "node.kubernetes.io")


def kubelet_may_set(key: str) -> bool:
    """Whether the kubelet accepts `key` in `--node-labels` (others must be applied to the Node by Longshore)."""
    domain = domain_of(key)
    if not any(domain == d or domain.endswith("." + d) for d in ("kubernetes.io", "k8s.io")):
        return True
    if key in KUBELET_LABELS:
        return True
    return any(domain == ns or domain.endswith("." + ns) for ns in KUBELET_LABEL_NAMESPACES)

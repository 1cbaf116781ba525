"""One case per manifest in aws/karpenter-provider-aws `examples/` (v1.14.1); see `tests.conformance.examples`.

Each case states the property its example demonstrates.
"""

from __future__ import annotations

from tests.conformance.examples import example

CPU = "karpenter.k8s.aws/instance-cpu"
MEM = "karpenter.k8s.aws/instance-memory"
CT = "karpenter.sh/capacity-type"
ARCH = "kubernetes.io/arch"
CAT = "karpenter.k8s.aws/instance-category"
PODS = [f"inflate-{i}" for i in range(3)]
GENERAL = {
    "scheduled": "all",
    "labels": {p: {ARCH: "amd64", CT: "on-demand", CAT: ["c", "m", "r"]} for p in PODS},
}

CASES = [
    example("v1/100-cpu-limit.yaml", "a pool limited to 100 vCPUs schedules within its limit", GENERAL),
    example("v1/al2-custom-ami.yaml", "AL2 with AMI ids and custom user data", GENERAL),
    example("v1/al2-custom-userdata.yaml", "custom MIME user data", GENERAL),
    example("v1/al2-kubelet-log-query.yaml", "user data enabling kubelet log query", GENERAL),
    example("v1/al2023-custom-userdata.yaml", "AL2023 NodeConfig user data", GENERAL),
    example("v1/bottlerocket.yaml", "Bottlerocket with OS and data volumes", GENERAL),
    example("v1/br-custom-userdata.yaml", "Bottlerocket TOML user data", GENERAL),
    example("v1/custom-family-with-alias.yaml", "Custom family resolved through an alias", GENERAL),
    example("v1/custom-family.yaml", "Custom family with AMI ids", GENERAL),
    example("v1/general-purpose.yaml", "general purpose c/m/r on-demand amd64", GENERAL),
    example(
        "v1/instance-store-ephemeral-storage.yaml",
        "RAID0 instance store: nodes come from types with more than 300 GB of local NVMe",
        {"scheduled": "all", "labels": {p: {"karpenter.k8s.aws/instance-local-nvme": ">300"} for p in PODS}},
    ),
    example(
        "v1/large-instances.yaml",
        "only types with 4+ vCPUs and 8+ GiB",
        {"scheduled": "all", "labels": {p: {CPU: ">3", MEM: ">8191"} for p in PODS}},
    ),
    example("v1/max-node-lifetime.yaml", "expireAfter 168h with terminationGracePeriod 24h", GENERAL),
    example(
        "v1/min-values-family.yaml",
        "spot with minValues 5 on instance-family",
        {"scheduled": "all", "labels": {p: {CT: "spot"} for p in PODS}},
    ),
    example(
        "v1/min-values-multiple-keys.yaml",
        "minValues on category, family and instance type",
        {"scheduled": "all", "labels": {p: {CT: "spot", CAT: ["c", "m", "r"]} for p in PODS}},
    ),
    example("v1/multiple-arch.yaml", "an amd64 pool and an arm64 pool", {"scheduled": "all"}),
    example("v1/multiple-ebs.yaml", "three EBS volumes per node", GENERAL),
    example("v1/spot.yaml", "spot only", {"scheduled": "all", "labels": {p: {CT: "spot"} for p in PODS}}),
    *(
        example(
            f"v1/{name}.yaml",
            f"{name}: the pods land on amd64 Windows nodes of the family's build",
            {
                "scheduled": "all",
                "labels": {
                    p: {
                        "kubernetes.io/os": "windows",
                        "node.kubernetes.io/windows-build": build,
                        ARCH: "amd64",
                    }
                    for p in PODS
                },
            },
        )
        for name, build in (
            ("windows-2019", "10.0.17763"),
            ("windows-2022", "10.0.20348"),
            ("windows-2025", "10.0.26100"),
            ("windows-custom-userdata", "10.0.20348"),
        )
    ),
    example(
        "workloads/arm64.yaml",
        "an arm64 pod lands on arm64",
        {"scheduled": "all", "labels": {f"arm64-{i}": {ARCH: "arm64"} for i in range(3)}},
    ),
    example(
        "workloads/disruption-budget.yaml",
        "ten amd64 pods behind a PDB",
        {"scheduled": "all", "labels": {f"pdb-{i}": {ARCH: "amd64"} for i in range(10)}},
        replicas=10,
    ),
    example(
        "workloads/gpu-amd.yaml",
        "AMD GPU pods wait: the offline us-east-1 catalog has no AMD GPU type",
        {"unschedulable": "all"},
        difference="moto's us-east-1 instance data (the offline catalog) has no g4ad/AMD GPU shapes",
    ),
    example(
        "workloads/gpu-nvidia.yaml",
        "NVIDIA GPU pods land on NVIDIA GPU types",
        {
            "scheduled": "all",
            "labels": {
                f"gpu-nvidia-{i}": {"karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia"} for i in range(3)
            },
        },
    ),
    example("workloads/inflate.yaml", "inflate schedules", {"scheduled": "all"}),
    example(
        "workloads/neuron.yaml",
        "Neuron pods land on Inferentia/Trainium types",
        {
            "scheduled": "all",
            "labels": {
                f"neuron-{i}": {"karpenter.k8s.aws/instance-accelerator-manufacturer": "aws"}
                for i in range(3)
            },
        },
    ),
    example(
        "workloads/prefer-arm.yaml",
        "a pod preferring arm64 gets arm64",
        {"scheduled": "all", "labels": {f"prefer-arm-{i}": {ARCH: "arm64"} for i in range(3)}},
    ),
    example(
        "workloads/spot.yaml",
        "a spot-selecting pod gets spot",
        {"scheduled": "all", "labels": {f"spot-{i}": {CT: "spot"} for i in range(3)}},
    ),
    example(
        "workloads/spread-hostname-zone.yaml",
        "hostname skew 2 and zone skew 5 both hold",
        {
            "scheduled": "all",
            "skew": [("kubernetes.io/hostname", [f"host-zone-spread-{i}" for i in range(12)], 2)],
        },
        replicas=12,
    ),
    example(
        "workloads/spread-hostname.yaml",
        "hostname skew 2 holds",
        {"scheduled": "all", "skew": [("kubernetes.io/hostname", [f"host-spread-{i}" for i in range(9)], 2)]},
        replicas=9,
    ),
    example(
        "workloads/spread-zone.yaml",
        "zone skew 1 over the zones",
        {
            "scheduled": "all",
            "skew": [("topology.kubernetes.io/zone", [f"zone-spread-{i}" for i in range(12)], 1)],
            "domains": [("topology.kubernetes.io/zone", [f"zone-spread-{i}" for i in range(12)], 6)],
        },
        replicas=12,
    ),
]

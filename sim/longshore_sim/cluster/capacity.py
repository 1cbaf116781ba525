"""A simulated node's capacity and allocatable, computed the way the node itself would report them.

Theory of operation: this is deliberately independent of the packing engine's estimates, so that a simulation
catches the engine's mistakes instead of agreeing with them:
- cpu = the instance type's vCPUs;
- memory = MemoryInfo.SizeInMiB x (1 - 0.06), rounded down to whole MiB, minus 64 MiB more on arm64 (the
  kernel and firmware reservation a booted node really loses, not the engine's 7.5 % guess);
- pods = the bootstrap's max-pods, or the AMI's ENI formula (ENIs x (IPv4 per ENI - 1) + 2) when it has none;
- ephemeral-storage = the root volume (20 GiB unless told otherwise); nvidia.com/gpu = the NVIDIA GPU count;
- vpc.amazonaws.com/efa = the EFA devices attached at launch (the launch template's `efa` and `efa-only`
  interfaces), what the EFA device plugin advertises; none without them, whatever the type supports.
Allocatable = capacity - kube-reserved - system-reserved - eviction-hard (memory.available and
nodefs.available, each a quantity or a percentage of the memory or ephemeral-storage capacity). When the
bootstrap does not set kube-reserved or eviction-hard, the EKS AMI's own defaults apply: cpu 6 % of the
first core, 1 % of the second, 0.5 % of cores 3-4 and 0.25 % above; memory 11 MiB x max-pods + 255 MiB;
ephemeral-storage 1 GiB; eviction-hard memory.available 100Mi and nodefs.available 10 %.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from longshore.core import quantity
from longshore.core.resources import Resources
from longshore_sim.cluster.bootstrap import NodeBootstrap

MEMORY_OVERHEAD_FRACTION = 0.06
ARM64_EXTRA_OVERHEAD_MIB = 64
DEFAULT_ROOT_VOLUME_GIB = 20
MIB = 2**20
GIB = 2**30


@dataclass(frozen=True, slots=True)
class NodeShape:
    arch: str
    capacity: Resources
    allocatable: Resources


def architecture(instance_type: Mapping[str, Any], image_arch: str | None = None) -> str:
    """`amd64` or `arm64`, from what the instance type supports (the image's arch when the type allows both)."""
    supported = (instance_type.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ["x86_64"]
    chosen = image_arch if image_arch in supported else supported[0]
    return "arm64" if chosen == "arm64" else "amd64"


def eni_max_pods(instance_type: Mapping[str, Any]) -> int:
    network = instance_type.get("NetworkInfo") or {}
    enis = int(network.get("MaximumNetworkInterfaces") or 1)
    ips = int(network.get("Ipv4AddressesPerInterface") or 1)
    return enis * (ips - 1) + 2


def default_kube_reserved(vcpus: int, max_pods: int) -> Resources:
    cpu = 0.0
    for core in range(1, vcpus + 1):
        cpu += 60 if core == 1 else 10 if core == 2 else 5 if core <= 4 else 2.5
    return Resources.of({"cpu": int(cpu), "memory": (11 * max_pods + 255) * MIB, "ephemeral-storage": GIB})


def _parse(values: Mapping[str, str]) -> Resources:
    return Resources.of({name: quantity.parse(name, text) for name, text in values.items()})


def _eviction(thresholds: Mapping[str, str], capacity: Resources) -> Resources:
    amounts: dict[str, int] = {}
    for signal, text in thresholds.items():
        resource = {"memory.available": "memory", "nodefs.available": "ephemeral-storage"}.get(signal)
        if resource is None:
            continue
        if text.endswith("%"):
            amounts[resource] = math.ceil(capacity.get(resource) * float(text[:-1]) / 100)
        else:
            amounts[resource] = quantity.parse(resource, text)
    return Resources.of(amounts)


def node_shape(
    instance_type: Mapping[str, Any],
    bootstrap: NodeBootstrap,
    *,
    image_arch: str | None = None,
    root_volume_gib: int = DEFAULT_ROOT_VOLUME_GIB,
    efa_devices: int = 0,
) -> NodeShape:
    """Capacity and allocatable for a node of `instance_type` (a DescribeInstanceTypes entry)."""
    arch = architecture(instance_type, image_arch)
    vcpus = int((instance_type.get("VCpuInfo") or {}).get("DefaultVCpus") or 1)
    memory_mib = math.floor(
        int((instance_type.get("MemoryInfo") or {}).get("SizeInMiB") or 0) * (1 - MEMORY_OVERHEAD_FRACTION)
    )
    if arch == "arm64":
        memory_mib -= ARM64_EXTRA_OVERHEAD_MIB
    max_pods = bootstrap.max_pods if bootstrap.max_pods is not None else eni_max_pods(instance_type)
    gpus = sum(
        int(g.get("Count") or 0)
        for g in (instance_type.get("GpuInfo") or {}).get("Gpus") or []
        if str(g.get("Manufacturer", "")).upper() == "NVIDIA"
    )
    ephemeral = root_volume_gib * GIB
    capacity = Resources.of(
        {
            "cpu": vcpus * 1000,
            "memory": memory_mib * MIB,
            "pods": max_pods,
            "ephemeral-storage": ephemeral,
            "nvidia.com/gpu": gpus,
            "vpc.amazonaws.com/efa": efa_devices,
        }
    )
    kube_reserved = (
        _parse(bootstrap.kube_reserved) if bootstrap.kube_reserved else default_kube_reserved(vcpus, max_pods)
    )
    eviction = bootstrap.eviction_hard or {"memory.available": "100Mi", "nodefs.available": "10%"}
    allocatable = (
        capacity - kube_reserved - _parse(bootstrap.system_reserved) - _eviction(eviction, capacity)
    ).clamp_non_negative()
    return NodeShape(arch, capacity, allocatable)


def quantities(resources: Resources) -> dict[str, str]:
    """Node-status form: memory in Ki as the kubelet reports it, everything else canonical."""
    result = resources.to_quantities()
    if resources.get("memory"):
        result["memory"] = f"{resources.get('memory') // 1024}Ki"
    if resources.get("ephemeral-storage"):
        result["ephemeral-storage"] = f"{resources.get('ephemeral-storage') // 1024}Ki"
    return result

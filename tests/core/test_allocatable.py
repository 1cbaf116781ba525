"""Allocatable per Karpenter's formula (`core.allocatable`), checked against the worked numbers and Karpenter's published values.

The expected values in `test_matches_karpenter_published_allocatable` come from Karpenter's generated
reference page (aws/karpenter-provider-aws `website/content/en/docs/reference/instance-types.md`, AL2023,
no block device mappings), not from this implementation.
"""

from __future__ import annotations

import pytest

from longshore.core.allocatable import (
    allocatable,
    eni_limited_pods,
    kube_reserved_cpu_millicores,
    node_capacity,
    overhead,
)
from longshore.core.catalog import GIB, MIB, InstanceType, Offering, make_instance_type
from longshore.core.model import BlockDevice, KubeletConfig, NodeClass, Origin, Settings
from longshore.core.resources import Resources

ORIGIN = Origin("karpenter.k8s.aws/v1", "EC2NodeClass")
OFFER = (Offering("us-east-1a", "on-demand", 0.1),)


def it(
    name: str,
    vcpus: int,
    mib: int,
    enis: int,
    ips: int,
    arch: str = "amd64",
    extended: dict[str, int] | None = None,
) -> InstanceType:
    return make_instance_type(
        name,
        vcpus=vcpus,
        memory_mib=mib,
        offerings=OFFER,
        arch=arch,
        enis=enis,
        ipv4_per_eni=ips,
        extended=extended,
    )


M5_LARGE = it("m5.large", 2, 8192, 3, 10)


@pytest.mark.parametrize(
    ("vcpus", "millicores"), [(1, 60), (2, 70), (4, 80), (8, 90), (12, 100), (48, 190), (96, 310)]
)
def test_kube_reserved_cpu_tiers(vcpus: int, millicores: int) -> None:
    assert kube_reserved_cpu_millicores(vcpus) == millicores


@pytest.mark.parametrize(
    ("instance_type", "cpu", "memory_mib", "pods"),
    [
        (M5_LARGE, "1930m", 6903, 29),
        (it("a1.medium", 1, 2048, 2, 4, "arm64"), "940m", 1392, 8),
        (it("a1.large", 2, 4096, 3, 10, "arm64"), "1930m", 3055, 29),
        (it("c3.large", 2, 3840, 3, 10), "1930m", 2878, 29),
        (it("m5zn.3xlarge", 12, 49152, 8, 30), "11900m", 42536, 234),
        (it("m5zn.12xlarge", 48, 196608, 15, 50), "47810m", 173400, 737),
        (it("m5n.24xlarge", 96, 393216, 15, 50), "95690m", 355262, 737),
    ],
)
def test_matches_karpenter_published_allocatable(
    instance_type: InstanceType, cpu: str, memory_mib: int, pods: int
) -> None:
    room = allocatable(instance_type)
    assert room.to_quantities()["cpu"] == cpu
    assert room["memory"] == memory_mib * MIB
    assert room["pods"] == pods
    assert room["ephemeral-storage"] == 17 * GIB  # 20 GiB - 1 GiB kube-reserved - 10 % eviction


def test_extended_resources_pass_through() -> None:
    gpu = it("p3.8xlarge", 32, 249856, 8, 30, extended={"nvidia.com/gpu": 4})
    assert allocatable(gpu)["nvidia.com/gpu"] == 4
    assert node_capacity(gpu)["nvidia.com/gpu"] == 4


def test_overhead_breakdown_adds_up() -> None:
    spent = overhead(M5_LARGE)
    assert spent.kube_reserved == Resources.parse(
        {"cpu": "70m", "memory": "574Mi", "ephemeral-storage": "1Gi"}
    )
    assert spent.system_reserved == Resources()
    assert spent.eviction_threshold == Resources.parse({"memory": "100Mi", "ephemeral-storage": "2Gi"})
    assert node_capacity(M5_LARGE) - spent.total == allocatable(M5_LARGE)


def test_vm_overhead_percent_comes_from_settings() -> None:
    capacity = node_capacity(M5_LARGE, settings=Settings(vm_memory_overhead_percent=0.0))
    assert capacity["memory"] == 8192 * MIB
    assert node_capacity(M5_LARGE)["memory"] == (8192 - 615) * MIB


def test_reserved_enis_lower_pods_but_not_kube_reserved_memory() -> None:
    settings = Settings(reserved_enis=1)
    assert eni_limited_pods(M5_LARGE, 1) == 2 * 9 + 2
    assert node_capacity(M5_LARGE, settings=settings)["pods"] == 20
    assert overhead(M5_LARGE, settings=settings).kube_reserved["memory"] == (11 * 29 + 255) * MIB


def test_max_pods_and_pods_per_core() -> None:
    assert allocatable(M5_LARGE, KubeletConfig(max_pods=110))["pods"] == 110
    assert allocatable(M5_LARGE, KubeletConfig(pods_per_core=4))["pods"] == 8
    assert allocatable(M5_LARGE, KubeletConfig(max_pods=110, pods_per_core=20))["pods"] == 40
    bottlerocket = NodeClass("br", ORIGIN, ami_family="Bottlerocket")
    assert allocatable(M5_LARGE, KubeletConfig(max_pods=110, pods_per_core=4), bottlerocket)["pods"] == 110
    # Bottlerocket reserves memory for the pods it will really run.
    assert (
        overhead(M5_LARGE, KubeletConfig(max_pods=110), bottlerocket).kube_reserved["memory"]
        == (11 * 110 + 255) * MIB
    )


def test_windows_is_not_eni_limited() -> None:
    windows = NodeClass("win", ORIGIN, ami_family="Windows2022")
    capacity = node_capacity(M5_LARGE, node_class=windows)
    assert capacity["pods"] == 110
    assert capacity["vpc.amazonaws.com/PrivateIPv4Address"] == 9


def test_user_reserved_and_eviction_hard_overrides() -> None:
    kubelet = KubeletConfig(
        system_reserved=(("cpu", "100m"), ("memory", "128Mi")),
        kube_reserved=(("memory", "500Mi"),),
        eviction_hard=(("memory.available", "5%"), ("nodefs.available", "100%")),
    )
    spent = overhead(M5_LARGE, kubelet)
    capacity = node_capacity(M5_LARGE, kubelet)
    assert spent.kube_reserved == Resources.parse(
        {"cpu": "70m", "memory": "500Mi", "ephemeral-storage": "1Gi"}
    )
    assert spent.system_reserved == Resources.parse({"cpu": "100m", "memory": "128Mi"})
    assert spent.eviction_threshold["memory"] == -(-capacity["memory"] * 5 // 100)
    assert spent.eviction_threshold["ephemeral-storage"] == 0  # "100%" disables the threshold
    room = allocatable(M5_LARGE, kubelet)
    assert room["cpu"] == 2000 - 170
    assert room["memory"] == capacity["memory"] - (500 + 128) * MIB - spent.eviction_threshold["memory"]
    absolute = overhead(M5_LARGE, KubeletConfig(eviction_hard=(("memory.available", "200Mi"),)))
    assert absolute.eviction_threshold["memory"] == 200 * MIB


def test_ephemeral_storage_from_root_volume_or_instance_store() -> None:
    big_root = NodeClass(
        "big", ORIGIN, block_device_mappings=(BlockDevice("/dev/xvda", volume_size_gib=100),)
    )
    assert node_capacity(M5_LARGE, node_class=big_root)["ephemeral-storage"] == 100 * GIB
    assert allocatable(M5_LARGE, node_class=big_root)["ephemeral-storage"] == (100 - 1 - 10) * GIB
    flagged = NodeClass(
        "f", ORIGIN, block_device_mappings=(BlockDevice("/dev/sdz", volume_size_gib=50, root_volume=True),)
    )
    assert node_capacity(M5_LARGE, node_class=flagged)["ephemeral-storage"] == 50 * GIB
    bottlerocket = NodeClass(
        "br",
        ORIGIN,
        ami_family="Bottlerocket",
        block_device_mappings=(
            BlockDevice("/dev/xvda", volume_size_gib=4),
            BlockDevice("/dev/xvdb", volume_size_gib=60),
        ),
    )
    assert node_capacity(M5_LARGE, node_class=bottlerocket)["ephemeral-storage"] == 60 * GIB
    nvme = InstanceType(
        "m5d.large",
        M5_LARGE.capacity,
        M5_LARGE.labels,
        OFFER,
        enis=3,
        ipv4_per_eni=10,
        instance_store_bytes=75 * 10**9,
    )
    raid = NodeClass("raid", ORIGIN, instance_store_policy="RAID0")
    assert node_capacity(nvme, node_class=raid)["ephemeral-storage"] == 75 * 10**9
    assert node_capacity(nvme)["ephemeral-storage"] == 20 * GIB

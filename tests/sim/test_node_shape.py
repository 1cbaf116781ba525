"""Simulated node capacity and allocatable, and the bootstrap readers that feed them.

Matrix: x86 and arm64 memory overhead (6 %, plus 64 MiB on arm64); max pods from the bootstrap or the ENI
formula; the EKS AMI's default kube-reserved and eviction thresholds; explicit reserved and eviction flags
(quantities and percentages); NVIDIA GPUs; the AWS adapter's parser and the fallback flag reader.
"""

from __future__ import annotations

from typing import Any

import pytest

from longshore.core.model import Taint
from longshore_sim.cluster.bootstrap import NodeBootstrap, from_adapter, read_kubelet_flags
from longshore_sim.cluster.capacity import default_kube_reserved, eni_max_pods, node_shape, quantities

MIB = 2**20
GIB = 2**30


def instance_type(
    vcpus: int, mib: int, arch: str = "x86_64", enis: int = 3, ips: int = 10, gpus: int = 0
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": mib},
        "ProcessorInfo": {"SupportedArchitectures": [arch]},
        "NetworkInfo": {"MaximumNetworkInterfaces": enis, "Ipv4AddressesPerInterface": ips},
    }
    if gpus:
        body["GpuInfo"] = {"Gpus": [{"Manufacturer": "NVIDIA", "Count": gpus}]}
    return body


def test_x86_capacity_and_default_allocatable() -> None:
    # m5.large: 2 vCPU, 8192 MiB, 3 ENIs x 10 IPs
    shape = node_shape(instance_type(2, 8192), NodeBootstrap())
    assert shape.arch == "amd64"
    assert quantities(shape.capacity) == {
        "cpu": "2",
        "memory": f"{7700 * 1024}Ki",
        "pods": "29",
        "ephemeral-storage": f"{20 * 1024 * 1024}Ki",
    }
    # kube-reserved: cpu 60m + 10m, memory 11 x 29 + 255 = 574 MiB, 1 GiB disk; eviction: 100 MiB, 10 % of 20 GiB
    assert shape.allocatable.get("cpu") == 1930
    assert shape.allocatable.get("memory") == (7700 - 574 - 100) * MIB
    assert shape.allocatable.get("ephemeral-storage") == 20 * GIB - GIB - 2 * GIB
    assert shape.allocatable.get("pods") == 29


def test_arm64_loses_64_mib_more() -> None:
    shape = node_shape(instance_type(2, 8192, arch="arm64"), NodeBootstrap(max_pods=110))
    assert shape.arch == "arm64"
    assert shape.capacity.get("memory") == (7700 - 64) * MIB
    assert shape.capacity.get("pods") == 110


def test_explicit_bootstrap_reservations() -> None:
    bootstrap = NodeBootstrap(
        max_pods=58,
        kube_reserved={"cpu": "80m", "memory": "893Mi"},
        system_reserved={"cpu": "100m", "memory": "100Mi"},
        eviction_hard={"memory.available": "5%", "nodefs.available": "1Gi"},
    )
    shape = node_shape(instance_type(4, 16384), bootstrap, root_volume_gib=100)
    assert shape.allocatable.get("cpu") == 4000 - 80 - 100
    # memory.available 5 % of the 15400 MiB capacity is 770 MiB
    assert shape.allocatable.get("memory") == (15400 - 893 - 100 - 770) * MIB
    assert shape.allocatable.get("ephemeral-storage") == 100 * GIB - GIB
    assert shape.allocatable.get("pods") == 58


def test_nvidia_gpus_are_capacity() -> None:
    shape = node_shape(instance_type(4, 16384, enis=4, ips=15, gpus=1), NodeBootstrap())
    assert shape.capacity.get("nvidia.com/gpu") == 1
    assert quantities(shape.allocatable)["nvidia.com/gpu"] == "1"


@pytest.mark.parametrize(("vcpus", "expected_cpu"), [(1, 60), (2, 70), (4, 80), (8, 90), (96, 310)])
def test_default_cpu_reservation_tiers(vcpus: int, expected_cpu: int) -> None:
    assert default_kube_reserved(vcpus, 110).get("cpu") == expected_cpu


def test_eni_max_pods() -> None:
    assert eni_max_pods(instance_type(4, 8192, enis=4, ips=15)) == 58


def test_fallback_reader_reads_kubelet_flags() -> None:
    user_data = (
        "#!/bin/bash\n/etc/eks/bootstrap.sh demo --kubelet-extra-args '--node-labels=team=a,karpenter.sh/nodepool=default "
        "--register-with-taints=dedicated=gpu:NoSchedule,karpenter.sh/unregistered:NoExecute --max-pods=42 "
        "--kube-reserved=cpu=100m,memory=500Mi --eviction-hard=memory.available<200Mi'"
    )
    bootstrap = read_kubelet_flags(user_data)
    assert bootstrap.labels == {"team": "a", "karpenter.sh/nodepool": "default"}
    assert bootstrap.taints == (
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    )
    assert (bootstrap.max_pods, dict(bootstrap.kube_reserved), dict(bootstrap.eviction_hard)) == (
        42,
        {"cpu": "100m", "memory": "500Mi"},
        {"memory.available": "200Mi"},
    )


def test_adapter_bootstrap_converts_to_plain_values() -> None:
    class AdapterBootstrap:
        labels = (("a", "1"),)
        taints = (Taint("k", "NoSchedule", "v"), Taint("karpenter.sh/unregistered", "NoExecute"))
        max_pods = 17
        kube_reserved = (("cpu", "70m"),)
        system_reserved = ()
        eviction_hard = (("memory.available", "100Mi"),)

    bootstrap = from_adapter(AdapterBootstrap())
    assert bootstrap.labels == {"a": "1"}
    assert bootstrap.taints == (
        {"key": "k", "value": "v", "effect": "NoSchedule"},
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    )
    assert (bootstrap.max_pods, dict(bootstrap.kube_reserved)) == (17, {"cpu": "70m"})

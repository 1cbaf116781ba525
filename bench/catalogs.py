"""Instance catalogs for the benchmark: Karpenter's 400 fake types, and the real EC2 catalog offline.

`fake_catalog(n)` follows kubernetes-sigs/karpenter `pkg/cloudprovider/fake/instancetype.go`
(`InstanceTypes(n)`): type i has i+1 vCPU, 2(i+1) GiB and 10(i+1) pods, offered spot in zones 1-2 and on-demand in
zones 1-3, every offering priced 0.1 x vCPU + 0.1 x GiB. `real_catalog(region)` is EC2's real shapes and
zone offerings as moto ships them, priced from `longshore/data/prices.json`, assembled by the production
`adapters.aws.instance_types.offline_catalog` (no AWS calls).
"""

from __future__ import annotations

from longshore.adapters.aws.instance_types import offline_catalog
from longshore.core.catalog import GIB, MIB, Catalog, InstanceType, Offering
from longshore.core.resources import Resources

FAKE_ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")


def fake_catalog(count: int = 400) -> Catalog:
    types = []
    for i in range(count):
        cpu, gib, pods = i + 1, 2 * (i + 1), 10 * (i + 1)
        price = round(0.1 * cpu + 0.1 * gib, 6)
        offerings = [Offering(z, "spot", price) for z in FAKE_ZONES[:2]]
        offerings += [Offering(z, "on-demand", price) for z in FAKE_ZONES]
        name = f"fake-it-{i}"
        types.append(
            InstanceType(
                name=name,
                capacity=Resources.of({"cpu": cpu * 1000, "memory": gib * GIB, "pods": pods}),
                labels=(
                    ("karpenter.k8s.aws/instance-cpu", str(cpu)),
                    ("karpenter.k8s.aws/instance-memory", str(gib * GIB // MIB)),
                ),
                offerings=tuple(offerings),
                max_pods_eni=pods,
            )
        )
    return Catalog(tuple(types), region="fake")


def real_catalog(region: str = "us-east-1") -> Catalog:
    return offline_catalog(region)

"""Instance catalogs for the benchmark: Karpenter's 400 fake types, and the real EC2 catalog offline.

`fake_catalog(n)` follows Karpenter core `pkg/cloudprovider/fake/instancetype.go` as the reference describes
it (§8.1): type i has i+1 vCPU, 2(i+1) GiB and 10(i+1) pods, offered spot in zones 1-2 and on-demand in
zones 1-3, every offering priced 0.1 x vCPU + 0.1 x GiB. `real_catalog(region)` is EC2's real shapes and
zone offerings as moto ships them, priced from `longshore/data/prices.json`, assembled by the production
`adapters.aws.instance_types.build_catalog` (no AWS calls).
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from importlib import resources
from typing import Any

from longshore.adapters.aws.instance_types import RegionShapes, build_catalog
from longshore.adapters.aws.pricing import RegionPrices, shipped_table
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


def _moto(*parts: str) -> Any:
    with resources.files("moto").joinpath("ec2", "resources", *parts).open("rb") as handle:
        return json.loads(gzip.decompress(handle.read()))


@cache
def real_catalog(region: str = "us-east-1") -> Catalog:
    shapes = _moto("instance_types.json.gz")
    zones_of: dict[str, set[str]] = {}
    for entry in _moto("instance_type_offerings", "availability-zone", f"{region}.json.gz"):
        zones_of.setdefault(entry["InstanceType"], set()).add(entry["Location"])
    region_shapes = RegionShapes(
        region,
        tuple(info for _, info in sorted(shapes.items())),
        {k: tuple(sorted(v)) for k, v in zones_of.items()},
        {},
        0.0,
    )
    return build_catalog(region_shapes, RegionPrices(region, {}, {}, "table", "table", 0.0, shipped_table()))

"""The instance catalog from EC2: DescribeInstanceTypes and DescribeInstanceTypeOfferings, priced and cached.

Theory of operation (Karpenter aws `pkg/providers/instancetype/instancetype.go`, `types.go`): every
instance type EC2 describes that runs HVM on x86_64 or arm64 becomes an `InstanceType` whose labels follow
Karpenter's `computeRequirements` (category/generation from the name, cpu, memory in MiB, GPU and accelerator
labels only when a type has exactly one model, network bandwidth in Mbps, EBS bandwidth only for types that are
EBS-optimized by default, local NVMe in GB, hypervisor, cpu manufacturer, encryption in transit). Extended
resources come from the shapes too (`nvidia.com/gpu`, `amd.com/gpu`, `aws.amazon.com/neuron`,
`vpc.amazonaws.com/efa`). Offerings are the zones where EC2 offers the type (LocationType availability-zone)
times its supported usage classes (on-demand, spot), priced by `adapters.aws.pricing`; a zone × capacity type
without a price is left out, as Karpenter marks unpriced offerings unavailable.

Describing 1,395 types costs seconds against moto, so pages are cached per (region, endpoint) in the process
and refreshed every 12 hours of the injected clock; the assembled `Catalog` is cached too, so repeated calls
return the same object (callers may cache by identity).
"""

from __future__ import annotations

import functools
import gzip
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

from longshore.adapters.aws.pricing import REFRESH_SECONDS, RegionPrices, region_prices, shipped_table
from longshore.core import labels as wk
from longshore.core.catalog import MIB, Catalog, InstanceType, Offering, labels_from_name
from longshore.core.resources import Resources
from longshore.ports.clock import Clock

LOG = logging.getLogger(__name__)

ARCHITECTURES: Final = {"x86_64": "amd64", "arm64": "arm64"}
USAGE_CLASSES: Final = ("on-demand", "spot")
GPU_RESOURCES: Final = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}


@dataclass(frozen=True, slots=True)
class RegionShapes:
    """What EC2 said about a region's instance types, as fetched at `fetched_at`."""

    region: str
    types: tuple[Mapping[str, Any], ...]
    zones_of: Mapping[str, tuple[str, ...]]  # instance type -> zones offering it
    zone_ids: Mapping[str, str]  # zone name -> zone id
    fetched_at: float


_SHAPES: dict[tuple[str, str], RegionShapes] = {}
_CATALOGS: dict[tuple[Any, ...], Catalog] = {}


def _endpoint(client: Any) -> str:
    return str(getattr(getattr(client, "meta", None), "endpoint_url", ""))


def describe_region(ec2_client: Any, region: str, now: float) -> RegionShapes:
    """All instance types and their zone offerings (paginated), cached for 12 hours."""
    key = (region, _endpoint(ec2_client))
    cached = _SHAPES.get(key)
    if cached is not None and now - cached.fetched_at < REFRESH_SECONDS:
        return cached
    types: list[Mapping[str, Any]] = []
    for page in ec2_client.get_paginator("describe_instance_types").paginate(
        PaginationConfig={"PageSize": 100}
    ):
        types.extend(page.get("InstanceTypes", []))
    zones_of: dict[str, list[str]] = {}
    for page in ec2_client.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone", PaginationConfig={"PageSize": 1000}
    ):
        for offering in page.get("InstanceTypeOfferings", []):
            zones_of.setdefault(offering["InstanceType"], []).append(offering["Location"])
    zone_ids = {
        zone["ZoneName"]: zone.get("ZoneId", "")
        for zone in ec2_client.describe_availability_zones().get("AvailabilityZones", [])
    }
    shapes = RegionShapes(
        region=region,
        types=tuple(types),
        zones_of={name: tuple(sorted(set(zones))) for name, zones in zones_of.items()},
        zone_ids=zone_ids,
        fetched_at=now,
    )
    _SHAPES[key] = shapes
    return shapes


def clear_cache() -> None:
    _SHAPES.clear()
    _CATALOGS.clear()


def load_catalog(
    ec2_client: Any,
    pricing_client: Any | None,
    region: str,
    clock: Clock,
    *,
    zones: Iterable[str] | None = None,
) -> Catalog:
    """The priced catalog for `region` (optionally only offerings in `zones`); what the rest of the system calls."""
    now = clock.now()
    shapes = describe_region(ec2_client, region, now)
    prices = region_prices(ec2_client, pricing_client, region, now)
    wanted = None if zones is None else frozenset(zones)
    key = (region, _endpoint(ec2_client), shapes.fetched_at, prices.fetched_at, wanted)
    cached = _CATALOGS.get(key)
    if cached is not None:
        return cached
    catalog = build_catalog(shapes, prices, wanted)
    _CATALOGS[key] = catalog
    return catalog


class OfflineDataMissing(LookupError):
    """No offline EC2 data for a region (the package ships `longshore/data/ec2/` for every region moto knows)."""


def _offline_resource(*parts: str) -> Any:
    """A file of the shipped EC2 data (`longshore/data/ec2/`, generated from moto's copy of EC2's answers by
    `python -m longshore_sim.ec2_data`; provenance in `PROVENANCE.json` beside it)."""
    try:
        path = resources.files("longshore").joinpath("data", "ec2", *parts)
        with path.open("rb") as handle:
            return json.loads(gzip.decompress(handle.read()))
    except FileNotFoundError as error:
        raise OfflineDataMissing(f"no offline EC2 instance data ({'/'.join(parts)})") from error


@functools.cache
def offline_catalog(region: str, names: tuple[str, ...] | None = None) -> Catalog:
    """The catalog without any AWS call: EC2's real instance shapes and zone offerings as the package ships them
    (the same DescribeInstanceTypes data the live path reads), priced from the shipped table. Used by the
    CLI's dry runs (`plan`, `catalog`, `explain` without `--live`), the tests and the benchmark."""
    shapes = _offline_resource("instance_types.json.gz")
    zones_of: dict[str, set[str]] = {}
    for entry in _offline_resource("offerings", f"{region}.json.gz"):
        zones_of.setdefault(entry["InstanceType"], set()).add(entry["Location"])
    wanted = set(names) if names else None
    region_shapes = RegionShapes(
        region=region,
        types=tuple(info for key, info in sorted(shapes.items()) if wanted is None or key in wanted),
        zones_of={k: tuple(sorted(v)) for k, v in zones_of.items()},
        zone_ids=dict(_offline_resource("zones.json.gz").get(region, {})),
        fetched_at=0.0,
    )
    return build_catalog(region_shapes, RegionPrices(region, {}, {}, "table", "table", 0.0, shipped_table()))


def build_catalog(shapes: RegionShapes, prices: RegionPrices, zones: frozenset[str] | None = None) -> Catalog:
    built: list[InstanceType] = []
    unpriced = 0
    for info in shapes.types:
        name = str(info.get("InstanceType", ""))
        offered = [z for z in shapes.zones_of.get(name, ()) if zones is None or z in zones]
        offerings = _offerings(info, offered, shapes.zone_ids, prices)
        if not offerings:
            unpriced += bool(offered)
            continue
        instance_type = instance_type_from_shape(info, offerings)
        if instance_type is not None:
            built.append(instance_type)
    if unpriced:
        LOG.info("%d instance types offered in %s have no price and are left out", unpriced, shapes.region)
    return Catalog(
        tuple(sorted(built, key=lambda it: it.name)), region=shapes.region, price_source=prices.describe()
    )


def _offerings(
    info: Mapping[str, Any], zones: Iterable[str], zone_ids: Mapping[str, str], prices: RegionPrices
) -> list[Offering]:
    name = str(info.get("InstanceType", ""))
    classes = [c for c in info.get("SupportedUsageClasses", []) if c in USAGE_CLASSES]
    result: list[Offering] = []
    for zone in zones:
        for capacity_type in classes:
            price = prices.spot_price(name, zone) if capacity_type == "spot" else prices.on_demand_price(name)
            if price is None:
                continue
            result.append(Offering(zone, capacity_type, price, True, zone_ids.get(zone) or None))
    return result


def _kebab(text: str) -> str:
    return "-".join(text.lower().split())


def instance_type_from_shape(info: Mapping[str, Any], offerings: Iterable[Offering]) -> InstanceType | None:
    """An `InstanceType` from one DescribeInstanceTypes entry; None for types Karpenter would not use."""
    name = str(info.get("InstanceType", ""))
    if "hvm" not in info.get("SupportedVirtualizationTypes", ["hvm"]):
        return None
    processor = info.get("ProcessorInfo", {})
    arch = next(
        (ARCHITECTURES[a] for a in processor.get("SupportedArchitectures", []) if a in ARCHITECTURES), None
    )
    if arch is None:
        return None
    vcpus = int(info.get("VCpuInfo", {}).get("DefaultVCpus", 0))
    memory_mib = int(info.get("MemoryInfo", {}).get("SizeInMiB", 0))
    network = info.get("NetworkInfo", {})
    cards = network.get("NetworkCards", [])
    default_card = int(network.get("DefaultNetworkCardIndex", 0))
    card = next((c for c in cards if int(c.get("NetworkCardIndex", -1)) == default_card), None)
    enis = int((card or network).get("MaximumNetworkInterfaces", network.get("MaximumNetworkInterfaces", 0)))
    ipv4 = int(network.get("Ipv4AddressesPerInterface", 0))
    max_pods = enis * (ipv4 - 1) + 2 if enis > 0 and ipv4 > 0 else None

    labels = labels_from_name(name)
    labels[wk.INSTANCE_CPU] = str(vcpus)
    labels[wk.INSTANCE_MEMORY] = str(memory_mib)
    labels[wk.INSTANCE_HYPERVISOR] = str(info.get("Hypervisor", ""))
    labels[wk.INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED] = str(
        bool(network.get("EncryptionInTransitSupported"))
    ).lower()
    labels[wk.INSTANCE_CAPABILITY_FLEX] = str("-flex" in name).lower()
    if processor.get("Manufacturer"):
        labels[wk.INSTANCE_CPU_MANUFACTURER] = _kebab(str(processor["Manufacturer"]))
    if processor.get("SustainedClockSpeedInGhz") is not None:
        labels[wk.INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ] = str(
            round(float(processor["SustainedClockSpeedInGhz"]) * 1000)
        )
    bandwidth = sum(float(c.get("BaselineBandwidthInGbps", 0) or 0) for c in cards)
    if bandwidth > 0:
        labels[wk.INSTANCE_NETWORK_BANDWIDTH] = str(round(bandwidth * 1000))
    ebs = info.get("EbsInfo", {})
    if ebs.get("EbsOptimizedSupport") == "default" and ebs.get("EbsOptimizedInfo", {}).get(
        "MaximumBandwidthInMbps"
    ):
        labels[wk.INSTANCE_EBS_BANDWIDTH] = str(int(ebs["EbsOptimizedInfo"]["MaximumBandwidthInMbps"]))
    storage = info.get("InstanceStorageInfo") or {}
    instance_store_bytes = int(storage.get("TotalSizeInGB", 0) or 0) * 10**9
    if (
        storage
        and storage.get("NvmeSupport", "unsupported") != "unsupported"
        and storage.get("TotalSizeInGB")
    ):
        labels[wk.INSTANCE_LOCAL_NVME] = str(int(storage["TotalSizeInGB"]))

    extended: dict[str, int] = {}
    gpus = (info.get("GpuInfo") or {}).get("Gpus", [])
    for gpu in gpus:
        resource = GPU_RESOURCES.get(str(gpu.get("Manufacturer", "")).lower())
        if resource:
            extended[resource] = extended.get(resource, 0) + int(gpu.get("Count", 0))
    if len(gpus) == 1:
        gpu = gpus[0]
        labels[wk.INSTANCE_GPU_NAME] = _kebab(str(gpu.get("Name", "")))
        labels[wk.INSTANCE_GPU_MANUFACTURER] = _kebab(str(gpu.get("Manufacturer", "")))
        labels[wk.INSTANCE_GPU_COUNT] = str(int(gpu.get("Count", 0)))
        labels[wk.INSTANCE_GPU_MEMORY] = str(int(gpu.get("MemoryInfo", {}).get("SizeInMiB", 0)))
    accelerators = _accelerators(info)
    if accelerators:
        extended["aws.amazon.com/neuron"] = sum(count for _, _, count in accelerators)
        if len(accelerators) == 1:
            acc_name, acc_maker, acc_count = accelerators[0]
            labels[wk.INSTANCE_ACCELERATOR_NAME] = _kebab(acc_name)
            labels[wk.INSTANCE_ACCELERATOR_MANUFACTURER] = _kebab(acc_maker)
            labels[wk.INSTANCE_ACCELERATOR_COUNT] = str(acc_count)
    if network.get("EfaSupported") and (network.get("EfaInfo") or {}).get("MaximumEfaInterfaces"):
        extended["vpc.amazonaws.com/efa"] = int(network["EfaInfo"]["MaximumEfaInterfaces"])

    capacity = Resources.of(
        {
            "cpu": vcpus * 1000,
            "memory": memory_mib * MIB,
            "pods": max_pods if max_pods is not None else 110,
            **extended,
        }
    )
    return InstanceType(
        name=name,
        capacity=capacity,
        labels=tuple(sorted(labels.items())),
        offerings=tuple(offerings),
        arch=arch,
        max_pods_eni=max_pods,
        enis=enis,
        ipv4_per_eni=ipv4,
        instance_store_bytes=instance_store_bytes,
        bare_metal=bool(info.get("BareMetal", False)),
    )


def _accelerators(info: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """(name, manufacturer, count) of Inferentia/Trainium devices, from NeuronInfo or InferenceAcceleratorInfo."""
    neuron = (info.get("NeuronInfo") or {}).get("NeuronDevices", [])
    if neuron:
        return [(str(d.get("Name", "")), "aws", int(d.get("Count", 0))) for d in neuron]
    inference = (info.get("InferenceAcceleratorInfo") or {}).get("Accelerators", [])
    return [
        (str(a.get("Name", "")), str(a.get("Manufacturer", "")), int(a.get("Count", 0))) for a in inference
    ]

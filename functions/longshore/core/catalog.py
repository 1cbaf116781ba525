"""The instance catalog: instance types with their well-known labels, hardware capacity and priced offerings.

Theory of operation: an `InstanceType` holds what EC2 says about a type, as plain values: its hardware
`capacity` (cpu in millicores, memory in bytes *before* any VM overhead, `pods` = the ENI-limited pod count
with no reserved ENIs, extended resources such as `nvidia.com/gpu`), the single-valued well-known labels of
Karpenter's `computeRequirements` (category, family, generation, size, cpu, memory in MiB, gpu-*, arch, os,
hypervisor, bandwidths, local NVMe, ...), the ENI figures that `core.allocatable` needs, and its offerings:
one per zone × capacity type, each with an hourly price and an availability flag. `requirements()` turns
all of that into a `Requirements` (labels as `In [value]`, zones and capacity types as the union over its
offerings), computed once per type.

A `Catalog` is an immutable list of types. It answers "which types may a pool (or claim) with these
requirements use" and "which of their offerings": a type qualifies when its requirements are compatible and
at least one *available* offering is allowed by the requirements' zone and capacity-type constraints; the
answer is ordered by the cheapest such offering (Karpenter `OrderByPrice`, kubernetes-sigs/karpenter `pkg/cloudprovider/types.go`), ties broken
by name. Availability changes (ICE, spot interruptions) produce a new catalog with `without_offerings`.
Because a catalog never changes, what is derived from it (its view without some offerings, the pools'
templates) is memoised on it (`memo`): a bounded table per catalog, keyed by the derivation's inputs, so a warm
container's passes do not rebuild the same views; the memo dies with the catalog.
Nothing here talks to AWS: `adapters/aws/instance_types.py` builds catalogs from EC2 responses.

Windows (`Catalog.for_family`): as in Karpenter's `computeRequirements` (`aws/karpenter-provider-aws`
`pkg/providers/instancetype/types.go`), what a type offers depends on the node class's AMI family. For a Windows
family only amd64 types run, labelled `kubernetes.io/os=windows` and `node.kubernetes.io/windows-build` with the
family's build, with the `vpc.amazonaws.com/PrivateIPv4Address` resource the VPC resource controller hands
Windows pods (the primary interface's addresses less its own). Windows is priced with its licence: Linux price
plus `WINDOWS_LICENSE_PER_VCPU_HOUR` per vCPU, on-demand and spot alike. Karpenter prices Windows as Linux;
`docs/conformance.md` records the difference and why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Final, TypeVar

from longshore.core import labels as wk
from longshore.core.model import Pairs
from longshore.core.requirements import KeyRequirement, Requirements
from longshore.core.resources import Resources

T = TypeVar("T")
MEMO_ENTRIES: Final = 64  # derivations memoised per catalog; the oldest is dropped beyond this

MIB = 2**20
GIB = 2**30
DEFAULT_MAX_PODS = 110

WINDOWS_BUILDS: Final = {
    "Windows2019": "10.0.17763",
    "Windows2022": "10.0.20348",
    "Windows2025": "10.0.26100",
}
"""The Windows Server build each Windows AMI family runs (`node.kubernetes.io/windows-build`)."""
WINDOWS_LICENSE_PER_VCPU_HOUR: Final = 0.046
"""USD per vCPU-hour that EC2 adds for Windows Server (license included) over the Linux price: m5.large is
$0.096/h on Linux and $0.188/h on Windows in us-east-1, 2 vCPUs. An estimate applied to every type."""
#: `karpenter.k8s.aws/instance-tenancy` values every type offers (dedicated launches with `Placement.Tenancy`).
TENANCIES: Final = ("default", "dedicated")
PRIVATE_IPV4: Final = "vpc.amazonaws.com/PrivateIPv4Address"

_TYPE_NAME = re.compile(r"^([a-z]+)(-[0-9]+tb)?([0-9]+)[a-z0-9-]*\.([a-z0-9-]+)$")


@dataclass(frozen=True, slots=True)
class Offering:
    """Where and how a type can be bought: one zone × capacity type, at an hourly price in USD."""

    zone: str
    capacity_type: str
    price: float
    available: bool = True
    zone_id: str | None = None
    reservation_id: str | None = None  # reserved offerings only (`core.reservations`)
    reservation_type: str | None = None  # "default" | "capacity-block"
    reservation_interruptible: bool | None = None  # an interruptible capacity reservation

    def allowed_by(self, requirements: Requirements) -> bool:
        """Whether requirements on zone, zone-id, capacity type and capacity reservation admit this offering
        (an offering outside any reservation has no reservation labels: it passes only requirements that
        tolerate their absence)."""
        return (
            requirements.allows(wk.ZONE, self.zone)
            and requirements.allows(wk.CAPACITY_TYPE, self.capacity_type)
            and (self.zone_id is None or requirements.allows(wk.ZONE_ID, self.zone_id))
            and _allows_optional(requirements, wk.CAPACITY_RESERVATION_ID, self.reservation_id)
            and _allows_optional(requirements, wk.CAPACITY_RESERVATION_TYPE, self.reservation_type)
            and _allows_optional(
                requirements,
                wk.CAPACITY_RESERVATION_INTERRUPTIBLE,
                None
                if self.reservation_interruptible is None
                else str(self.reservation_interruptible).lower(),
            )
        )


def _allows_optional(requirements: Requirements, key: str, value: str | None) -> bool:
    item = requirements.get(key)
    if item is None:
        return True
    return item.has(value) if value is not None else item.matches_absent()


@dataclass(frozen=True, slots=True)
class InstanceType:
    """One EC2 instance type with its offerings (see module docstring for units)."""

    name: str
    capacity: Resources
    labels: Pairs
    offerings: tuple[Offering, ...]
    arch: str = "amd64"
    max_pods_eni: int | None = None
    enis: int = 0  # maximum network interfaces on the default network card
    ipv4_per_eni: int = 0
    efa_only_enis: int = 0
    instance_store_bytes: int = 0  # local NVMe/SSD total (for instanceStorePolicy RAID0)
    bare_metal: bool = False
    _requirements: Requirements = field(default_factory=Requirements, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_requirements", self._compute_requirements())

    def _compute_requirements(self) -> Requirements:
        keyed = [KeyRequirement.in_(key, (value,)) for key, value in self.labels]
        own = {key for key, _ in self.labels}
        keyed.extend(KeyRequirement.does_not_exist(key) for key in sorted(wk.DEFINED_INSTANCE_LABELS - own))
        keyed.append(KeyRequirement.in_(wk.INSTANCE_TYPE, (self.name,)))
        # every type launches shared or dedicated (aws provider `computeRequirements`); the claim picks one
        keyed.append(KeyRequirement.in_(wk.INSTANCE_TENANCY, TENANCIES))
        keyed.append(KeyRequirement.in_(wk.ARCH, (self.arch,)))
        if wk.OS not in dict(self.labels):
            keyed.append(KeyRequirement.in_(wk.OS, ("linux",)))
        keyed.append(KeyRequirement.in_(wk.ZONE, {o.zone for o in self.offerings}))
        keyed.append(KeyRequirement.in_(wk.CAPACITY_TYPE, {o.capacity_type for o in self.offerings}))
        zone_ids = {o.zone_id for o in self.offerings if o.zone_id}
        if zone_ids:
            keyed.append(KeyRequirement.in_(wk.ZONE_ID, zone_ids))
        return Requirements.from_keyed(keyed)

    # --- reading --------------------------------------------------------------------------------------
    def requirements(self) -> Requirements:
        """Labels as `In [value]` (the instance labels it lacks as `DoesNotExist`), plus zones and capacity
        types over all offerings."""
        return self._requirements

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(wk.normalize_key(key))

    def node_labels(self) -> dict[str, str]:
        """The labels a node of this type carries (without zone/capacity type, which depend on the offering)."""
        return {
            **dict(self.labels),
            wk.INSTANCE_TYPE: self.name,
            wk.ARCH: self.arch,
            wk.OS: self.label(wk.OS) or "linux",
        }

    @property
    def vcpus(self) -> int:
        return self.capacity.get("cpu") // 1000

    @property
    def memory_mib(self) -> int:
        return self.capacity.get("memory") // MIB

    def zones(self) -> frozenset[str]:
        return frozenset(o.zone for o in self.offerings)

    def capacity_types(self) -> frozenset[str]:
        return frozenset(o.capacity_type for o in self.offerings)

    def compatible_offerings(
        self, requirements: Requirements, *, available_only: bool = True
    ) -> tuple[Offering, ...]:
        """Offerings the requirements allow, cheapest first (ties: zone, capacity type)."""
        chosen = (
            o for o in self.offerings if (o.available or not available_only) and o.allowed_by(requirements)
        )
        return tuple(sorted(chosen, key=lambda o: (o.price, o.zone, o.capacity_type)))

    def cheapest_offering(self, requirements: Requirements) -> Offering | None:
        offers = self.compatible_offerings(requirements)
        return offers[0] if offers else None

    def cheapest_price(self, requirements: Requirements) -> float:
        """Cheapest available compatible price; `inf` when there is none."""
        offer = self.cheapest_offering(requirements)
        return math.inf if offer is None else offer.price

    def incompatibility(self, requirements: Requirements, *, subject: str = "the pool") -> str | None:
        """None when the type may serve `requirements` (compatible and an available offering allowed)."""
        reason = self._requirements.incompatibility(requirements, subject=f"{self.name}")
        if reason is not None:
            return reason
        if not any(o.available and o.allowed_by(requirements) for o in self.offerings):
            return f"{self.name} has no available offering in the zones and capacity types {subject} allows"
        return None

    def with_offerings(self, offerings: Iterable[Offering]) -> InstanceType:
        return replace(self, offerings=tuple(offerings))

    def as_windows(self, build: str) -> InstanceType | None:
        """This type as a Windows node of `build` sees it (see the module docstring); None if it cannot run one."""
        if self.arch != "amd64":
            return None
        labels = {**dict(self.labels), wk.OS: "windows", wk.WINDOWS_BUILD: build}
        addresses = Resources.of({PRIVATE_IPV4: max(self.ipv4_per_eni - 1, 0)})
        surcharge = WINDOWS_LICENSE_PER_VCPU_HOUR * self.vcpus
        return replace(
            self,
            labels=tuple(sorted(labels.items())),
            capacity=self.capacity + addresses,
            offerings=tuple(replace(o, price=round(o.price + surcharge, 6)) for o in self.offerings),
        )


def labels_from_name(name: str) -> dict[str, str]:
    """Category, family, generation and size from a type name, as Karpenter derives them.

    `m5.large` -> m / m5 / 5 / large; `c6gn.16xlarge` -> c / c6gn / 6 / 16xlarge; `u-6tb1.metal` -> u / u-6tb1 / 1.
    Names that do not follow EC2's scheme yield only family and size.
    """
    family, _, size = name.partition(".")
    result = {wk.INSTANCE_FAMILY: family, wk.INSTANCE_SIZE: size} if size else {}
    match = _TYPE_NAME.match(name)
    if match:
        result[wk.INSTANCE_CATEGORY] = match.group(1)
        result[wk.INSTANCE_GENERATION] = match.group(3)
    return result


def make_instance_type(
    name: str,
    *,
    vcpus: int,
    memory_mib: int,
    offerings: Iterable[Offering],
    arch: str = "amd64",
    enis: int = 3,
    ipv4_per_eni: int = 10,
    extra_labels: Mapping[str, str] | None = None,
    extended: Mapping[str, int] | None = None,
) -> InstanceType:
    """A type built from a few figures (for tests, benchmarks and synthetic catalogs)."""
    max_pods = enis * (ipv4_per_eni - 1) + 2 if enis and ipv4_per_eni else DEFAULT_MAX_PODS
    found = labels_from_name(name)
    found.update({wk.INSTANCE_CPU: str(vcpus), wk.INSTANCE_MEMORY: str(memory_mib)})
    found.update(extra_labels or {})
    capacity = Resources.of(
        {"cpu": vcpus * 1000, "memory": memory_mib * MIB, "pods": max_pods, **(extended or {})}
    )
    return InstanceType(
        name=name,
        capacity=capacity,
        labels=tuple(sorted(found.items())),
        offerings=tuple(offerings),
        arch=arch,
        max_pods_eni=max_pods,
        enis=enis,
        ipv4_per_eni=ipv4_per_eni,
    )


_MISSING: Final = object()


@dataclass(frozen=True, slots=True)
class Catalog:
    """An immutable list of instance types for one region, with lookups by name and by requirements."""

    instance_types: tuple[InstanceType, ...]
    region: str = ""
    price_source: str = ""  # where the prices came from (e.g. "pricing-api", "table:2025-...")
    _by_name: dict[str, InstanceType] = field(default_factory=dict, compare=False, hash=False, repr=False)
    _families: dict[str, Catalog] = field(init=False, compare=False, hash=False, repr=False)
    _memo: dict[object, object] = field(init=False, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {it.name: it for it in self.instance_types})
        object.__setattr__(self, "_families", {})
        object.__setattr__(self, "_memo", {})

    def memo(self, key: object, derive: Callable[[], T]) -> T:
        """`derive()`, computed once per `key` for this catalog (module docstring). `key` must hash the
        derivation's every input other than the catalog; an unhashable key is simply not memoised."""
        try:
            found = self._memo.get(key, _MISSING)
        except TypeError:
            return derive()
        if found is _MISSING:
            if len(self._memo) >= MEMO_ENTRIES:
                del self._memo[next(iter(self._memo))]
            found = self._memo[key] = derive()
        return found  # type: ignore[return-value]

    def for_family(self, ami_family: str) -> Catalog:
        """The catalog as nodes of `ami_family` see it: itself, or its Windows view (module docstring)."""
        build = WINDOWS_BUILDS.get(ami_family)
        if build is None:
            return self
        if ami_family not in self._families:
            types = tuple(w for it in self.instance_types if (w := it.as_windows(build)) is not None)
            self._families[ami_family] = replace(self, instance_types=types)
        return self._families[ami_family]

    def __iter__(self) -> Iterator[InstanceType]:
        return iter(self.instance_types)

    def __len__(self) -> int:
        return len(self.instance_types)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._by_name

    def __getitem__(self, name: str) -> InstanceType:
        return self._by_name[name]

    def get(self, name: str) -> InstanceType | None:
        return self._by_name.get(name)

    def names(self) -> tuple[str, ...]:
        return tuple(it.name for it in self.instance_types)

    def zones(self) -> frozenset[str]:
        return frozenset(z for it in self.instance_types for z in it.zones())

    def compatible(
        self, requirements: Requirements, *, available_only: bool = True
    ) -> tuple[InstanceType, ...]:
        """Types the requirements allow that have an allowed (available) offering, cheapest first."""
        priced: list[tuple[float, str, InstanceType]] = []
        for it in self.instance_types:
            if not it.requirements().compatible(requirements):
                continue
            offers = it.compatible_offerings(requirements, available_only=available_only)
            if offers:
                priced.append((offers[0].price, it.name, it))
        priced.sort(key=lambda row: (row[0], row[1]))
        return tuple(it for _, _, it in priced)

    def explain_none_compatible(self, requirements: Requirements, *, subject: str = "the pool") -> str:
        """A reason why `compatible(requirements)` is empty, naming the most telling constraint."""
        if not self.instance_types:
            return "the catalog has no instance types"
        keyed_failures: dict[str, int] = {}
        for it in self.instance_types:
            for item in requirements:
                mine = it.requirements().get(item.key)
                if mine is not None and not Requirements((mine,)).compatible(Requirements((item,))):
                    keyed_failures[item.key] = keyed_failures.get(item.key, 0) + 1
        fully = [k for k, n in keyed_failures.items() if n == len(self.instance_types)]
        if fully:
            key = sorted(fully)[0]
            wanted = requirements.get(key)
            assert wanted is not None
            return f"no instance type in the catalog has {key} {wanted.describe()} ({subject} requires it)"
        return (
            f"no instance type satisfies all of {subject}'s requirements ({requirements.describe()}) "
            "with an available offering"
        )

    def without_offerings(self, unavailable: Iterable[tuple[str, str, str]]) -> Catalog:
        """A copy where the given (instance type, zone, capacity type) offerings are unavailable."""
        blocked = frozenset(unavailable)
        if not blocked:
            return self
        return self.memo(("without_offerings", blocked), lambda: self._without(blocked))

    def _without(self, blocked: frozenset[tuple[str, str, str]]) -> Catalog:
        types = tuple(
            it.with_offerings(
                replace(o, available=False) if (it.name, o.zone, o.capacity_type) in blocked else o
                for o in it.offerings
            )
            if any(name == it.name for name, _, _ in blocked)
            else it
            for it in self.instance_types
        )
        return replace(self, instance_types=types)

    def restricted_to_zones(self, zones: Iterable[str]) -> Catalog:
        """A copy keeping only offerings in `zones` (e.g. the zones of a node class's subnets)."""
        keep = frozenset(zones)
        types = tuple(
            it.with_offerings(o for o in it.offerings if o.zone in keep) for it in self.instance_types
        )
        return replace(self, instance_types=tuple(it for it in types if it.offerings))

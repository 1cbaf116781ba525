"""Hourly prices: the shipped price table's shape, and the documented models that derive estimates.

Theory of operation: on-demand list prices are public facts, but the only per-type table we could read offline
is Karpenter's generated us-east-1 table. Everything else in `data/prices.json` is *derived* from it by the
deterministic models below, and labelled as an estimate in the file's provenance:

* other regions: us-east-1 price x a per-category regional factor (`REGION_FACTORS`);
* spot, per zone: on-demand x (1 - discount), where the discount of a (family, zone) pair is drawn uniformly
  from a band per category (55-75 % for most, 45-65 % for GPU/accelerator families) by hashing
  "family|zone" with SHA-256, times +/-3 % per-type noise from hashing "type|zone". Same inputs, same numbers,
  on every machine.

Dedicated tenancy (`karpenter.k8s.aws/instance-tenancy: dedicated`): the table holds shared-tenancy prices
(Karpenter's and the Pricing API filter both ask for `Shared`), and Karpenter prices a dedicated node as shared.
Longshore prices it at shared x `DEDICATED_FACTOR` (1.10), an *estimate*: AWS's Dedicated Instances on-demand
list prices run about 10 % above the shared ones for current families (for example m5.large $0.106 against
$0.096 per hour in us-east-1, from AWS's Dedicated Instances pricing page as we read it; no stored copy of
that page could be consulted offline, so the factor is labelled an estimate and is one number for every type,
region and capacity type). AWS's per-Region dedicated fee is per account, not per node, and is not counted.

`PriceTable` answers `on_demand(region, type)` and `spot(region, type, zone)` and says where a number came from
(`kind(region)`: "quote" or "estimate"). Live prices (the Pricing API, spot price history) replace table values in
`adapters/aws/pricing.py` whenever AWS answers with plausible numbers.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1

#: Regional multipliers on the us-east-1 price, per instance category (first letters of the type name).
REGION_FACTORS: dict[str, dict[str, float]] = {
    "us-east-1": {"default": 1.0},
    "us-west-2": {"default": 1.0},
    "ap-northeast-2": {"c": 1.13, "m": 1.23, "r": 1.21, "t": 1.25, "g": 1.23, "p": 1.38, "default": 1.22},
}

#: Spot discount bands (low, high) per category.
SPOT_DISCOUNT_BANDS: dict[str, tuple[float, float]] = {
    "g": (0.45, 0.65),
    "p": (0.45, 0.65),
    "inf": (0.45, 0.65),
    "trn": (0.45, 0.65),
    "default": (0.55, 0.75),
}
SPOT_NOISE = 0.03

#: Dedicated-tenancy price over the shared one (an estimate: see the module docstring).
DEDICATED_FACTOR = 1.10


def dedicated_price(shared: float) -> float:
    """The estimated hourly price of a dedicated-tenancy node whose shared-tenancy price is `shared`."""
    return round(shared * DEDICATED_FACTOR, 6)


_CATEGORY = re.compile(r"^([a-z]+)")


def category_of(instance_type: str) -> str:
    match = _CATEGORY.match(instance_type)
    return match.group(1) if match else ""


def _unit_hash(text: str) -> float:
    """A number in [0, 1) that depends only on `text`."""
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def regional_factor(region: str, instance_type: str) -> float:
    factors = REGION_FACTORS.get(region, REGION_FACTORS["us-east-1"])
    return factors.get(category_of(instance_type), factors["default"])


def estimate_on_demand(us_east_1_price: float, region: str, instance_type: str) -> float:
    return round(us_east_1_price * regional_factor(region, instance_type), 6)


def estimate_spot(on_demand: float, instance_type: str, zone: str) -> float:
    """The modelled spot price of `instance_type` in `zone` (see module docstring)."""
    family = instance_type.split(".", 1)[0]
    low, high = SPOT_DISCOUNT_BANDS.get(category_of(instance_type), SPOT_DISCOUNT_BANDS["default"])
    discount = low + (high - low) * _unit_hash(f"{family}|{zone}")
    noise = 1 + SPOT_NOISE * (2 * _unit_hash(f"{instance_type}|{zone}") - 1)
    return round(on_demand * (1 - discount) * noise, 6)


def derive_table(
    quoted: Mapping[str, float],
    zones_by_region: Mapping[str, Iterable[str]],
    provenance: Mapping[str, Any],
) -> dict[str, Any]:
    """The JSON document of `data/prices.json`, from the quoted us-east-1 prices and the models above."""
    on_demand: dict[str, dict[str, float]] = {}
    spot: dict[str, dict[str, dict[str, float]]] = {}
    for region, zones in zones_by_region.items():
        zone_list = sorted(zones)
        on_demand[region] = {
            name: (price if region == "us-east-1" else estimate_on_demand(price, region, name))
            for name, price in sorted(quoted.items())
        }
        spot[region] = {
            name: {zone: estimate_spot(price, name, zone) for zone in zone_list}
            for name, price in on_demand[region].items()
        }
    return {
        "schema": SCHEMA_VERSION,
        "provenance": dict(provenance),
        "models": {
            "region_factors": REGION_FACTORS,
            "spot_discount_bands": {k: list(v) for k, v in SPOT_DISCOUNT_BANDS.items()},
            "spot_noise": SPOT_NOISE,
        },
        "on_demand": on_demand,
        "spot": spot,
    }


class PriceTableError(ValueError):
    """A price table document with the wrong shape."""


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Prices per region: on-demand per type, spot per type and zone, with where each came from."""

    on_demand_prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    spot_prices: Mapping[str, Mapping[str, Mapping[str, float]]] = field(default_factory=dict)
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @staticmethod
    def from_document(document: Mapping[str, Any], *, source: str = "prices.json") -> PriceTable:
        if document.get("schema") != SCHEMA_VERSION:
            raise PriceTableError(
                f"{source}: field 'schema' must be {SCHEMA_VERSION}, got {document.get('schema')!r}"
            )
        for key in ("on_demand", "spot", "provenance"):
            if not isinstance(document.get(key), Mapping):
                raise PriceTableError(f"{source}: field {key!r} must be a mapping")
        return PriceTable(document["on_demand"], document["spot"], document["provenance"])

    def regions(self) -> tuple[str, ...]:
        return tuple(sorted(self.on_demand_prices))

    def on_demand(self, region: str, instance_type: str) -> float | None:
        """On-demand price; a region the table lacks falls back to us-east-1 (as Karpenter's static table does)."""
        prices = self.on_demand_prices.get(region) or self.on_demand_prices.get("us-east-1", {})
        return prices.get(instance_type)

    def spot(self, region: str, instance_type: str, zone: str) -> float | None:
        """Spot price in `zone`; a zone the table does not list gets the modelled estimate."""
        by_zone = self.spot_prices.get(region, {}).get(instance_type)
        if by_zone is not None and zone in by_zone:
            return by_zone[zone]
        od = self.on_demand(region, instance_type)
        return None if od is None else estimate_spot(od, instance_type, zone)

    def kind(self, region: str, capacity_type: str = "on-demand") -> str:
        """ "quote" or "estimate" for the numbers of `region` and capacity type."""
        section = self.provenance.get("spot" if capacity_type == "spot" else "on_demand", {})
        entry = section.get(region, {}) if isinstance(section, Mapping) else {}
        return str(entry.get("kind", "estimate")) if isinstance(entry, Mapping) else "estimate"

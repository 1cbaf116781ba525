"""Prices for a region: live from AWS where it answers believably, from the shipped table where it does not.

Theory of operation (Karpenter aws `pkg/providers/pricing/pricing.go`): on-demand prices come from the Pricing
API (`GetProducts`, ServiceCode AmazonEC2, Linux, shared tenancy, no pre-installed software, capacity status
Used); spot prices from `DescribeSpotPriceHistory` (Linux/UNIX, latest quote per type and zone). Both are
refreshed every 12 hours, timed by the injected clock. Whatever AWS does not price falls back to
`data/prices.json` (a dated table whose provenance says which numbers are quotes and which are estimates).

moto has no Pricing API (it answers 404) and returns a constant spot price of 0.00001 for every type. So
answers are checked before they are trusted: a spot response is *synthetic* when every quote has the same
value or most quotes are outside [5 %, 150 %] of the on-demand price; then the table is used and a log line
says so. To keep that check cheap, a probe of a few types is asked first; the full history is fetched only
when the probe looks real. Results are cached per (region, endpoint) in the process.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

from longshore.core.pricing import PriceTable, derive_table

LOG = logging.getLogger(__name__)

REFRESH_SECONDS: Final = 12 * 3600.0
SPOT_PRODUCTS: Final = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]
PROBE_TYPES: Final = ["m5.large", "c5.large", "r5.large", "t3.medium", "m6i.large"]
PLAUSIBLE_SPOT_RATIO: Final = (0.05, 1.5)
TABLE_RESOURCE: Final = "prices.json"

_TABLE: PriceTable | None = None


def shipped_table() -> PriceTable:
    """The price table shipped in `longshore/data/prices.json` (read once per process)."""
    global _TABLE
    if _TABLE is None:
        text = resources.files("longshore").joinpath("data", TABLE_RESOURCE).read_text(encoding="utf-8")
        _TABLE = PriceTable.from_document(json.loads(text), source=f"longshore/data/{TABLE_RESOURCE}")
    return _TABLE


@dataclass(frozen=True, slots=True)
class RegionPrices:
    """Prices for one region, with where they came from."""

    region: str
    on_demand: Mapping[str, float]
    spot: Mapping[tuple[str, str], float]  # (instance type, zone) -> price
    on_demand_source: str  # "pricing-api" | "table:<quote|estimate>"
    spot_source: str  # "spot-price-history" | "table:estimate"
    fetched_at: float
    table: PriceTable = field(default_factory=PriceTable, compare=False, repr=False)

    def on_demand_price(self, instance_type: str) -> float | None:
        price = self.on_demand.get(instance_type)
        return price if price is not None else self.table.on_demand(self.region, instance_type)

    def spot_price(self, instance_type: str, zone: str) -> float | None:
        price = self.spot.get((instance_type, zone))
        return price if price is not None else self.table.spot(self.region, instance_type, zone)

    def describe(self) -> str:
        return f"on-demand from {self.on_demand_source}, spot from {self.spot_source}"


_CACHE: dict[tuple[str, str], RegionPrices] = {}


def _endpoint(client: Any) -> str:
    return str(getattr(getattr(client, "meta", None), "endpoint_url", ""))


def region_prices(ec2_client: Any, pricing_client: Any | None, region: str, now: float) -> RegionPrices:
    """Cached prices for `region`, refreshed when older than 12 hours at `now`."""
    key = (region, _endpoint(ec2_client))
    cached = _CACHE.get(key)
    if cached is not None and now - cached.fetched_at < REFRESH_SECONDS:
        return cached
    table = shipped_table()
    on_demand, od_source = _live_on_demand(pricing_client, region)
    if not on_demand:
        od_source = f"table:{table.kind(region, 'on-demand')}"
    reference = {
        **table.on_demand_prices.get(region, table.on_demand_prices.get("us-east-1", {})),
        **on_demand,
    }
    spot, spot_source = _live_spot(ec2_client, region, reference)
    if not spot:
        spot_source = f"table:{table.kind(region, 'spot')}"
    prices = RegionPrices(region, on_demand, spot, od_source, spot_source, now, table)
    LOG.info("prices for %s: %s", region, prices.describe())
    _CACHE[key] = prices
    return prices


def clear_cache() -> None:
    _CACHE.clear()


# --- on-demand: the Pricing API ----------------------------------------------------------------------
_PRICING_FILTERS: Final = (
    ("operatingSystem", "Linux"),
    ("preInstalledSw", "NA"),
    ("capacitystatus", "Used"),
    ("tenancy", "Shared"),
    ("marketoption", "OnDemand"),
)


def _live_on_demand(pricing_client: Any | None, region: str) -> tuple[dict[str, float], str]:
    if pricing_client is None:
        return {}, "none"
    filters = [
        {"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in (("regionCode", region), *_PRICING_FILTERS)
    ]
    prices: dict[str, float] = {}
    try:
        paginator = pricing_client.get_paginator("get_products")
        for page in paginator.paginate(ServiceCode="AmazonEC2", Filters=filters):
            for item in page.get("PriceList", []):
                parsed = _parse_product(item)
                if parsed is not None:
                    prices[parsed[0]] = parsed[1]
    except Exception as exc:  # any failure of an optional live source falls back to the table
        LOG.warning(
            "Pricing API unavailable for %s (%s); using the shipped on-demand table", region, _reason(exc)
        )
        return {}, "none"
    if not prices:
        LOG.warning("Pricing API returned no EC2 prices for %s; using the shipped on-demand table", region)
    return prices, "pricing-api"


def _parse_product(item: Any) -> tuple[str, float] | None:
    product = json.loads(item) if isinstance(item, str) else item
    attributes = product.get("product", {}).get("attributes", {})
    name = attributes.get("instanceType")
    if not name:
        return None
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            usd = dimension.get("pricePerUnit", {}).get("USD")
            if usd is not None and float(usd) > 0:
                return str(name), float(usd)
    return None


# --- spot: DescribeSpotPriceHistory ------------------------------------------------------------------
def _live_spot(
    ec2_client: Any, region: str, on_demand: Mapping[str, float]
) -> tuple[dict[tuple[str, str], float], str]:
    try:
        probe = _spot_quotes(ec2_client, instance_types=PROBE_TYPES)
        verdict = synthetic_reason(probe, on_demand)
        if verdict is not None:
            LOG.warning(
                "spot price history for %s looks synthetic (%s); using the shipped spot estimates",
                region,
                verdict,
            )
            return {}, "none"
        quotes = _spot_quotes(ec2_client)
    except Exception as exc:
        LOG.warning(
            "spot price history unavailable for %s (%s); using the shipped spot estimates",
            region,
            _reason(exc),
        )
        return {}, "none"
    verdict = synthetic_reason(quotes, on_demand)
    if verdict is not None:
        LOG.warning(
            "spot price history for %s looks synthetic (%s); using the shipped spot estimates",
            region,
            verdict,
        )
        return {}, "none"
    return quotes, "spot-price-history"


def _spot_quotes(ec2_client: Any, instance_types: list[str] | None = None) -> dict[tuple[str, str], float]:
    """Latest quote per (type, zone)."""
    latest: dict[tuple[str, str], tuple[Any, float]] = {}
    kwargs: dict[str, Any] = {"ProductDescriptions": SPOT_PRODUCTS}
    if instance_types:
        kwargs["InstanceTypes"] = instance_types
    for page in ec2_client.get_paginator("describe_spot_price_history").paginate(**kwargs):
        for quote in page.get("SpotPriceHistory", []):
            key = (quote["InstanceType"], quote["AvailabilityZone"])
            stamp = quote.get("Timestamp")
            previous = latest.get(key)
            if previous is None or (stamp is not None and previous[0] is not None and stamp > previous[0]):
                latest[key] = (stamp, float(quote["SpotPrice"]))
    return {key: price for key, (_, price) in latest.items()}


def synthetic_reason(quotes: Mapping[tuple[str, str], float], on_demand: Mapping[str, float]) -> str | None:
    """Why a set of spot quotes cannot be real prices, or None when they look real."""
    if not quotes:
        return "no quotes"
    values = set(quotes.values())
    types = {name for name, _ in quotes}
    if len(values) == 1 and len(types) > 1:
        return f"{len(quotes)} quotes all equal {next(iter(values))}"
    low, high = PLAUSIBLE_SPOT_RATIO
    judged = [(price, on_demand[name]) for (name, _), price in quotes.items() if on_demand.get(name)]
    implausible = sum(1 for price, od in judged if not low * od <= price <= high * od)
    if judged and implausible * 2 > len(judged):
        return f"{implausible} of {len(judged)} quotes outside {low:.0%}-{high:.0%} of on-demand"
    return None


def _reason(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        error = response.get("Error", {})
        return f"{error.get('Code', type(exc).__name__)}: {error.get('Message', '')}".strip()
    return f"{type(exc).__name__}: {exc}"


# --- regenerating the derived parts of the table --------------------------------------------------------
def rederive(path: Path, zones_by_region: Mapping[str, Iterable[str]] | None = None) -> dict[str, Any]:
    """Rebuild estimates in a price table document from its quoted us-east-1 prices (same models, same output)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    zones = zones_by_region or {
        region: entry.get("zones", []) for region, entry in document["provenance"]["spot"].items()
    }
    return derive_table(document["on_demand"]["us-east-1"], zones, document["provenance"])


def main(argv: list[str] | None = None, write: Callable[[str], Any] = sys.stdout.write) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["--rederive"]:
        write("usage: python -m longshore.adapters.aws.pricing --rederive\n")
        return 2
    path = Path(str(resources.files("longshore").joinpath("data", TABLE_RESOURCE)))
    document = rederive(path)
    path.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
    write(f"rewrote {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The EC2 catalog adapter against moto, and the price source's live/fallback logic against stateful fakes.

Expected label and allocatable values for m5.large and c6g.large are Karpenter's published ones (aws/karpenter-
provider-aws `website/content/en/docs/reference/instance-types.md`), not derived from this code.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longshore.adapters.aws import instance_types as adapter
from longshore.adapters.aws import pricing
from longshore.core import labels as wk
from longshore.core.allocatable import allocatable
from longshore.core.catalog import Catalog
from longshore.core.model import Requirement
from longshore.core.requirements import Requirements
from longshore_sim.clock import VirtualClock

DATA = Path(pricing.__file__).resolve().parents[2] / "data" / "prices.json"


@pytest.fixture(scope="module")
def moto_catalog() -> Iterator[tuple[Catalog, Any]]:
    adapter.clear_cache()
    pricing.clear_cache()
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        catalog = adapter.load_catalog(
            ec2, boto3.client("pricing", region_name="us-east-1"), "us-east-1", VirtualClock(1_000_000.0)
        )
        yield catalog, ec2


@pytest.mark.slow
def test_catalog_covers_moto_types_across_pages(moto_catalog: tuple[Catalog, Any]) -> None:
    catalog, _ = moto_catalog
    assert catalog.region == "us-east-1"
    assert len(catalog) > 1000  # DescribeInstanceTypes pages hold 100 types: pagination worked
    assert "mac1.metal" not in catalog  # x86_64_mac is not an architecture Karpenter launches


@pytest.mark.slow
def test_m5_large_labels_and_allocatable_match_karpenter(moto_catalog: tuple[Catalog, Any]) -> None:
    m5 = moto_catalog[0]["m5.large"]
    labels = dict(m5.labels)
    assert {
        k: labels[k]
        for k in (wk.INSTANCE_CATEGORY, wk.INSTANCE_FAMILY, wk.INSTANCE_GENERATION, wk.INSTANCE_SIZE)
    } == {
        wk.INSTANCE_CATEGORY: "m",
        wk.INSTANCE_FAMILY: "m5",
        wk.INSTANCE_GENERATION: "5",
        wk.INSTANCE_SIZE: "large",
    }
    assert labels[wk.INSTANCE_CPU] == "2" and labels[wk.INSTANCE_MEMORY] == "8192"
    assert labels[wk.INSTANCE_CPU_MANUFACTURER] == "intel"
    assert labels[wk.INSTANCE_HYPERVISOR] == "nitro"
    assert labels[wk.INSTANCE_EBS_BANDWIDTH] == "4750"
    assert labels[wk.INSTANCE_NETWORK_BANDWIDTH] == "750"
    assert m5.arch == "amd64" and m5.max_pods_eni == 29
    assert allocatable(m5).to_quantities() == {
        "cpu": "1930m",
        "memory": "6903Mi",
        "pods": "29",
        "ephemeral-storage": "17Gi",
    }


@pytest.mark.slow
def test_graviton_is_arm64_with_cma_reserved(moto_catalog: tuple[Catalog, Any]) -> None:
    c6g = moto_catalog[0]["c6g.large"]
    assert c6g.arch == "arm64" and c6g.requirements().values(wk.ARCH) == {"arm64"}
    assert dict(c6g.labels)[wk.INSTANCE_CPU_MANUFACTURER] == "aws"
    assert (
        allocatable(c6g).to_quantities()["memory"] == "3055Mi"
    )  # same shape as a1.large in Karpenter's table


@pytest.mark.slow
def test_gpu_types_carry_gpu_labels_and_resources(moto_catalog: tuple[Catalog, Any]) -> None:
    g4 = moto_catalog[0]["g4dn.xlarge"]
    labels = dict(g4.labels)
    assert labels[wk.INSTANCE_GPU_NAME] == "t4"
    assert labels[wk.INSTANCE_GPU_MANUFACTURER] == "nvidia"
    assert labels[wk.INSTANCE_GPU_COUNT] == "1"
    assert labels[wk.INSTANCE_GPU_MEMORY] == "16384"  # a T4 has 16 GiB
    assert g4.capacity["nvidia.com/gpu"] == 1
    assert allocatable(g4)["nvidia.com/gpu"] == 1


@pytest.mark.slow
def test_offerings_follow_ec2_offerings_and_the_price_table(moto_catalog: tuple[Catalog, Any]) -> None:
    catalog, ec2 = moto_catalog
    offered = {
        o["Location"]
        for page in ec2.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": ["m5.large"]}]
        )
        for o in page["InstanceTypeOfferings"]
    }
    m5 = catalog["m5.large"]
    assert m5.zones() == offered
    assert {(o.zone, o.capacity_type) for o in m5.offerings} == {
        (z, c) for z in offered for c in ("on-demand", "spot")
    }
    on_demand = {o.price for o in m5.offerings if o.capacity_type == "on-demand"}
    assert on_demand == {0.096}  # Karpenter's us-east-1 table
    assert all(0 < o.price < 0.096 for o in m5.offerings if o.capacity_type == "spot")
    assert all(o.zone_id and o.zone_id.startswith("use1-az") for o in m5.offerings)
    assert "table" in catalog.price_source


@pytest.mark.slow
def test_pool_filtering_on_the_real_catalog(moto_catalog: tuple[Catalog, Any]) -> None:
    pool = Requirements.of(
        [
            Requirement(wk.INSTANCE_CATEGORY, "In", ("t", "m")),
            Requirement(wk.CAPACITY_TYPE, "In", ("on-demand",)),
            Requirement(wk.INSTANCE_GENERATION, "In", ("3", "5")),
            Requirement(wk.ARCH, "In", ("amd64",)),
        ]
    )
    chosen = moto_catalog[0].compatible(pool)
    assert chosen and all(dict(it.labels)[wk.INSTANCE_CATEGORY] in ("t", "m") for it in chosen)
    assert all(dict(it.labels)[wk.INSTANCE_GENERATION] in ("3", "5") for it in chosen)
    prices = [it.cheapest_price(pool) for it in chosen]
    assert prices == sorted(prices)
    assert chosen[0].name == "t3a.nano"  # $0.0047/h, the cheapest t or m type of generation 3 or 5


def test_moto_prices_fall_back_to_the_table_and_say_so(caplog: pytest.LogCaptureFixture) -> None:
    pricing.clear_cache()
    with mock_aws(), caplog.at_level(logging.INFO, logger="longshore.adapters.aws.pricing"):
        prices = pricing.region_prices(
            boto3.client("ec2", region_name="us-west-2"),
            boto3.client("pricing", region_name="us-east-1"),
            "us-west-2",
            0.0,
        )
    assert prices.on_demand_source == "table:estimate" and prices.spot_source == "table:estimate"
    text = caplog.text
    assert "Pricing API unavailable for us-west-2" in text
    assert "looks synthetic" in text and "all equal 1e-05" in text
    assert prices.on_demand_price("m5.large") == 0.096


@pytest.mark.slow
def test_zone_restriction_and_catalog_cache(moto_catalog: tuple[Catalog, Any]) -> None:
    _, ec2 = moto_catalog
    clock = VirtualClock(1_000_000.0)
    again = adapter.load_catalog(ec2, None, "us-east-1", clock)
    assert again is adapter.load_catalog(ec2, None, "us-east-1", clock)
    narrowed = adapter.load_catalog(ec2, None, "us-east-1", clock, zones=["us-east-1a"])
    assert narrowed.zones() == {"us-east-1a"}


# --- live prices with stateful fakes ----------------------------------------------------------------------
def _product(name: str, usd: str) -> str:
    return json.dumps(
        {
            "product": {"attributes": {"instanceType": name}},
            "terms": {"OnDemand": {"T": {"priceDimensions": {"D": {"pricePerUnit": {"USD": usd}}}}}},
        }
    )


@dataclass
class FakeAws:
    """One fake answering GetProducts and DescribeSpotPriceHistory from its state; counts what it was asked."""

    products: list[str]
    quotes: list[dict[str, Any]]
    asked: dict[str, int] = field(default_factory=dict)
    meta: Any = field(default_factory=lambda: SimpleNamespace(endpoint_url="fake://aws"))

    def get_paginator(self, name: str) -> Any:
        self.asked[name] = self.asked.get(name, 0) + 1
        if name == "get_products":
            return SimpleNamespace(paginate=lambda **_: iter([{"PriceList": self.products}]))

        def spot_pages(**kwargs: Any) -> Iterator[dict[str, Any]]:
            wanted = set(kwargs.get("InstanceTypes") or [q["InstanceType"] for q in self.quotes])
            yield {"SpotPriceHistory": [q for q in self.quotes if q["InstanceType"] in wanted]}

        return SimpleNamespace(paginate=spot_pages)


def _quote(name: str, zone: str, price: str, stamp: int) -> dict[str, Any]:
    return {"InstanceType": name, "AvailabilityZone": zone, "SpotPrice": price, "Timestamp": stamp}


def test_live_prices_are_used_when_plausible_and_refreshed_after_12_hours() -> None:
    pricing.clear_cache()
    aws = FakeAws(
        products=[_product("m5.large", "0.1010000000"), _product("c5.large", "0.0900000000")],
        quotes=[
            _quote("m5.large", "us-east-1a", "0.0300", 1),
            _quote("m5.large", "us-east-1a", "0.0350", 2),
            _quote("c5.large", "us-east-1a", "0.0310", 1),
        ],
    )
    prices = pricing.region_prices(aws, aws, "us-east-1", 0.0)
    assert (prices.on_demand_source, prices.spot_source) == ("pricing-api", "spot-price-history")
    assert prices.on_demand_price("m5.large") == 0.101
    assert prices.on_demand_price("r5.large") == 0.126  # not in the API answer: the table fills in
    assert prices.spot_price("m5.large", "us-east-1a") == 0.035  # the latest quote wins
    assert pricing.region_prices(aws, aws, "us-east-1", 11 * 3600.0) is prices
    assert aws.asked["get_products"] == 1
    refreshed = pricing.region_prices(aws, aws, "us-east-1", 12 * 3600.0)
    assert refreshed is not prices and aws.asked["get_products"] == 2


@pytest.mark.parametrize(
    ("quotes", "verdict"),
    [
        ({("m5.large", "a"): 0.00001, ("c5.large", "a"): 0.00001}, "2 quotes all equal 1e-05"),
        ({("m5.large", "a"): 0.9, ("c5.large", "a"): 0.8}, "2 of 2 quotes outside 5%-150% of on-demand"),
        ({("m5.large", "a"): 0.03, ("c5.large", "a"): 0.031}, None),
        ({}, "no quotes"),
    ],
)
def test_synthetic_spot_detection(quotes: dict[tuple[str, str], float], verdict: str | None) -> None:
    assert pricing.synthetic_reason(quotes, {"m5.large": 0.096, "c5.large": 0.085}) == verdict


def test_shipped_table_is_what_the_documented_models_produce() -> None:
    document = json.loads(DATA.read_text(encoding="utf-8"))
    assert pricing.rederive(DATA) == document
    provenance = document["provenance"]["on_demand"]
    assert provenance["us-east-1"]["kind"] == "quote"
    assert provenance["us-east-1"]["commit"] == "265ee0ba5b8e337dec6b82dde965b03021ccb418"
    assert {provenance[r]["kind"] for r in ("us-west-2", "ap-northeast-2")} == {"estimate"}
    assert all(entry["kind"] == "estimate" for entry in document["provenance"]["spot"].values())
    for region in ("us-east-1", "us-west-2", "ap-northeast-2"):
        for family in ("c5", "m5", "r5", "t3", "g4dn", "p3", "m7g", "c7i"):
            assert any(name.startswith(family + ".") for name in document["on_demand"][region]), (
                region,
                family,
            )
    assert DATA.stat().st_size < 1_000_000


# --- `longshore catalog` -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_catalog_report_for_the_seed_pools(moto_catalog: tuple[Catalog, Any]) -> None:
    from longshore.cli.catalog import build_report
    from longshore.config import load_cluster
    from longshore.core.quantity import parse
    from tests.conftest import VALID_MANIFESTS

    catalog, _ = moto_catalog
    cluster = load_cluster([VALID_MANIFESTS / "01-requirements-ttl-empty.yaml"])
    report = build_report(cluster, catalog, "moto")
    assert report["region"] == "us-east-1" and report["aws"] == "moto"
    rows = report["nodepools"]["default"]
    assert rows and report["reasons"] == {}
    for row in rows:  # every type obeys the pool, checked from the printed labels and offerings alone
        assert row["labels"][wk.INSTANCE_CATEGORY] in ("t", "m")
        assert row["labels"][wk.INSTANCE_GENERATION] in ("3", "5")
        assert row["labels"][wk.ARCH] == "amd64" and row["labels"][wk.OS] == "linux"
        assert {o["capacity_type"] for o in row["offerings"]} == {"on-demand"}
        assert all(
            set(o) == {"zone", "zone_id", "capacity_type", "price", "list_price", "adjusted", "available"}
            and not o["adjusted"]
            for o in row["offerings"]
        )
        alloc = {name: parse(name, qty) for name, qty in row["allocatable"].items()}
        capacity = {name: parse(name, qty) for name, qty in row["capacity"].items()}
        assert all(0 <= alloc[name] <= capacity[name] for name in alloc)
    cheapest = [min(o["price"] for o in row["offerings"]) for row in rows]
    assert cheapest == sorted(cheapest)


@pytest.mark.slow
def test_catalog_report_previews_overlay_prices(moto_catalog: tuple[Catalog, Any]) -> None:
    import dataclasses

    from longshore.cli.catalog import build_report
    from longshore.config import load_cluster
    from longshore.core.model import NodeOverlay, Origin, Requirement
    from tests.conftest import VALID_MANIFESTS

    catalog, _ = moto_catalog
    cluster = load_cluster([VALID_MANIFESTS / "01-requirements-ttl-empty.yaml"])
    first = build_report(cluster, catalog, "moto")["nodepools"]["default"][0]
    dear = NodeOverlay(
        "dear",
        Origin("karpenter.sh/v1alpha1", "NodeOverlay"),
        (Requirement(wk.INSTANCE_TYPE, "In", (first["name"],)),),
        price_adjustment="+1000%",
    )
    pools = tuple(dataclasses.replace(p, overlays=(dear,)) for p in cluster.node_pools)
    rows = build_report(dataclasses.replace(cluster, node_pools=pools), catalog, "moto")["nodepools"][
        "default"
    ]
    assert rows[0]["name"] != first["name"]  # no longer the cheapest
    (row,) = [r for r in rows if r["name"] == first["name"]]
    for offering in row["offerings"]:
        assert offering["adjusted"] and offering["price"] == pytest.approx(11 * offering["list_price"])


@pytest.mark.slow
def test_catalog_report_explains_an_empty_pool(moto_catalog: tuple[Catalog, Any]) -> None:
    from longshore.cli.catalog import build_report
    from longshore.config import load_cluster
    from tests.conftest import VALID_MANIFESTS

    seoul_pool = load_cluster([VALID_MANIFESTS / "08-c6i-zonal-expiring.yaml"])  # us-east-1 by default
    assert build_report(seoul_pool, moto_catalog[0], "moto")["reasons"]["c6i-workers"] == (
        "no instance type in the catalog has topology.kubernetes.io/zone In [ap-northeast-2a,ap-northeast-2c] "
        "(pool c6i-workers requires it)"
    )

    cluster = load_cluster([VALID_MANIFESTS / "05-gpu-tainted.yaml"])
    report = build_report(cluster, moto_catalog[0], "moto")
    # moto 5.2.5 no longer describes p3.8xlarge / p3.16xlarge (retired by EC2), so the seed's GPU pool is empty.
    assert report["nodepools"]["gpu"] == []
    assert report["reasons"]["gpu"] == (
        "no instance type in the catalog has node.kubernetes.io/instance-type In [p3.16xlarge,p3.8xlarge] "
        "(pool gpu requires it)"
    )


@pytest.mark.slow
def test_catalog_command_prints_json_for_the_seed_region() -> None:
    from click.testing import CliRunner

    from longshore.cli.main import main
    from tests.conftest import VALID_MANIFESTS

    seed = str(VALID_MANIFESTS / "08-c6i-zonal-expiring.yaml")
    result = CliRunner().invoke(main, ["catalog", "--config", seed, "--region", "ap-northeast-2", "--json"])
    assert result.exit_code == 0, result.output
    assert "EC2 data shipped with Longshore" in result.stderr
    report = json.loads(result.stdout)
    assert report["region"] == "ap-northeast-2" and report["aws"] == "offline"
    rows = report["nodepools"]["c6i-workers"]
    assert [row["name"] for row in rows] == ["c6i.4xlarge", "c6i.8xlarge"]
    for row in rows:
        assert set(row) >= {"name", "labels", "allocatable", "offerings"}
        assert {(o["zone"], o["capacity_type"]) for o in row["offerings"]} <= {
            ("ap-northeast-2a", "on-demand"),
            ("ap-northeast-2c", "on-demand"),
        }
        assert row["offerings"]


@pytest.mark.slow
def test_catalog_report_applies_karpenter_defaults(moto_catalog: tuple[Catalog, Any]) -> None:
    from longshore.cli.catalog import build_report
    from longshore.config import load_cluster
    from tests.conftest import VALID_MANIFESTS

    report = build_report(
        load_cluster([VALID_MANIFESTS / "04-weighted-savings-plan.yaml"]), moto_catalog[0], "moto"
    )
    pinned = report["nodepools"]["savings-plan-instance"]
    assert [row["name"] for row in pinned] == ["m5.large"]
    # No capacity-type requirement: Karpenter defaults the pool to on-demand.
    assert {o["capacity_type"] for o in pinned[0]["offerings"]} == {"on-demand"}
    both = report["nodepools"]["default"]
    assert {o["capacity_type"] for row in both for o in row["offerings"]} == {"on-demand", "spot"}
    assert list(report["nodepools"]) == ["savings-plan-instance", "default"]  # weight order

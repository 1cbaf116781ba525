"""The catalog: instance-type requirements, compatible types ordered by price, offerings, the price models."""

from __future__ import annotations

import pytest

from longshore.core import labels as wk
from longshore.core.catalog import (
    MEMO_ENTRIES,
    Catalog,
    InstanceType,
    Offering,
    labels_from_name,
    make_instance_type,
)
from longshore.core.model import Requirement
from longshore.core.pricing import PriceTable, PriceTableError, estimate_spot, regional_factor
from longshore.core.requirements import Requirements


def offers(od: float, spot: float | None = None, zones: tuple[str, ...] = ("a", "b")) -> list[Offering]:
    result = [Offering(z, "on-demand", od) for z in zones]
    if spot is not None:
        result += [Offering(z, "spot", spot) for z in zones]
    return result


M5 = make_instance_type("m5.large", vcpus=2, memory_mib=8192, offerings=offers(0.096, 0.04))
C5 = make_instance_type("c5.large", vcpus=2, memory_mib=4096, offerings=offers(0.085, 0.035))
R5 = make_instance_type("r5.large", vcpus=2, memory_mib=16384, offerings=offers(0.126))
T3 = make_instance_type("t3.medium", vcpus=2, memory_mib=4096, offerings=offers(0.0416, zones=("a",)))
G4 = make_instance_type(
    "g4dn.xlarge",
    vcpus=4,
    memory_mib=16384,
    offerings=offers(0.526, 0.2),
    extra_labels={wk.INSTANCE_GPU_NAME: "t4"},
    extended={"nvidia.com/gpu": 1},
)
CATALOG = Catalog((M5, C5, R5, T3, G4), region="test")


def reqs(*written: tuple[str, str, tuple[str, ...]]) -> Requirements:
    return Requirements.of(Requirement(k, op, v) for k, op, v in written)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "category", "family", "generation", "size"),
    [
        ("m5.large", "m", "m5", "5", "large"),
        ("c6gn.16xlarge", "c", "c6gn", "6", "16xlarge"),
        ("u-6tb1.metal", "u", "u-6tb1", "1", "metal"),
        ("c7i-flex.large", "c", "c7i-flex", "7", "large"),
        ("p6-b200.48xlarge", "p", "p6-b200", "6", "48xlarge"),
    ],
)
def test_labels_from_name(name: str, category: str, family: str, generation: str, size: str) -> None:
    assert labels_from_name(name) == {
        wk.INSTANCE_CATEGORY: category,
        wk.INSTANCE_FAMILY: family,
        wk.INSTANCE_GENERATION: generation,
        wk.INSTANCE_SIZE: size,
    }


def test_instance_type_requirements_cover_labels_zones_and_capacity_types() -> None:
    r = M5.requirements()
    assert r.values(wk.INSTANCE_TYPE) == {"m5.large"}
    assert r.values(wk.INSTANCE_CATEGORY) == {"m"}
    assert r.values(wk.ZONE) == {"a", "b"}
    assert r.values(wk.CAPACITY_TYPE) == {"on-demand", "spot"}
    assert r.values(wk.ARCH) == {"amd64"} and r.values(wk.OS) == {"linux"}
    assert r.allows(wk.INSTANCE_CPU, "2") and not r.allows(wk.INSTANCE_CPU, "4")


def test_compatible_types_are_sorted_by_cheapest_allowed_offering() -> None:
    everything = CATALOG.compatible(Requirements())
    assert [it.name for it in everything] == ["c5.large", "m5.large", "t3.medium", "r5.large", "g4dn.xlarge"]
    on_demand = CATALOG.compatible(reqs((wk.CAPACITY_TYPE, "In", ("on-demand",))))
    assert [it.name for it in on_demand] == ["t3.medium", "c5.large", "m5.large", "r5.large", "g4dn.xlarge"]


def test_filters_by_labels_zones_and_capacity_types() -> None:
    pool = reqs((wk.INSTANCE_CATEGORY, "In", ("t", "m")), (wk.INSTANCE_GENERATION, "In", ("3", "5")))
    assert {it.name for it in CATALOG.compatible(pool)} == {"m5.large", "t3.medium"}
    zone_b_spot = reqs((wk.ZONE, "In", ("b",)), (wk.CAPACITY_TYPE, "In", ("spot",)))
    assert {it.name for it in CATALOG.compatible(zone_b_spot)} == {"m5.large", "c5.large", "g4dn.xlarge"}
    big = reqs((wk.INSTANCE_CPU, "Gt", ("2",)))
    assert [it.name for it in CATALOG.compatible(big)] == ["g4dn.xlarge"]
    assert CATALOG.compatible(reqs((wk.ARCH, "In", ("arm64",)))) == ()


def test_instance_labels_a_type_lacks_do_not_exist() -> None:
    # Karpenter's AWS provider defines every instance label on every type, as DoesNotExist when it has none
    assert M5.requirements().get(wk.INSTANCE_GPU_NAME) is not None
    gpu = [it.name for it in CATALOG.compatible(reqs((wk.INSTANCE_GPU_NAME, "Exists", ())))]
    assert gpu == ["g4dn.xlarge"]
    nvme = reqs((wk.INSTANCE_LOCAL_NVME, "Gt", ("100",)))
    assert CATALOG.compatible(nvme) == ()
    no_gpu = CATALOG.compatible(reqs((wk.INSTANCE_GPU_NAME, "DoesNotExist", ())))
    assert "g4dn.xlarge" not in {it.name for it in no_gpu} and len(no_gpu) == 4
    assert len(CATALOG.compatible(reqs((wk.INSTANCE_GPU_NAME, "NotIn", ("t4",))))) == 4


def test_compatible_offerings_respect_requirements_and_availability() -> None:
    spot_only = reqs((wk.CAPACITY_TYPE, "In", ("spot",)))
    assert [(o.zone, o.capacity_type) for o in M5.compatible_offerings(spot_only)] == [
        ("a", "spot"),
        ("b", "spot"),
    ]
    blocked = CATALOG.without_offerings([("m5.large", "a", "spot"), ("m5.large", "b", "spot")])
    assert blocked["m5.large"].compatible_offerings(spot_only) == ()
    assert len(blocked["m5.large"].compatible_offerings(spot_only, available_only=False)) == 2
    assert "m5.large" not in {it.name for it in blocked.compatible(spot_only)}
    assert blocked["c5.large"] is CATALOG["c5.large"]  # untouched types are shared


def test_derived_views_are_memoised_on_the_immutable_catalog_and_bounded() -> None:
    catalog = Catalog((M5, C5), region="test")
    blocked = [("m5.large", "a", "spot")]
    first = catalog.without_offerings(blocked)
    assert catalog.without_offerings(list(reversed(blocked))) is first  # same set, same view
    assert catalog.without_offerings([("c5.large", "a", "spot")]) is not first
    calls: list[int] = []
    for n in range(MEMO_ENTRIES + 10):
        catalog.memo(("n", n), lambda: calls.append(1))
    assert len(calls) == MEMO_ENTRIES + 10  # each key derived once
    catalog.memo(("n", MEMO_ENTRIES + 9), lambda: calls.append(1))
    assert len(calls) == MEMO_ENTRIES + 10  # a recent key is still there
    catalog.memo(("n", 0), lambda: calls.append(1))
    assert len(calls) == MEMO_ENTRIES + 11  # the oldest were dropped: the memo stays bounded
    assert catalog.memo({"unhashable": 1}, lambda: "derived") == "derived"


def test_restricted_to_zones_drops_other_offerings_and_empty_types() -> None:
    only_b = CATALOG.restricted_to_zones(["b"])
    assert "t3.medium" not in only_b
    assert only_b["m5.large"].zones() == {"b"}


def test_explains_why_nothing_is_compatible() -> None:
    gpu = reqs((wk.INSTANCE_TYPE, "In", ("p3.8xlarge", "p3.16xlarge")))
    assert CATALOG.compatible(gpu) == ()
    assert CATALOG.explain_none_compatible(gpu, subject="pool gpu") == (
        "no instance type in the catalog has node.kubernetes.io/instance-type In [p3.16xlarge,p3.8xlarge] "
        "(pool gpu requires it)"
    )
    reason = M5.incompatibility(reqs((wk.INSTANCE_CATEGORY, "In", ("c",))))
    assert reason == "requires karpenter.k8s.aws/instance-category In [c] but m5.large allows [m]"


def test_instance_type_is_hashable_and_equal_by_value() -> None:
    again = make_instance_type("m5.large", vcpus=2, memory_mib=8192, offerings=offers(0.096, 0.04))
    assert again == M5 and hash(again) == hash(M5)
    assert isinstance(M5, InstanceType)


# --- price models ----------------------------------------------------------------------------------------
def test_spot_estimates_are_deterministic_and_within_the_documented_band() -> None:
    first = estimate_spot(0.096, "m5.large", "us-east-1a")
    assert first == estimate_spot(0.096, "m5.large", "us-east-1a")
    assert 0.096 * 0.25 * 0.97 <= first <= 0.096 * 0.45 * 1.03
    gpu = estimate_spot(0.526, "g4dn.xlarge", "us-east-1a")
    assert 0.526 * 0.35 * 0.97 <= gpu <= 0.526 * 0.55 * 1.03
    zones = {estimate_spot(0.096, "m5.large", f"us-east-1{z}") for z in "abcdef"}
    assert len(zones) > 1  # zones differ


def test_regional_factors() -> None:
    assert regional_factor("us-west-2", "m5.large") == 1.0
    assert regional_factor("ap-northeast-2", "m5.large") == 1.23
    assert regional_factor("ap-northeast-2", "x2gd.large") == 1.22


def test_price_table_lookup_and_fallbacks() -> None:
    table = PriceTable(
        {"us-east-1": {"m5.large": 0.096}},
        {"us-east-1": {"m5.large": {"us-east-1a": 0.03}}},
        {"on_demand": {"us-east-1": {"kind": "quote"}}, "spot": {"us-east-1": {"kind": "estimate"}}},
    )
    assert table.on_demand("us-east-1", "m5.large") == 0.096
    assert table.on_demand("eu-west-1", "m5.large") == 0.096  # unknown region falls back to us-east-1
    assert table.on_demand("us-east-1", "m9.huge") is None
    assert table.spot("us-east-1", "m5.large", "us-east-1a") == 0.03
    assert table.spot("us-east-1", "m5.large", "us-east-1z") == estimate_spot(0.096, "m5.large", "us-east-1z")
    assert table.kind("us-east-1") == "quote" and table.kind("us-east-1", "spot") == "estimate"
    with pytest.raises(PriceTableError, match=r"prices\.json: field 'schema'"):
        PriceTable.from_document({"schema": 0})

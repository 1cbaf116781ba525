"""NodeOverlays applied to the catalog (`core.overlays`): matching, precedence, price and capacity."""

from __future__ import annotations

import pytest

from longshore.core import labels as wk
from longshore.core.model import NodeOverlay, Origin
from longshore.core.overlays import adjust, ordered, overlaid, price_of
from longshore.core.resources import Resources
from tests.builders import catalog, instance_type, req

ORIGIN = Origin("karpenter.sh/v1alpha1", "NodeOverlay")


def overlay(name: str, *requirements, weight: int = 0, **fields) -> NodeOverlay:
    return NodeOverlay(name, ORIGIN, tuple(requirements), weight=weight, **fields)


def two_families():
    return catalog(
        instance_type("m5.large", price=0.096, spot_price=0.04),
        instance_type("c5.large", price=0.085, spot_price=0.035),
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"price_adjustment": "+10%"}, 0.11),
        ({"price_adjustment": "-15%"}, 0.085),
        ({"price_adjustment": "-100%"}, 0.0),
        ({"price_adjustment": "+0.5"}, 0.6),
        ({"price_adjustment": "-0.25"}, 0.0),  # never below zero
        ({"price": 0.02}, 0.02),
        ({}, 0.1),
    ],
)
def test_adjust(fields, expected):
    assert adjust(0.1, overlay("o", **fields)) == pytest.approx(expected)


def test_order_is_weight_then_name_descending():
    names = [o.name for o in ordered([overlay("a", weight=5), overlay("b"), overlay("c", weight=5)])]
    assert names == ["c", "a", "b"]


def test_price_adjustment_matches_by_labels_and_capacity_type():
    family = overlay(
        "dear-m5",
        req(wk.INSTANCE_FAMILY, "In", "m5"),
        req(wk.CAPACITY_TYPE, "In", "on-demand"),
        price_adjustment="+100%",
    )
    view = overlaid(two_families(), (family,), ((wk.NODEPOOL, "default"),))
    prices = {(o.capacity_type): o.price for o in view["m5.large"].offerings}
    assert prices == {"on-demand": pytest.approx(0.192), "spot": 0.04}  # spot does not match
    assert view["c5.large"] == two_families()["c5.large"]


def test_higher_weight_wins_per_field_and_capacity_merges_per_resource():
    base = overlay("base", price_adjustment="+50%", capacity=Resources.parse({"hugepages-2Mi": "1Gi"}))
    specific = overlay(
        "specific",
        req(wk.INSTANCE_TYPE, "In", "c5.large"),
        weight=10,
        price=0.01,
        capacity=Resources.parse({"example.com/fuse": "1"}),
    )
    view = overlaid(two_families(), (base, specific))
    c5, m5 = view["c5.large"], view["m5.large"]
    assert {o.price for o in c5.offerings} == {0.01}  # the weight-10 price, not +50% on top
    assert sorted(o.price for o in m5.offerings) == pytest.approx([0.06, 0.144])
    assert c5.capacity.get("hugepages-2Mi") == 2**30 and c5.capacity.get("example.com/fuse") == 1
    assert m5.capacity.get("example.com/fuse") == 0


def test_same_weight_the_name_later_in_the_alphabet_wins():
    view = overlaid(two_families(), (overlay("a", price=1.0), overlay("b", price=2.0)))
    assert {o.price for o in view["m5.large"].offerings} == {2.0}


def test_nodepool_requirement_scopes_an_overlay_to_a_pool():
    scoped = overlay("gpu-pool", req(wk.NODEPOOL, "In", "gpu"), price=9.0)
    assert overlaid(two_families(), (scoped,), ((wk.NODEPOOL, "gpu"),))["c5.large"].offerings[0].price == 9.0
    assert (
        overlaid(two_families(), (scoped,), ((wk.NODEPOOL, "web"),))["c5.large"].offerings[0].price == 0.085
    )


def test_views_are_memoised_and_price_of_reads_the_view():
    base = two_families()
    dear = (overlay("dear", price_adjustment="+1"),)
    assert overlaid(base, dear) is overlaid(base, dear)
    assert overlaid(base, ()) is base
    labels = {wk.INSTANCE_TYPE: "c5.large", wk.ZONE: "us-east-1a", wk.CAPACITY_TYPE: "spot"}
    assert price_of(overlaid(base, dear), labels) == pytest.approx(1.035)
    assert price_of(base, {wk.INSTANCE_TYPE: "x9.huge"}) == 0.0

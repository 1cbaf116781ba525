"""Capacity reservations in the pure core: the offerings they add, their price, their state, and where the
packer puts claims (conformance-style, after aws/karpenter-provider-aws
`pkg/providers/instancetype/offering/reserved_capacity_resolver.go` and `pkg/apis/v1/ec2nodeclass_status.go`)."""

from __future__ import annotations

from longshore.core import labels as wk
from longshore.core.requirements import Requirements
from longshore.core.reservations import (
    EXPIRATION_WINDOW_S,
    Reservation,
    drain_deadline,
    reservation_state,
    reserved_offerings,
    reserved_price,
    with_reservations,
    without_refused,
)
from longshore.core.scheduling.solver import solve
from tests import builders as b

ZONES = ("us-east-1a", "us-east-1b")
LARGE = b.instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096, spot_price=0.04, zones=ZONES)
XLARGE = b.instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.192, spot_price=0.08, zones=ZONES)
CATALOG = b.catalog(LARGE, XLARGE)
ALL_TYPES = b.req(wk.CAPACITY_TYPE, "In", "reserved", "spot", "on-demand")


def odcr(rid: str = "cr-1", count: int = 2, zone: str = "us-east-1b", **fields: object) -> Reservation:
    return Reservation(rid, "m5.large", zone, available=count, total=count, **fields)  # type: ignore[arg-type]


def plan(*reservations: Reservation, pods: int = 6, requirements: tuple[object, ...] = (ALL_TYPES,)):  # type: ignore[no-untyped-def]
    pool = b.pool(requirements=requirements)  # type: ignore[arg-type]
    inp = b.scheduling_input(
        b.replicas("p", pods, cpu="1500m", memory="1Gi"),
        [pool],
        CATALOG,
        reservations=(("default", tuple(reservations)),) if reservations else (),
    )
    return solve(inp)


# --- offerings -------------------------------------------------------------------------------------------


def test_each_reservation_adds_one_reserved_offering_priced_at_on_demand_over_ten_million() -> None:
    other_type = Reservation("cr-x", "c5.large", "us-east-1a", available=1)
    (offering,) = reserved_offerings(LARGE, (odcr(), other_type))
    assert (offering.zone, offering.capacity_type, offering.reservation_id) == (
        "us-east-1b",
        "reserved",
        "cr-1",
    )
    assert offering.reservation_type == "default" and offering.reservation_interruptible is False
    assert offering.price == reserved_price(0.096) == 0.096 / 10_000_000
    assert offering.available


def test_a_reserved_offering_is_unavailable_without_room_when_expiring_or_outside_the_types_zones() -> None:
    full = reserved_offerings(LARGE, (odcr(count=0),))
    expiring = reserved_offerings(LARGE, (odcr(reservation_type="capacity-block", state="expiring"),))
    elsewhere = reserved_offerings(LARGE, (odcr(zone="us-east-1c"),))
    assert [o.available for o in (*full, *expiring, *elsewhere)] == [False, False, False]


def test_a_type_without_on_demand_price_offers_its_reservation_at_zero() -> None:
    spot_only = LARGE.with_offerings(o for o in LARGE.offerings if o.capacity_type == "spot")
    (offering,) = reserved_offerings(spot_only, (odcr(),))
    assert offering.price == 0.0


def test_reservation_requirements_admit_only_matching_reserved_offerings() -> None:
    types = with_reservations(CATALOG, (odcr(), odcr("cr-2", reservation_type="capacity-block")))
    offerings = types["m5.large"].offerings
    by_id = Requirements.of([b.req(wk.CAPACITY_RESERVATION_ID, "In", "cr-2")])
    by_type = Requirements.of([b.req(wk.CAPACITY_RESERVATION_TYPE, "In", "default")])
    not_reserved = Requirements.of([b.req(wk.CAPACITY_RESERVATION_ID, "DoesNotExist")])
    assert [o.reservation_id for o in offerings if o.allowed_by(by_id)] == ["cr-2"]
    assert [o.reservation_id for o in offerings if o.allowed_by(by_type)] == ["cr-1"]
    assert all(o.reservation_id is None for o in offerings if o.allowed_by(not_reserved))
    assert sum(1 for o in offerings if o.allowed_by(not_reserved)) == 4  # spot and on-demand in two zones


def test_a_capacity_block_is_expiring_from_forty_minutes_before_its_end() -> None:
    end = 10_000.0
    assert reservation_state("capacity-block", end, end - EXPIRATION_WINDOW_S - 1) == "active"
    assert reservation_state("capacity-block", end, end - EXPIRATION_WINDOW_S) == "expiring"
    assert reservation_state("default", end, end - 1) == "active"  # only blocks expire early
    assert drain_deadline("capacity-block", end) == end - 40 * 60
    assert drain_deadline("default", end) is None
    assert drain_deadline("capacity-block", None) is None


def test_refused_reservations_have_no_room() -> None:
    found = without_refused((("default", (odcr(),)),), {("m5.large", "us-east-1b", "reserved")})
    assert found[0][1][0].available == 0
    untouched = (("default", (odcr(),)),)
    assert without_refused(untouched, {("m5.large", "us-east-1b", "spot")}) is untouched


# --- the plan --------------------------------------------------------------------------------------------


def test_reserved_is_filled_before_spot_and_never_beyond_its_room() -> None:
    result = plan(odcr(count=2))
    kinds = [c.capacity_type for c in result.new_claims]
    assert kinds == ["reserved", "reserved", "spot", "spot", "spot", "spot"]
    reserved = [c for c in result.new_claims if c.capacity_type == "reserved"]
    assert all(c.offerings[0].reservation_id == "cr-1" for c in reserved)
    assert all(o.capacity_type != "reserved" for c in result.new_claims[2:] for o in c.offerings)
    assert result.unschedulable == ()


def test_pricing_order_is_reserved_then_spot_then_on_demand() -> None:
    result = plan(odcr(count=1), pods=2)
    (reserved, spot) = result.new_claims
    assert reserved.capacity_type == "reserved" and spot.capacity_type == "spot"
    assert reserved.price_per_hour < spot.price_per_hour < 0.096
    # a reserved claim may still fall back to spot and on-demand within its launch
    assert [o.capacity_type for o in reserved.offerings][:1] == ["reserved"]
    assert {"spot", "on-demand"} <= {o.capacity_type for o in reserved.offerings}
    on_demand_only = plan(
        odcr(count=1), pods=2, requirements=(b.req(wk.CAPACITY_TYPE, "In", "reserved", "on-demand"),)
    )
    assert [c.capacity_type for c in on_demand_only.new_claims] == ["reserved", "on-demand"]


def test_a_pool_that_excludes_reserved_never_uses_a_reservation() -> None:
    result = plan(odcr(count=5), requirements=(b.req(wk.CAPACITY_TYPE, "In", "spot", "on-demand"),))
    assert {c.capacity_type for c in result.new_claims} == {"spot"}
    default_pool = plan(odcr(count=5), requirements=())  # capacity type left open: on-demand, as in Karpenter
    assert {c.capacity_type for c in default_pool.new_claims} == {"on-demand"}


def test_a_reserved_only_pool_launches_what_the_room_allows_and_says_why_the_rest_wait() -> None:
    result = plan(odcr(count=2), pods=3, requirements=(b.req(wk.CAPACITY_TYPE, "In", "reserved"),))
    assert [c.capacity_type for c in result.new_claims] == ["reserved", "reserved"]
    ((_, reason),) = result.unschedulable
    assert "no room left" in reason and "m5.large" in reason


def test_room_is_shared_over_several_reservations_of_a_type() -> None:
    result = plan(odcr("cr-a", count=1), odcr("cr-b", count=2, zone="us-east-1a"), pods=5)
    ids = sorted(
        c.offerings[0].reservation_id or "" for c in result.new_claims if c.capacity_type == "reserved"
    )
    assert ids == ["cr-a", "cr-b", "cr-b"]


def test_an_expiring_block_or_an_empty_reservation_offers_nothing() -> None:
    block = odcr(reservation_type="capacity-block", state="expiring")
    assert {c.capacity_type for c in plan(block).new_claims} == {"spot"}
    assert {c.capacity_type for c in plan(odcr(count=0)).new_claims} == {"spot"}


def test_a_refused_reserved_offering_is_skipped_until_the_ttl_passes() -> None:
    pool = b.pool(requirements=(ALL_TYPES,))
    inp = b.scheduling_input(
        b.replicas("p", 2, cpu="1500m", memory="1Gi"),
        [pool],
        CATALOG,
        reservations=(("default", (odcr(),)),),
        unavailable=frozenset({("m5.large", "us-east-1b", "reserved")}),
    )
    assert {c.capacity_type for c in solve(inp).new_claims} == {"spot"}


def test_a_reservation_of_another_node_class_is_not_used() -> None:
    pool = b.pool(requirements=(ALL_TYPES,))
    inp = b.scheduling_input(
        b.replicas("p", 2, cpu="1500m", memory="1Gi"), [pool], CATALOG, reservations=(("other", (odcr(),)),)
    )
    assert {c.capacity_type for c in solve(inp).new_claims} == {"spot"}


def test_pods_that_select_a_reservation_get_only_its_room_and_never_a_node_without_its_label() -> None:
    pool = b.pool(requirements=(ALL_TYPES,))
    pods = b.replicas("p", 3, cpu="1500m", memory="1Gi", node_selector={wk.CAPACITY_RESERVATION_ID: "cr-2"})
    found = (odcr("cr-1", count=2), odcr("cr-2", count=1, zone="us-east-1a"))
    result = solve(b.scheduling_input(pods, [pool], CATALOG, reservations=(("default", found),)))
    (claim,) = result.new_claims
    assert [(o.capacity_type, o.reservation_id) for o in claim.offerings] == [("reserved", "cr-2")]
    assert len(result.unschedulable) == 2
    assert all("outside a reservation" in reason for _, reason in result.unschedulable)


def test_an_interruptible_reservation_is_chosen_only_where_allowed() -> None:
    spare = odcr("cr-spare", count=1, zone="us-east-1a", interruptible=True)
    firm = odcr("cr-firm", count=1)
    no_interruptible = b.req(wk.CAPACITY_RESERVATION_INTERRUPTIBLE, "NotIn", "true")
    result = plan(spare, firm, pods=2, requirements=(ALL_TYPES, no_interruptible))
    ids = [c.offerings[0].reservation_id for c in result.new_claims if c.capacity_type == "reserved"]
    assert ids == ["cr-firm"]
    spare_only = b.req(wk.CAPACITY_RESERVATION_INTERRUPTIBLE, "In", "true")
    found = plan(spare, firm, pods=1, requirements=(ALL_TYPES, spare_only))
    assert [
        (c.offerings[0].reservation_id, c.offerings[0].reservation_interruptible) for c in found.new_claims
    ] == [("cr-spare", True)]

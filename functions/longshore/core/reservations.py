"""Capacity reservations (ODCRs and Capacity Blocks): the offerings they add, what they cost, and how many
claims one plan may put in each.

Theory of operation, after aws/karpenter-provider-aws (`pkg/providers/instancetype/offering/
reserved_capacity_resolver.go`, `pkg/providers/capacityreservation/`, `pkg/apis/v1/ec2nodeclass_status.go`,
`pkg/controllers/capacityreservation/`):

- A node class's `capacityReservationSelectorTerms` select *active* reservations (`adapters.aws.reservations`
  asks DescribeCapacityReservations). Each becomes a `Reservation`: id, instance type, zone, the instances it
  still has room for (`available`), its owner, match criteria (`open` | `targeted`), type (`default` |
  `capacity-block`), end time and whether it is interruptible.
- **Offerings.** Every reservation adds one offering to its instance type, `karpenter.sh/capacity-type:
  reserved` in its zone, carrying `karpenter.k8s.aws/capacity-reservation-id`, `-type` and `-interruptible`. It is priced at
  the type's on-demand price / `RESERVED_PRICE_DIVISOR` (10,000,000, Karpenter's constant): nearly free, so
  the packer prefers reserved over spot over on-demand, while reserved types keep their relative order for
  consolidation (price 0 when the type has no on-demand price). It is available only while the reservation
  has room, is not `expiring`, and the type is offered in that zone. Pools see reserved offerings only when
  their requirements allow `reserved` (the default capacity type is on-demand, as in Karpenter).
- **Room is respected** (`assign_reservations`): after the plan is made, claims are walked in order and each
  claim that may launch reserved is given one reservation that still has room (its cheapest reserved
  offering first), and that reservation's room shrinks by one. A claim left without room loses its reserved
  offerings and is repriced at its cheapest remaining offering; a claim with nothing else is dropped and its
  pods stay pending with a reason. A launch decrements the room in the adapter's cache, and a refused launch
  (`ReservationCapacityExceeded`, or `InsufficientInstanceCapacity` on a reserved override) marks the
  offering unavailable like any other capacity error (`core.offerings`).
- **Capacity Blocks end.** A block is `expiring` from `EXPIRATION_WINDOW_S` (40 min) before its end time:
  10 min before EC2 starts reclaiming its instances (30 min before the end). Its offerings are then
  unavailable and its nodes are removed through the disruption workflow (`drain_deadline`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Final

from longshore.core import labels as wk
from longshore.core.catalog import Catalog, InstanceType, Offering

RESERVED: Final = wk.CAPACITY_TYPE_RESERVED
RESERVED_PRICE_DIVISOR: Final = 10_000_000.0
EXPIRATION_WINDOW_S: Final = 40 * 60.0
"""A capacity block is `expiring` this long before its end: 10 minutes before EC2 reclaims its instances."""
EC2_RECLAIM_S: Final = 30 * 60.0
TYPE_DEFAULT: Final = "default"
TYPE_CAPACITY_BLOCK: Final = "capacity-block"
RESERVATION_TYPES: Final = (TYPE_DEFAULT, TYPE_CAPACITY_BLOCK)
MATCH_CRITERIA: Final = ("open", "targeted")


@dataclass(frozen=True, slots=True)
class Reservation:
    """One active capacity reservation a node class selected (times in epoch seconds)."""

    id: str
    instance_type: str
    zone: str
    available: int  # instances it still has room for
    total: int = 0
    owner_id: str = ""
    instance_match_criteria: str = "targeted"
    reservation_type: str = TYPE_DEFAULT
    end_time: float | None = None
    interruptible: bool = False
    state: str = "active"  # "active" | "expiring" (capacity blocks within EXPIRATION_WINDOW_S of their end)

    def with_state_at(self, now: float) -> Reservation:
        return replace(self, state=reservation_state(self.reservation_type, self.end_time, now))

    def status(self) -> dict[str, object]:
        """The `status.capacityReservations[]` entry Karpenter writes on the EC2NodeClass (without `endTime`,
        which `core.karpenter_objects` renders as RFC 3339)."""
        entry: dict[str, object] = {
            "availabilityZone": self.zone,
            "id": self.id,
            "instanceMatchCriteria": self.instance_match_criteria,
            "instanceType": self.instance_type,
            "ownerID": self.owner_id,
            "reservationType": self.reservation_type,
            "state": self.state,
        }
        return entry


ByClass = tuple[tuple[str, tuple[Reservation, ...]], ...]
"""Node class name -> the reservations it selected (a hashable mapping, for `SchedulingInput`)."""


def reservation_state(reservation_type: str, end_time: float | None, now: float) -> str:
    """`expiring` for a capacity block within `EXPIRATION_WINDOW_S` of its end, else `active`."""
    if reservation_type != TYPE_CAPACITY_BLOCK or end_time is None or now < end_time - EXPIRATION_WINDOW_S:
        return "active"
    return "expiring"


def drain_deadline(reservation_type: str | None, end_time: float | None) -> float | None:
    """When a node in this reservation must start draining: capacity blocks only, 40 min before the end."""
    if reservation_type != TYPE_CAPACITY_BLOCK or end_time is None:
        return None
    return end_time - EXPIRATION_WINDOW_S


def reserved_price(on_demand_price: float | None) -> float:
    """Karpenter's reserved price: the on-demand price / 10,000,000 (0 when unknown)."""
    return 0.0 if on_demand_price is None else on_demand_price / RESERVED_PRICE_DIVISOR


def _on_demand_price(instance_type: InstanceType) -> float | None:
    prices = [o.price for o in instance_type.offerings if o.capacity_type == wk.CAPACITY_TYPE_ON_DEMAND]
    return min(prices) if prices else None


def reserved_offerings(
    instance_type: InstanceType, reservations: Iterable[Reservation]
) -> tuple[Offering, ...]:
    """The reserved offerings `reservations` add to `instance_type` (see the module docstring)."""
    zones = {o.zone: o.zone_id for o in instance_type.offerings}
    price = reserved_price(_on_demand_price(instance_type))
    return tuple(
        Offering(
            zone=r.zone,
            capacity_type=RESERVED,
            price=price,
            available=r.available > 0 and r.state != "expiring" and r.zone in zones,
            zone_id=zones.get(r.zone),
            reservation_id=r.id,
            reservation_type=r.reservation_type,
            reservation_interruptible=r.interruptible,
        )
        for r in sorted(reservations, key=lambda r: r.id)
        if r.instance_type == instance_type.name
    )


def with_reservations(catalog: Catalog, reservations: tuple[Reservation, ...]) -> Catalog:
    """`catalog` with the reserved offerings of `reservations` added to their types."""
    if not reservations:
        return catalog

    def derive() -> Catalog:
        wanted = {r.instance_type for r in reservations}
        types = tuple(
            it.with_offerings((*it.offerings, *reserved_offerings(it, reservations)))
            if it.name in wanted
            else it
            for it in catalog.instance_types
        )
        return replace(catalog, instance_types=types)

    return catalog.memo(("reservations", reservations), derive)


def reservations_of(by_class: ByClass, node_class: str) -> tuple[Reservation, ...]:
    return dict(by_class).get(node_class, ())


def room_left(by_class: ByClass) -> dict[str, int]:
    """Reservation id -> instances it may still take (0 for an expiring block)."""
    return {r.id: (r.available if r.state != "expiring" else 0) for _, found in by_class for r in found}


def pick(
    candidates: Iterable[tuple[str, str]],
    reservations: Iterable[Reservation],
    room: Mapping[str, int],
    allows: Mapping[str, bool] | None = None,
) -> Reservation | None:
    """The first reservation with room for the first (instance type, zone) in `candidates` that has one;
    `allows` (reservation id -> bool) filters what the claim's requirements admit."""
    found = tuple(reservations)
    for instance_type, zone in candidates:
        for r in sorted(found, key=lambda r: r.id):
            if (r.instance_type, r.zone) != (instance_type, zone) or room.get(r.id, 0) <= 0:
                continue
            if allows is not None and not allows.get(r.id, True):
                continue
            return r
    return None


def without_refused(by_class: ByClass, unavailable: Iterable[tuple[str, str, str]]) -> ByClass:
    """`by_class` with no room left in the reservations whose (type, zone, reserved) offering EC2 refused
    recently (the unavailable-offerings cache)."""
    refused = {(t, z) for t, z, ct in unavailable if ct == RESERVED}
    if not refused:
        return by_class
    return tuple(
        (name, tuple(replace(r, available=0) if (r.instance_type, r.zone) in refused else r for r in found))
        for name, found in by_class
    )

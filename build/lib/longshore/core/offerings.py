"""Unavailable offerings: which (instance type, zone, capacity type) EC2 recently could not fulfil.

Theory of operation: when CreateFleet reports an override as unfulfillable (`UNFULFILLABLE_CODES`, Karpenter's
list in `pkg/errors/errors.go`), that offering is marked unavailable until `now + UNAVAILABLE_TTL_S` (3 min,
Karpenter's `UnavailableOfferingsTTL`) in the shared store, so the next plan, in this run or another, skips it
and retries it only after the TTL (no tight loop against a stocked-out pool). A few codes are wider than one
offering: `AuthFailure.ServiceLinkedRoleCreationNotPermitted` makes every spot offering of the request
unavailable. `UnavailableOfferings` is the pure value the in-memory store keeps; expiry is evaluated at `now`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

OfferingKey = tuple[str, str, str]  # (instance type, zone, capacity type)

UNAVAILABLE_TTL_S: Final = 180.0

UNFULFILLABLE_CODES: Final = frozenset(
    {
        "InsufficientInstanceCapacity",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
        "UnfulfillableCapacity",
        "Unsupported",
        "InsufficientFreeAddressesInSubnet",
        "MaxFleetCountExceeded",
        "ReservationCapacityExceeded",
    }
)

#: Codes that make every spot offering unavailable, not just the one override.
ALL_SPOT_CODES: Final = frozenset({"AuthFailure.ServiceLinkedRoleCreationNotPermitted"})


def is_unfulfillable(code: str) -> bool:
    """True when an override error means "no capacity here now" rather than "this request is wrong"."""
    return code in UNFULFILLABLE_CODES or code in ALL_SPOT_CODES


def offering_keys_for_error(
    code: str, key: OfferingKey, request_keys: Iterable[OfferingKey]
) -> frozenset[OfferingKey]:
    """The offerings an override error with `code` makes unavailable (empty for errors that are not capacity)."""
    if code in ALL_SPOT_CODES:
        return frozenset(k for k in request_keys if k[2] == "spot") | {key}
    if code in UNFULFILLABLE_CODES:
        return frozenset({key})
    return frozenset()


@dataclass(frozen=True, slots=True)
class UnavailableOfferings:
    """Offering key -> epoch seconds until which it is unavailable."""

    until: tuple[tuple[OfferingKey, float], ...] = ()

    def mark(self, key: OfferingKey, until_epoch: float) -> UnavailableOfferings:
        """This set with `key` unavailable until `until_epoch` (a later mark never shortens an earlier one)."""
        current = dict(self.until)
        current[key] = max(until_epoch, current.get(key, until_epoch))
        return UnavailableOfferings(tuple(sorted(current.items())))

    def active(self, now: float) -> frozenset[OfferingKey]:
        """Keys still unavailable at `now`."""
        return frozenset(key for key, until in self.until if until > now)

    def prune(self, now: float) -> UnavailableOfferings:
        return UnavailableOfferings(tuple((k, u) for k, u in self.until if u > now))

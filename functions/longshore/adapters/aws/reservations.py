"""Capacity reservations from EC2 DescribeCapacityReservations (`ports.cloud.CapacityReservations`).

Theory of operation, after aws/karpenter-provider-aws `pkg/providers/capacityreservation/` (`types.go`,
`provider.go`): each `capacityReservationSelectorTerms` term is one query, always filtered on `state=active`.
A term with `id` asks for that id (`CapacityReservationIds`, no MaxResults); a term with `tags` (or
`instanceMatchCriteria`) filters on `tag:K=V` (`tag-key=K` for the value `*`), `owner-id` when `ownerID` is set,
and `instance-match-criteria`. Answers are de-duplicated by id, and those whose `EndDate` has passed, whose
zone is not one of the node class's, or whose match criteria or type Karpenter does not know are dropped.
Each query's answer (and each node class's zones) is cached for `CACHE_TTL_S` (60 s, Karpenter's reservation
cache); the room
(`AvailableInstanceCount`) of each reservation is kept apart and is decremented by `mark_launched` until the
next read from EC2 replaces it, so the passes of one warm container do not count a launch twice nor forget
one. An EC2 error is logged and the last answer (or nothing) is used: reservations are an optimisation,
never a reason to stop provisioning. The error is kept per term (and per node class for its zones) until
the next read succeeds, and `failure` reports it for the EC2NodeClass's `CapacityReservationsReady`
condition (`core.karpenter_objects`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final

from longshore.adapters.aws.retry import ClientError, error_code
from longshore.core.model import NodeClass, SelectorTerm
from longshore.core.reservations import MATCH_CRITERIA, RESERVATION_TYPES, Reservation, reservation_state

log = logging.getLogger(__name__)

CACHE_TTL_S: Final = 60.0
NOT_FOUND: Final = ("InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed")


def query(term: SelectorTerm) -> dict[str, Any]:
    """The DescribeCapacityReservations parameters of one selector term (module docstring)."""
    filters: list[dict[str, Any]] = [{"Name": "state", "Values": ["active"]}]
    if term.id:
        return {"Filters": filters, "CapacityReservationIds": [term.id]}
    if term.owner:
        filters.append({"Name": "owner-id", "Values": [term.owner]})
    for key, value in term.tags:
        if value == "*":
            filters.append({"Name": "tag-key", "Values": [key]})
        else:
            filters.append({"Name": f"tag:{key}", "Values": [value]})
    if term.instance_match_criteria:
        filters.append({"Name": "instance-match-criteria", "Values": [term.instance_match_criteria]})
    return {"Filters": filters, "MaxResults": 1000}


def _epoch(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.timestamp()
    return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def to_reservation(item: dict[str, Any], now: float) -> Reservation | None:
    """One EC2 `CapacityReservation` as a `Reservation` (None for criteria or types Karpenter refuses)."""
    criteria = str(item.get("InstanceMatchCriteria", ""))
    kind = str(item.get("ReservationType") or "default")
    if criteria not in MATCH_CRITERIA or kind not in RESERVATION_TYPES:
        log.warning(
            "ignoring capacity reservation",
            extra={
                "capacity_reservation": item.get("CapacityReservationId"),
                "criteria": criteria,
                "type": kind,
            },
        )
        return None
    end = _epoch(item.get("EndDate"))
    return Reservation(
        id=str(item["CapacityReservationId"]),
        instance_type=str(item.get("InstanceType", "")),
        zone=str(item.get("AvailabilityZone", "")),
        available=int(item.get("AvailableInstanceCount", 0)),
        total=int(item.get("TotalInstanceCount", 0)),
        owner_id=str(item.get("OwnerId", "")),
        instance_match_criteria=criteria,
        reservation_type=kind,
        end_time=end,
        interruptible=bool(item.get("Interruptible", False)),
        state=reservation_state(kind, end, now),
    )


class Ec2CapacityReservations:
    """`ports.cloud.CapacityReservations` on EC2 (see the module docstring)."""

    def __init__(self, ec2: Any, zones: Callable[[NodeClass], frozenset[str]]) -> None:
        self._ec2 = ec2
        self._zones = zones
        self._answers: dict[SelectorTerm, tuple[float, tuple[dict[str, Any], ...]]] = {}
        self._room: dict[str, int] = {}
        self._zone_answers: dict[str, tuple[float, frozenset[str]]] = {}
        self._term_errors: dict[SelectorTerm, str] = {}  # the error of each term's last failed read
        self._zone_errors: dict[str, str] = {}  # node class name -> the error of its last zone lookup

    @classmethod
    def on_subnets(cls, ec2: Any) -> Ec2CapacityReservations:
        """The provisioner's reader: each node class's zones are those of its subnets (`node_class_zones`)."""
        from longshore.adapters.aws.network import node_class_zones

        return cls(ec2, lambda node_class: node_class_zones(ec2, node_class))

    def list(self, node_class: NodeClass, now: float) -> tuple[Reservation, ...]:
        terms = node_class.capacity_reservation_selector_terms
        if not terms:
            return ()
        items: dict[str, dict[str, Any]] = {}
        for term in terms:
            for item in self._answer(term, now):
                items.setdefault(str(item["CapacityReservationId"]), item)
        try:
            zones = self._zones_of(node_class, now)
        except Exception as error:
            log.warning(
                "no zones for capacity reservations",
                extra={"node_class": node_class.name, "error": str(error)},
            )
            self._zone_errors[node_class.name] = str(error) or type(error).__name__
            return ()
        self._zone_errors.pop(node_class.name, None)
        found: list[Reservation] = []
        for rid, item in sorted(items.items()):
            reservation = to_reservation(item, now)
            if reservation is None or reservation.zone not in zones:
                continue
            if reservation.end_time is not None and reservation.end_time <= now:
                continue
            found.append(replace(reservation, available=self._room.get(rid, reservation.available)))
        return tuple(found)

    def _zones_of(self, node_class: NodeClass, now: float) -> frozenset[str]:
        """The node class's subnet zones, read again after `CACHE_TTL_S` (not a DescribeSubnets per pass)."""
        cached = self._zone_answers.get(node_class.name)
        if cached is None or now - cached[0] >= CACHE_TTL_S:
            cached = self._zone_answers[node_class.name] = (now, self._zones(node_class))
        return cached[1]

    def mark_launched(self, reservation_id: str) -> None:
        if reservation_id in self._room:
            self._room[reservation_id] = max(0, self._room[reservation_id] - 1)

    def failure(self, node_class: NodeClass) -> str:
        problems = [
            f"capacityReservationSelectorTerms[{index}]: DescribeCapacityReservations failed: {error}"
            for index, term in enumerate(node_class.capacity_reservation_selector_terms)
            if (error := self._term_errors.get(term))
        ]
        if zone_error := self._zone_errors.get(node_class.name):
            problems.append(f"the node class's subnet zones could not be read: {zone_error}")
        return "; ".join(problems)

    def _answer(self, term: SelectorTerm, now: float) -> tuple[dict[str, Any], ...]:
        cached = self._answers.get(term)
        if cached is not None and now - cached[0] < CACHE_TTL_S:
            return cached[1]
        try:
            items = self._describe(query(term))
        except ClientError as error:
            log.warning(
                "could not read capacity reservations",
                extra={"code": error_code(error), "term": repr(term)},
            )
            message = str(error.response.get("Error", {}).get("Message") or "")
            self._term_errors[term] = f"{error_code(error)}: {message}" if message else error_code(error)
            return cached[1] if cached is not None else ()
        self._term_errors.pop(term, None)
        self._answers[term] = (now, items)
        for item in items:  # a fresh read replaces what launches since the last one decremented
            self._room[str(item["CapacityReservationId"])] = int(item.get("AvailableInstanceCount", 0))
        return items

    def _describe(self, params: dict[str, Any]) -> tuple[dict[str, Any], ...]:
        found: list[dict[str, Any]] = []
        while True:
            try:
                response = self._ec2.describe_capacity_reservations(**params)
            except ClientError as error:
                if error_code(error) in NOT_FOUND:  # one id asked for, and it is gone
                    return ()
                raise
            found.extend(response.get("CapacityReservations", []))
            token = response.get("NextToken")
            if not token:
                return tuple(found)
            params = {**params, "NextToken": token}

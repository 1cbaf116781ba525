"""Capacity reservations for moto, which does not implement them (moto 5.2.5 has no DescribeCapacityReservations).

Theory of operation. `ReservationStore` holds the reservations of a simulated account and is attached to an EC2
client (or a boto3 session) with botocore event hooks, so production code calls the real API unchanged:

- **DescribeCapacityReservations** is answered from the store (`before-parameter-build` computes the answer
  from the request's ids and filters, `before-call` returns it without sending anything): `state`, `owner-id`,
  `instance-match-criteria`, `tag:K`, `tag-key` filters and `CapacityReservationIds`; an unknown id is EC2's
  `InvalidCapacityReservationId.NotFound`. A reservation is `expired` once the virtual clock passes its end.
  While `failing` holds an error code, every call is refused with it (HTTP 403), as EC2 refuses a role
  without `ec2:DescribeCapacityReservations`.
- **CreateLaunchTemplate**: a template whose data targets a reservation (`CapacityReservationSpecification`) is
  remembered by name, with its market type (`capacity-block`).
- **CreateFleet** through such templates: a reservation without room (or not active, or another type or zone
  than the override's) refuses the override with `ReservationCapacityExceeded`, in the response's `Errors`
  (HTTP 200, as EC2 does); when no override is left the call is answered without moto. moto launches nothing
  for `DefaultTargetCapacityType: capacity-block`, so that one value is rewritten to `on-demand` before moto
  sees it (the only request change). A launched instance takes one instance of room and is remembered.
- **DescribeInstances** answers are completed for those instances while their reservation is active:
  `CapacityReservationId`, `CapacityReservationSpecification` (`capacity-reservations-only`), and
  `InstanceLifecycle: capacity-block` for a block. After the reservation expires or is cancelled
  (`expire`, `cancel`), the instance runs on as on-demand and shows none of them, as on EC2.
- **TerminateInstances** gives the room back.
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from longshore_sim.aws import ACCOUNT_ID, _FakeHttpResponse

_ANSWER: Final = "longshore.reservations.answer"
_FLEET: Final = "longshore.reservations.fleet"
_NOT_FOUND: Final = "InvalidCapacityReservationId.NotFound"


@dataclass
class SimReservation:
    """One reservation of the simulated account (times in epoch seconds of the virtual clock)."""

    id: str
    instance_type: str
    zone: str
    total: int
    reservation_type: str = "default"  # "default" | "capacity-block"
    instance_match_criteria: str = "targeted"
    owner_id: str = ACCOUNT_ID
    tags: dict[str, str] = field(default_factory=dict)
    end: float | None = None
    state: str = "active"  # active | expired | cancelled
    interruptible: bool = False
    instances: set[str] = field(default_factory=set)

    @property
    def available(self) -> int:
        return max(0, self.total - len(self.instances))

    def ec2(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "CapacityReservationId": self.id,
            "OwnerId": self.owner_id,
            "InstanceType": self.instance_type,
            "InstancePlatform": "Linux/UNIX",
            "AvailabilityZone": self.zone,
            "Tenancy": "default",
            "TotalInstanceCount": self.total,
            "AvailableInstanceCount": self.available,
            "State": self.state,
            "InstanceMatchCriteria": self.instance_match_criteria,
            "EndDateType": "limited" if self.end is not None else "unlimited",
            "ReservationType": self.reservation_type,
            "Interruptible": self.interruptible,
            "Tags": [{"Key": k, "Value": v} for k, v in sorted(self.tags.items())],
        }
        if self.end is not None:
            item["EndDate"] = dt.datetime.fromtimestamp(self.end, tz=dt.UTC)
        return item


class ReservationStore:
    """The account's capacity reservations, served to boto3 through event hooks (module docstring)."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._lock = threading.Lock()
        self.reservations: dict[str, SimReservation] = {}
        self._templates: dict[str, tuple[str, bool]] = {}  # launch template name -> (reservation, block)
        self._ids = itertools.count(1)
        self.refused = 0  # overrides refused for want of room
        self.fleet_requests: list[dict[str, Any]] = []  # CreateFleet parameters as the caller sent them
        self.failing: str | None = None  # an error code every DescribeCapacityReservations answers with

    # -- the account -----------------------------------------------------------------------------------------

    def add(self, instance_type: str, zone: str, count: int, **fields: Any) -> SimReservation:
        rid = fields.pop("id", None) or f"cr-{next(self._ids):017x}"
        found = SimReservation(rid, instance_type, zone, count, **fields)
        with self._lock:
            self.reservations[rid] = found
        return found

    def expire(self, reservation_id: str, state: str = "expired") -> None:
        """The reservation ends now (`cancelled` for a cancellation): its instances run on as on-demand."""
        with self._lock:
            self.reservations[reservation_id].state = state

    def cancel(self, reservation_id: str) -> None:
        self.expire(reservation_id, "cancelled")

    def _refresh(self) -> None:
        now = self._now()
        for r in self.reservations.values():
            if r.state == "active" and r.end is not None and now >= r.end:
                r.state = "expired"

    def instance_reservation(self, instance_id: str) -> SimReservation | None:
        with self._lock:
            self._refresh()
            return next((r for r in self.reservations.values() if instance_id in r.instances), None)

    # -- wiring ----------------------------------------------------------------------------------------------

    def attach(self, target: Any) -> ReservationStore:
        events = target.meta.events if hasattr(target, "meta") else target.events
        uid = f"longshore-reservations-{id(self)}"
        events.register(
            "before-parameter-build.ec2.DescribeCapacityReservations", self._describe, unique_id=uid + "-d"
        )
        events.register_first(
            "before-call.ec2.DescribeCapacityReservations", self._answer, unique_id=uid + "-a"
        )
        events.register(
            "before-parameter-build.ec2.CreateLaunchTemplate", self._template, unique_id=uid + "-t"
        )
        events.register_first("before-parameter-build.ec2.CreateFleet", self._fleet, unique_id=uid + "-f")
        events.register_first("before-call.ec2.CreateFleet", self._answer, unique_id=uid + "-fa")
        events.register("after-call.ec2.CreateFleet", self._launched, unique_id=uid + "-fl")
        events.register("after-call.ec2.DescribeInstances", self._instances, unique_id=uid + "-i")
        events.register("after-call.ec2.TerminateInstances", self._terminated, unique_id=uid + "-x")
        return self

    def _answer(self, context: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]] | None:
        answer = context.get(_ANSWER)
        if answer is None:
            return None
        status = answer.pop("__status", 200)
        return _FakeHttpResponse(status), {**answer, "ResponseMetadata": {"HTTPStatusCode": status}}

    def _describe(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        ids = list(params.get("CapacityReservationIds") or [])
        filters = {f["Name"]: set(f.get("Values") or []) for f in params.get("Filters") or []}
        if self.failing is not None:
            message = "You are not authorized to perform this operation."
            context[_ANSWER] = {"__status": 403, "Error": {"Code": self.failing, "Message": message}}
            return
        with self._lock:
            self._refresh()
            unknown = [i for i in ids if i not in self.reservations]
            if unknown:
                message = f"The capacity reservation ID '{unknown[0]}' does not exist"
                context[_ANSWER] = {"__status": 400, "Error": {"Code": _NOT_FOUND, "Message": message}}
                return
            chosen = [
                r for r in self.reservations.values() if (not ids or r.id in ids) and _matches(r, filters)
            ]
            context[_ANSWER] = {"CapacityReservations": [r.ec2() for r in sorted(chosen, key=lambda r: r.id)]}

    def _template(self, params: dict[str, Any], **_: Any) -> None:
        data = params.get("LaunchTemplateData") or {}
        target = (data.get("CapacityReservationSpecification") or {}).get("CapacityReservationTarget") or {}
        if target.get("CapacityReservationId"):
            block = (data.get("InstanceMarketOptions") or {}).get("MarketType") == "capacity-block"
            with self._lock:
                self._templates[str(params.get("LaunchTemplateName"))] = (
                    target["CapacityReservationId"],
                    block,
                )

    def _fleet(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        spec = params.get("TargetCapacitySpecification") or {}
        with self._lock:
            self.fleet_requests.append({k: v for k, v in params.items() if k != "LaunchTemplateConfigs"})
        if spec.get("DefaultTargetCapacityType") == "capacity-block":  # moto launches nothing for it
            params["TargetCapacitySpecification"] = {**spec, "DefaultTargetCapacityType": "on-demand"}
        kept: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        with self._lock:
            self._refresh()
            for config in params.get("LaunchTemplateConfigs") or []:
                name = str(config.get("LaunchTemplateSpecification", {}).get("LaunchTemplateName"))
                target = self._templates.get(name)
                if target is None:
                    kept.append(config)
                    continue
                found = self.reservations.get(target[0])
                overrides = []
                for override in config.get("Overrides") or [{}]:
                    fits = (
                        found is not None
                        and found.state == "active"
                        and found.available > 0
                        and found.instance_type == override.get("InstanceType")
                        and found.zone == override.get("AvailabilityZone", found.zone)
                    )
                    if fits:
                        overrides.append(override)
                        continue
                    self.refused += 1
                    errors.append(
                        {
                            "LaunchTemplateAndOverrides": {
                                "LaunchTemplateSpecification": config["LaunchTemplateSpecification"],
                                "Overrides": dict(override),
                            },
                            "Lifecycle": "on-demand",
                            "ErrorCode": "ReservationCapacityExceeded",
                            "ErrorMessage": "Insufficient capacity in the capacity reservation.",
                        }
                    )
                if overrides:
                    kept.append({**config, "Overrides": overrides})
        if not errors:
            return
        if not kept:
            context[_ANSWER] = {
                "FleetId": f"fleet-cr-{next(self._ids):08x}",
                "Errors": errors,
                "Instances": [],
            }
            return
        params["LaunchTemplateConfigs"] = kept
        context[_FLEET] = errors

    def _launched(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if context.get(_FLEET) and context.get(_ANSWER) is None:
            parsed.setdefault("Errors", []).extend(context[_FLEET])
        with self._lock:
            for item in parsed.get("Instances") or []:
                spec = item.get("LaunchTemplateAndOverrides", {}).get("LaunchTemplateSpecification", {})
                target = self._templates.get(str(spec.get("LaunchTemplateName")))
                if target is not None and target[0] in self.reservations:
                    self.reservations[target[0]].instances.update(item.get("InstanceIds") or [])

    def _instances(self, parsed: dict[str, Any], **_: Any) -> None:
        with self._lock:
            self._refresh()
            active = {i: r for r in self.reservations.values() if r.state == "active" for i in r.instances}
            for group in parsed.get("Reservations") or []:
                for item in group.get("Instances") or []:
                    found = active.get(str(item.get("InstanceId")))
                    if found is None:
                        continue
                    item["CapacityReservationId"] = found.id
                    item["CapacityReservationSpecification"] = {
                        "CapacityReservationPreference": "capacity-reservations-only",
                        "CapacityReservationTarget": {"CapacityReservationId": found.id},
                    }
                    if found.reservation_type == "capacity-block":
                        item["InstanceLifecycle"] = "capacity-block"

    def _terminated(self, parsed: dict[str, Any], **_: Any) -> None:
        with self._lock:
            for item in parsed.get("TerminatingInstances") or []:
                for r in self.reservations.values():
                    r.instances.discard(str(item.get("InstanceId")))


def _matches(r: SimReservation, filters: dict[str, set[str]]) -> bool:
    for name, values in filters.items():
        if name == "state" and r.state not in values:
            return False
        if name == "owner-id" and r.owner_id not in values:
            return False
        if name == "instance-match-criteria" and r.instance_match_criteria not in values:
            return False
        if name == "tag-key" and not values & set(r.tags):
            return False
        if name.startswith("tag:") and r.tags.get(name[4:]) not in values:
            return False
    return True

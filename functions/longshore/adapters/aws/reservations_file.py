"""Capacity reservations from a file, for the offline `catalog` and `plan` commands (`--reservations FILE`).

Theory of operation: the file holds what DescribeCapacityReservations answers, as JSON or YAML: the response
(`{"CapacityReservations": [...]}`, the output of `aws ec2 describe-capacity-reservations`) or the bare list.
`load_reservation_file` validates every entry and reports every problem at once, each naming the file, the
entry (`CapacityReservations[i]`), the field and the value; fields Karpenter does not read are ignored.
`FileReservationsEc2` answers `describe_capacity_reservations` from those entries the way EC2 does for the
queries `adapters.aws.reservations.query` builds (every filter must match, any of its values; `tag:K`,
`tag-key`, `owner-id`, `state`, `instance-match-criteria`, `CapacityReservationIds`), so the commands select
reservations with the provisioner's own `Ec2CapacityReservations` (terms, active state, end dates, zones and
room) rather than a second copy of the matching rules.

Fields: `CapacityReservationId`, `InstanceType`, `AvailabilityZone` (non-empty strings) and
`AvailableInstanceCount` (an integer >= 0) are required. Optional: `TotalInstanceCount` (integer >= 0),
`OwnerId`, `InstanceMatchCriteria` (`open` | `targeted`, default `open` as for CreateCapacityReservation),
`ReservationType` (`default` | `capacity-block`, default `default`), `State` (one of EC2's states, default
`active`), `EndDate` (ISO 8601; without an offset it is UTC), `Interruptible` (boolean) and `Tags`
(`[{"Key": ..., "Value": ...}]`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from longshore.adapters.aws.answer_file import AnswerFileError, load_entries, shown
from longshore.core.reservations import MATCH_CRITERIA, RESERVATION_TYPES

STATES: Final = (
    "active",
    "expired",
    "cancelled",
    "pending",
    "failed",
    "scheduled",
    "payment-pending",
    "payment-failed",
    "assessing",
    "delayed",
    "unsupported",
)
_REQUIRED_TEXT: Final = ("CapacityReservationId", "InstanceType", "AvailabilityZone")


class ReservationFileError(AnswerFileError):
    """The file could not be read or holds invalid entries; `problems` lists each (file, field, value)."""


def load_reservation_file(path: Path) -> tuple[dict[str, Any], ...]:
    """The validated entries of `path` (module docstring), `EndDate` as an aware datetime."""
    return load_entries(
        path,
        "CapacityReservations",
        "DescribeCapacityReservations",
        "capacity reservations",
        _entry,
        ("CapacityReservationId",),
        ReservationFileError,
    )


def _entry(entry: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The entry with defaults filled in and `EndDate` parsed, and what is wrong with it."""
    wrong: list[str] = []
    for name in _REQUIRED_TEXT:
        value = entry.get(name)
        if not isinstance(value, str) or not value:
            wrong.append(f"{name}: a non-empty string is required, got {shown(value)}")
    for name, required in (("AvailableInstanceCount", True), ("TotalInstanceCount", False)):
        value = entry.get(name)
        if value is None and not required:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            wrong.append(f"{name}: an integer >= 0 is required, got {shown(value)}")
    entry.setdefault("TotalInstanceCount", entry.get("AvailableInstanceCount"))
    for name, allowed, default in (
        ("InstanceMatchCriteria", MATCH_CRITERIA, "open"),
        ("ReservationType", RESERVATION_TYPES, "default"),
        ("State", STATES, "active"),
    ):
        value = entry.setdefault(name, default)
        if value not in allowed:
            wrong.append(f"{name}: expected one of {', '.join(allowed)}, got {shown(value)}")
    owner = entry.setdefault("OwnerId", "")
    if not isinstance(owner, str):
        wrong.append(f"OwnerId: a string is required, got {shown(owner)}")
    interruptible = entry.setdefault("Interruptible", False)
    if not isinstance(interruptible, bool):
        wrong.append(f"Interruptible: true or false is required, got {shown(interruptible)}")
    tags = entry.setdefault("Tags", [])
    if not isinstance(tags, list) or not all(
        isinstance(t, Mapping) and isinstance(t.get("Key"), str) and isinstance(t.get("Value", ""), str)
        for t in tags
    ):
        wrong.append(f'Tags: a list of {{"Key": string, "Value": string}} is required, got {shown(tags)}')
    if entry.get("EndDate") is not None:
        end = _end_date(entry["EndDate"])
        if end is None:
            wrong.append(f"EndDate: an ISO 8601 date and time is required, got {shown(entry['EndDate'])}")
        entry["EndDate"] = end
    return entry, wrong


def _end_date(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        stamp = value
    elif isinstance(value, str):
        try:
            stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=dt.UTC)


def _tags(entry: Mapping[str, Any]) -> dict[str, str]:
    return {str(t["Key"]): str(t.get("Value", "")) for t in entry.get("Tags") or ()}


def _matches(entry: Mapping[str, Any], name: str, values: Sequence[str]) -> bool:
    """EC2's answer to one filter of the queries Karpenter sends."""
    if name == "state":
        return entry.get("State") in values
    if name == "owner-id":
        return entry.get("OwnerId") in values
    if name == "instance-match-criteria":
        return entry.get("InstanceMatchCriteria") in values
    if name == "tag-key":
        return any(key in _tags(entry) for key in values)
    if name.startswith("tag:"):
        return _tags(entry).get(name[4:]) in values
    raise ValueError(f"filter {name!r} is not one the capacity reservation queries use")


class FileReservationsEc2:
    """The DescribeCapacityReservations of an EC2 client, answered from the file's entries (module docstring)."""

    def __init__(self, entries: Sequence[Mapping[str, Any]]) -> None:
        self._entries = tuple(entries)

    def describe_capacity_reservations(self, **params: Any) -> dict[str, Any]:
        ids = params.get("CapacityReservationIds")
        chosen = [
            dict(entry)
            for entry in self._entries
            if (not ids or entry["CapacityReservationId"] in ids)
            and all(
                _matches(entry, str(f["Name"]), [str(v) for v in f.get("Values") or ()])
                for f in params.get("Filters") or ()
            )
        ]
        return {"CapacityReservations": chosen}

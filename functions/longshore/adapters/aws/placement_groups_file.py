"""Placement groups from a file, for the offline `plan` command (`--placement-groups FILE`).

Theory of operation: the file holds what DescribePlacementGroups answers, as JSON or YAML: the response
(`{"PlacementGroups": [...]}`, the output of `aws ec2 describe-placement-groups`) or the bare list.
`load_placement_group_file` validates every entry and reports every problem at once, each naming the file, the
entry (`PlacementGroups[i]`), the field and the value; fields Longshore does not read (`GroupArn`, `Tags`,
`SpreadLevel`, ...) are ignored. `FilePlacementGroupsEc2` answers `describe_placement_groups` from those
entries the way EC2 does for the query `adapters.aws.network.select_placement_group` sends (`GroupIds` or
`GroupNames`, then the `state`, `strategy` and `group-name` filters), so the command resolves each node
class's `placementGroupSelector` with the provisioner's own `Ec2PlacementGroups` rather than a second copy of
the rule. A name or id the file does not hold matches nothing (EC2 answers an error; both mean "no group").

Fields: `GroupName`, `GroupId` (non-empty strings, each unique in the file) and `Strategy` (`cluster` |
`partition` | `spread`) are required; `PartitionCount` is required with the `partition` strategy (an integer
1..7, EC2's range) and refused with the others; `State` is one of EC2's states (default `available`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from longshore.adapters.aws.answer_file import AnswerFileError, load_entries, shown
from longshore.core.placement_groups import PARTITION, STRATEGIES

STATES: Final = ("pending", "available", "deleting", "deleted")
MAX_PARTITIONS: Final = 7
"""EC2's limit on a partition placement group's partitions (CreatePlacementGroup `PartitionCount`)."""


class PlacementGroupFileError(AnswerFileError):
    """The file could not be read or holds invalid entries; `problems` lists each (file, field, value)."""


def load_placement_group_file(path: Path) -> tuple[dict[str, Any], ...]:
    """The validated entries of `path` (module docstring), `State` filled in."""
    return load_entries(
        path,
        "PlacementGroups",
        "DescribePlacementGroups",
        "placement groups",
        _entry,
        ("GroupId", "GroupName"),
        PlacementGroupFileError,
    )


def _entry(entry: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The entry with `State` defaulted, and what is wrong with it."""
    wrong: list[str] = []
    for name in ("GroupName", "GroupId"):
        value = entry.get(name)
        if not isinstance(value, str) or not value:
            wrong.append(f"{name}: a non-empty string is required, got {shown(value)}")
    strategy = entry.get("Strategy")
    if strategy not in STRATEGIES:
        wrong.append(f"Strategy: expected one of {', '.join(STRATEGIES)}, got {shown(strategy)}")
    state = entry.setdefault("State", "available")
    if state not in STATES:
        wrong.append(f"State: expected one of {', '.join(STATES)}, got {shown(state)}")
    count = entry.get("PartitionCount")
    if strategy == PARTITION:
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PARTITIONS:
            wrong.append(
                f"PartitionCount: an integer 1..{MAX_PARTITIONS} is required with the partition strategy, "
                f"got {shown(count)}"
            )
    elif count not in (None, 0) and strategy in STRATEGIES:
        wrong.append(
            f"PartitionCount: only a partition group has partitions ({strategy}), got {shown(count)}"
        )
    return entry, wrong


class FilePlacementGroupsEc2:
    """The DescribePlacementGroups of an EC2 client, answered from the file's entries (module docstring)."""

    _FILTERS: Final = {"state": "State", "strategy": "Strategy", "group-name": "GroupName"}

    def __init__(self, entries: Sequence[Mapping[str, Any]]) -> None:
        self._entries = tuple(entries)

    def describe_placement_groups(self, **params: Any) -> dict[str, Any]:
        ids, names = params.get("GroupIds"), params.get("GroupNames")
        chosen = []
        for entry in self._entries:
            if (ids and entry["GroupId"] not in ids) or (names and entry["GroupName"] not in names):
                continue
            if all(self._matches(entry, f) for f in params.get("Filters") or ()):
                chosen.append(dict(entry))
        return {"PlacementGroups": chosen}

    def _matches(self, entry: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
        """EC2's answer to one filter of the query `select_placement_group` sends."""
        field = self._FILTERS.get(str(item.get("Name")))
        if field is None:
            raise ValueError(f"filter {item.get('Name')!r} is not one the placement group query uses")
        return entry.get(field) in [str(v) for v in item.get("Values") or ()]

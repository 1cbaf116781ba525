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

import yaml

from longshore.core.placement_groups import PARTITION, STRATEGIES

STATES: Final = ("pending", "available", "deleting", "deleted")
MAX_PARTITIONS: Final = 7
"""EC2's limit on a partition placement group's partitions (CreatePlacementGroup `PartitionCount`)."""


class PlacementGroupFileError(ValueError):
    """The file could not be read or holds invalid entries; `problems` lists each (file, field, value)."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


def load_placement_group_file(path: Path) -> tuple[dict[str, Any], ...]:
    """The validated entries of `path` (module docstring), `State` filled in."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise PlacementGroupFileError([f"{path}: cannot read the file: {error.strerror or error}"]) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise PlacementGroupFileError([f"{path}{where}: not JSON or YAML: {problem}"]) from None
    if document is None:
        raise PlacementGroupFileError(
            [f"{path}: the file is empty (expected a DescribePlacementGroups answer)"]
        )
    entries = (
        document["PlacementGroups"]
        if isinstance(document, Mapping) and "PlacementGroups" in document
        else document
    )
    if not isinstance(entries, list):
        raise PlacementGroupFileError(
            [
                f"{path}: expected a DescribePlacementGroups answer ({{'PlacementGroups': [...]}}) "
                f"or a list of placement groups, got {_shown(document)}"
            ]
        )
    problems: list[str] = []
    found: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], int] = {}
    for index, entry in enumerate(entries):
        where = f"{path}: PlacementGroups[{index}]"
        if not isinstance(entry, Mapping):
            problems.append(f"{where}: expected a mapping of fields, got {_shown(entry)}")
            continue
        checked, wrong = _entry(dict(entry))
        problems.extend(f"{where}.{message}" for message in wrong)
        for field in ("GroupId", "GroupName"):
            value = checked.get(field)
            if isinstance(value, str) and value:
                if (field, value) in seen:
                    problems.append(
                        f"{where}.{field}: {value!r} is also PlacementGroups[{seen[field, value]}]"
                    )
                seen.setdefault((field, value), index)
        if not wrong:
            found.append(checked)
    if problems:
        raise PlacementGroupFileError(problems)
    return tuple(found)


def _shown(value: Any) -> str:
    if value is None:
        return "nothing (the field is missing or null)"
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def _entry(entry: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The entry with `State` defaulted, and what is wrong with it."""
    wrong: list[str] = []
    for name in ("GroupName", "GroupId"):
        value = entry.get(name)
        if not isinstance(value, str) or not value:
            wrong.append(f"{name}: a non-empty string is required, got {_shown(value)}")
    strategy = entry.get("Strategy")
    if strategy not in STRATEGIES:
        wrong.append(f"Strategy: expected one of {', '.join(STRATEGIES)}, got {_shown(strategy)}")
    state = entry.setdefault("State", "available")
    if state not in STATES:
        wrong.append(f"State: expected one of {', '.join(STATES)}, got {_shown(state)}")
    count = entry.get("PartitionCount")
    if strategy == PARTITION:
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PARTITIONS:
            wrong.append(
                f"PartitionCount: an integer 1..{MAX_PARTITIONS} is required with the partition strategy, "
                f"got {_shown(count)}"
            )
    elif count not in (None, 0) and strategy in STRATEGIES:
        wrong.append(
            f"PartitionCount: only a partition group has partitions ({strategy}), got {_shown(count)}"
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

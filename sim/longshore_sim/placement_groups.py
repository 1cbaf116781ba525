"""EC2 placement groups for moto, which has none: DescribePlacementGroups answered from groups made here, and
the group and partition of every instance launched into one.

Theory of operation: moto 5 implements no placement-group call and ignores `Placement.GroupId` and
`PartitionNumber`, so hooks on an EC2 client (or on a session, reaching every client it makes later) stand in:
- a `before-call` hook answers `DescribePlacementGroups` from the groups created with `create` (id `pg-` + 17
  hex digits from a counter, state `available`), honouring `GroupIds`, `GroupNames` and the `state` /
  `strategy` / `group-name` filters as EC2 does, and answering an unknown name with EC2's
  `InvalidPlacementGroup.Unknown` error;
- CreateLaunchTemplate: a template whose `Placement` names a known group is remembered by name, with its
  `PartitionNumber`;
- CreateFleet: each instance launched from such a template joins the group (`members`); in a partition group,
  the template's partition, or, without one, the partition EC2 would pick: the one with the fewest running
  members (the lowest on a tie), as EC2 spreads instances evenly across the partitions;
- DescribeInstances answers are completed for those instances: `Placement.GroupId`, `GroupName` and, in a
  partition group, `PartitionNumber` (what Longshore's lifecycle reads to label a node EC2 placed);
- TerminateInstances takes them out of their group.
The simulated world (`world.SimulatedWorld`) seeds a cluster group for every placement group its node classes
select by name, as it seeds their subnets; a scenario's `placementGroups` redefine a group's strategy
(`define`). Production code calls boto3 unchanged; this module only stands in for the part of EC2 moto lacks
(tests and simulations only).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError  # type: ignore[import-untyped]


@dataclass(frozen=True, slots=True)
class Group:
    group_id: str
    name: str
    strategy: str
    partition_count: int = 0
    state: str = "available"

    def as_ec2(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "GroupId": self.group_id,
            "GroupName": self.name,
            "Strategy": self.strategy,
            "State": self.state,
        }
        if self.partition_count:
            found["PartitionCount"] = self.partition_count
        return found


_PARAMS_KEY = "longshore.placement_groups.params"


@dataclass(frozen=True, slots=True)
class Member:
    """An instance launched into a group (`partition`: its number in a partition group, else 0)."""

    group_id: str
    partition: int = 0


class _Http:
    status_code = 200
    headers: dict[str, str] = {}  # noqa: RUF012 - read-only stand-in for botocore's response
    content = b""


class PlacementGroups:
    """The placement groups of one simulated account (see the module docstring)."""

    def __init__(self) -> None:
        self._groups: dict[str, Group] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.calls = 0
        self._templates: dict[str, tuple[str, int]] = {}  # template name -> (group id, partition or 0)
        self.members: dict[str, Member] = {}  # instance id -> its group and partition

    def create(self, name: str, strategy: str = "cluster", partition_count: int = 0) -> Group:
        """A new available group (`partition_count` for the partition strategy only)."""
        if strategy not in ("cluster", "partition", "spread"):
            raise ValueError(f"placement group strategy {strategy!r} is not cluster, partition or spread")
        with self._lock:
            group = Group(f"pg-{next(self._ids):017x}", name, strategy, partition_count)
            self._groups[group.group_id] = group
        return group

    def ensure(self, name: str, strategy: str = "cluster") -> Group:
        """The group named `name`, created (available, `strategy`) when there is none."""
        with self._lock:
            found = next((g for g in self._groups.values() if g.name == name), None)
        return found or self.create(name, strategy)

    def define(self, name: str, strategy: str, partition_count: int = 0) -> Group:
        """The group named `name` with this strategy (and partition count): created, or redefined in place
        (same id) when a group of that name exists."""
        if strategy not in ("cluster", "partition", "spread"):
            raise ValueError(f"placement group strategy {strategy!r} is not cluster, partition or spread")
        if (strategy == "partition") != (partition_count > 0):
            raise ValueError(
                f"placement group {name}: partitionCount is for the partition strategy only (1-7)"
            )
        found = self.ensure(name, strategy)
        group = Group(found.group_id, name, strategy, partition_count)
        with self._lock:
            self._groups[group.group_id] = group
        return group

    def partition_of(self, instance_id: str) -> int | None:
        """The partition the instance runs in (None: in no partition group)."""
        with self._lock:
            member = self.members.get(instance_id)
        return member.partition if member is not None and member.partition else None

    def attach(self, target: Any) -> PlacementGroups:
        """Answer DescribePlacementGroups on one EC2 client, or on every EC2 client a session makes."""
        events = target.meta.events if hasattr(target, "meta") else target.events
        uid = f"longshore-pg-{id(self)}"
        events.register_first(
            "before-parameter-build.ec2.DescribePlacementGroups", self._remember, unique_id=uid + "-p"
        )
        events.register_first("before-call.ec2.DescribePlacementGroups", self._answer, unique_id=uid + "-c")
        events.register(
            "before-parameter-build.ec2.CreateLaunchTemplate", self._template, unique_id=uid + "-t"
        )
        events.register("after-call.ec2.CreateFleet", self._launched, unique_id=uid + "-f")
        events.register("after-call.ec2.DescribeInstances", self._instances, unique_id=uid + "-i")
        events.register("after-call.ec2.TerminateInstances", self._terminated, unique_id=uid + "-x")
        return self

    def _template(self, params: Mapping[str, Any], **_: Any) -> None:
        placement = (params.get("LaunchTemplateData") or {}).get("Placement") or {}
        group_id = placement.get("GroupId")
        if group_id:
            with self._lock:
                self._templates[str(params.get("LaunchTemplateName"))] = (
                    str(group_id),
                    int(placement.get("PartitionNumber") or 0),
                )

    def _launched(self, parsed: Mapping[str, Any], **_: Any) -> None:
        with self._lock:
            for item in parsed.get("Instances") or []:
                spec = item.get("LaunchTemplateAndOverrides", {}).get("LaunchTemplateSpecification", {})
                target = self._templates.get(str(spec.get("LaunchTemplateName")))
                group = self._groups.get(target[0]) if target is not None else None
                if target is None or group is None:
                    continue
                for instance_id in item.get("InstanceIds") or []:
                    partition = 0
                    if group.strategy == "partition" and group.partition_count:
                        partition = target[1] or self._emptiest(group)
                    self.members[str(instance_id)] = Member(group.group_id, partition)

    def _emptiest(self, group: Group) -> int:
        counts = dict.fromkeys(range(1, group.partition_count + 1), 0)
        for member in self.members.values():
            if member.group_id == group.group_id and member.partition in counts:
                counts[member.partition] += 1
        return min(counts, key=lambda number: (counts[number], number))

    def _instances(self, parsed: dict[str, Any], **_: Any) -> None:
        with self._lock:
            for reservation in parsed.get("Reservations") or []:
                for item in reservation.get("Instances") or []:
                    member = self.members.get(str(item.get("InstanceId")))
                    group = self._groups.get(member.group_id) if member is not None else None
                    if member is None or group is None:
                        continue
                    placement = item.setdefault("Placement", {})
                    placement["GroupId"], placement["GroupName"] = group.group_id, group.name
                    if member.partition:
                        placement["PartitionNumber"] = member.partition

    def _terminated(self, parsed: Mapping[str, Any], **_: Any) -> None:
        with self._lock:
            for item in parsed.get("TerminatingInstances") or []:
                self.members.pop(str(item.get("InstanceId")), None)

    @staticmethod
    def _remember(params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        context[_PARAMS_KEY] = dict(params)  # before-call sees the serialized request, not the API's params

    def _answer(self, context: Mapping[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        params: Mapping[str, Any] = context.get(_PARAMS_KEY) or {}
        with self._lock:
            self.calls += 1
            groups = list(self._groups.values())
        names = params.get("GroupNames") or []
        ids = params.get("GroupIds") or []
        for name in names:
            if not any(g.name == name for g in groups):
                raise ClientError(
                    {
                        "Error": {
                            "Code": "InvalidPlacementGroup.Unknown",
                            "Message": f"The Placement Group '{name}' is unknown.",
                        }
                    },
                    "DescribePlacementGroups",
                )
        if names:
            groups = [g for g in groups if g.name in names]
        if ids:
            groups = [g for g in groups if g.group_id in ids]
        fields = {"state": "state", "strategy": "strategy", "group-name": "name"}
        for item in params.get("Filters") or []:
            attribute = fields.get(str(item.get("Name")))
            if attribute is not None:
                groups = [g for g in groups if getattr(g, attribute) in item.get("Values", [])]
        body = {
            "PlacementGroups": [g.as_ec2() for g in groups],
            "ResponseMetadata": {"HTTPStatusCode": 200},
        }
        return _Http(), body

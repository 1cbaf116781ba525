"""EC2 placement groups for moto, which has none: DescribePlacementGroups answered from groups made here.

Theory of operation: moto 5 implements no placement-group call, so a `before-call` hook on an EC2 client (or
on a session, reaching every client it makes later) answers `DescribePlacementGroups` from the groups created
with `create` (id `pg-` + 17 hex digits from a counter, state `available`), honouring `GroupIds`,
`GroupNames` and the `state` / `strategy` / `group-name` filters as EC2 does, and answering an unknown name
with EC2's `InvalidPlacementGroup.Unknown` error. The simulated world (`world.SimulatedWorld`) seeds a cluster
group for every placement group its node classes select by name, as it seeds their subnets. Production code calls boto3 unchanged; this module only stands
in for the part of EC2 moto lacks (tests and simulations only).
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

    def attach(self, target: Any) -> PlacementGroups:
        """Answer DescribePlacementGroups on one EC2 client, or on every EC2 client a session makes."""
        events = target.meta.events if hasattr(target, "meta") else target.events
        uid = f"longshore-pg-{id(self)}"
        events.register_first(
            "before-parameter-build.ec2.DescribePlacementGroups", self._remember, unique_id=uid + "-p"
        )
        events.register_first("before-call.ec2.DescribePlacementGroups", self._answer, unique_id=uid + "-c")
        return self

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

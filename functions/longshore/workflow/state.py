"""The disruption execution's state: the JSON that flows between states, and its typed view.

Theory of operation: the execution input is `DisruptionCommand.to_input()` (plus the optional knob
`drainSeconds`). Every step reads the whole state, returns the whole state, and records what it did in one
sub-object, so the execution's history shows the progress at each step and the Choice states route on a few
flat fields:

    {  ...command fields...,
       "executionName": "...",          # set by the Lambda handler from $$.Execution.Name
       "nodePool": "default",           # Validate
       "tainted": true,                 # Taint (Rollback removes the taint only if this execution added it)
       "deadline": 1700000600.0,        # Taint: forced deletion after it (null: never force)
       "giveUpAt": null,                # Taint: without a deadline, roll back after it
       "replacement": {"claimId": ..., "status": "none|launching|initialized", "polls": 0, "giveUpAt": ...},
       "drain": {"status": "pending|draining|drained|superseded|continued", "startedAt": ..., "passes": 0,
                 "segmentStartedAt": ..., "chain": 0, "continuation": null, "continuedFrom": null,
                 "waitSeconds": 10,
                 "remaining": 3, "evicted": 2, "deleted": 0, "blockedByPdb": 1, "passBlocked": 1, "summary": "..."},
       "termination": {"status": "pending|terminating|terminated", "polls": 0},
       "outcome": "disrupted" | "rolled-back" | "termination-failed" | "superseded",
       "error": {"Error": "...", "Cause": "..."}   # written by the ASL Catch before Rollback
    }
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from longshore.core.commands import CommandError, DisruptionCommand
from longshore.workflow.errors import StepInputError

ReplacementStatus = Literal["none", "launching", "initialized"]
DrainStatus = Literal["pending", "draining", "drained", "superseded", "continued"]
TerminationStatus = Literal["pending", "terminating", "terminated"]


def _number(data: Mapping[str, Any], key: str, default: float | None = None) -> float | None:
    value = data.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StepInputError(f"workflow state: field {key!r} has value {value!r}; expected a number")
    return float(value)


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise StepInputError(f"workflow state: field {key!r} has value {value!r}; expected an integer")
    return value


def _str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise StepInputError(f"workflow state: field {key!r} has value {value!r}; expected a string")
    return value


def _choice(data: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    value = data.get(key, allowed[0])
    if value not in allowed:
        raise StepInputError(f"workflow state: field {key!r} has value {value!r}; expected one of {allowed}")
    return str(value)


@dataclass(frozen=True, slots=True)
class ReplacementProgress:
    claim_id: str | None = None
    status: ReplacementStatus = "none"
    polls: int = 0
    give_up_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "claimId": self.claim_id,
            "status": self.status,
            "polls": self.polls,
            "giveUpAt": self.give_up_at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReplacementProgress:
        status: Any = _choice(data, "status", ("none", "launching", "initialized"))
        return cls(_str(data, "claimId"), status, _int(data, "polls"), _number(data, "giveUpAt"))


@dataclass(frozen=True, slots=True)
class DrainProgress:
    status: DrainStatus = "pending"
    started_at: float | None = None
    passes: int = 0
    wait_seconds: int = 10
    remaining: int = 0
    evicted: int = 0
    deleted: int = 0
    blocked_by_pdb: int = 0
    pass_blocked: int = 0
    summary: str = ""
    segment_started_at: float | None = None  # when this execution's part of the drain began
    chain: int = 0  # executions this drain was continued into so far
    continuation: str | None = None  # the next execution's name, when status is `continued`
    continued_from: str | None = None  # the execution that held the node before this one

    def to_json(self) -> dict[str, Any]:
        return {
            "segmentStartedAt": self.segment_started_at,
            "chain": self.chain,
            "continuation": self.continuation,
            "continuedFrom": self.continued_from,
            "status": self.status,
            "startedAt": self.started_at,
            "passes": self.passes,
            "waitSeconds": self.wait_seconds,
            "remaining": self.remaining,
            "evicted": self.evicted,
            "deleted": self.deleted,
            "blockedByPdb": self.blocked_by_pdb,
            "passBlocked": self.pass_blocked,
            "summary": self.summary,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DrainProgress:
        status: Any = _choice(data, "status", ("pending", "draining", "drained", "superseded", "continued"))
        return cls(
            segment_started_at=_number(data, "segmentStartedAt"),
            chain=_int(data, "chain"),
            continuation=_str(data, "continuation"),
            continued_from=_str(data, "continuedFrom"),
            status=status,
            started_at=_number(data, "startedAt"),
            passes=_int(data, "passes"),
            wait_seconds=int(_number(data, "waitSeconds", 10) or 10),
            remaining=_int(data, "remaining"),
            evicted=_int(data, "evicted"),
            deleted=_int(data, "deleted"),
            blocked_by_pdb=_int(data, "blockedByPdb"),
            pass_blocked=_int(data, "passBlocked"),
            summary=_str(data, "summary") or "",
        )


@dataclass(frozen=True, slots=True)
class TerminationProgress:
    status: TerminationStatus = "pending"
    polls: int = 0
    started_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "polls": self.polls, "startedAt": self.started_at}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TerminationProgress:
        status: Any = _choice(data, "status", ("pending", "terminating", "terminated"))
        return cls(status, _int(data, "polls"), _number(data, "startedAt"))


def _sub(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, Mapping):
        raise StepInputError(f"workflow state: field {key!r} has value {value!r}; expected an object")
    return value


@dataclass(frozen=True, slots=True)
class DisruptionState:
    command: DisruptionCommand
    execution_name: str = ""
    drain_seconds: int | None = None
    node_pool: str | None = None
    tainted: bool = False
    deadline: float | None = None
    give_up_at: float | None = None
    replacement: ReplacementProgress = field(default_factory=ReplacementProgress)
    drain: DrainProgress = field(default_factory=DrainProgress)
    termination: TerminationProgress = field(default_factory=TerminationProgress)
    outcome: str | None = None
    extra: tuple[tuple[str, Any], ...] = ()  # keys this module does not know (e.g. "error"), carried through

    @property
    def node_name(self) -> str | None:
        return self.command.node_name

    @property
    def claim_id(self) -> str | None:
        return self.command.claim_id

    def evolve(self, **changes: Any) -> DisruptionState:
        return replace(self, **changes)

    def with_command(self, **changes: Any) -> DisruptionState:
        return replace(self, command=replace(self.command, **changes))

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = dict(self.extra)
        data.update(self.command.to_input())
        data.update(
            {
                "executionName": self.execution_name,
                "drainSeconds": self.drain_seconds,
                "nodePool": self.node_pool,
                "tainted": self.tainted,
                "deadline": self.deadline,
                "giveUpAt": self.give_up_at,
                "replacement": self.replacement.to_json(),
                "drain": self.drain.to_json(),
                "termination": self.termination.to_json(),
                "outcome": self.outcome,
            }
        )
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DisruptionState:
        if not isinstance(data, Mapping):
            raise StepInputError(f"workflow state: expected a JSON object, got {type(data).__name__}")
        try:
            command = DisruptionCommand.from_input(data, where="disruption workflow input")
        except CommandError as error:
            raise StepInputError(str(error)) from error
        drain_seconds = _number(data, "drainSeconds")
        if drain_seconds is not None and drain_seconds < 0:
            raise StepInputError(
                f"workflow state: field 'drainSeconds' has value {drain_seconds!r}; expected >= 0"
            )
        tainted = data.get("tainted", False)
        if not isinstance(tainted, bool):
            raise StepInputError(
                f"workflow state: field 'tainted' has value {tainted!r}; expected true or false"
            )
        known = {*command.to_input(), *cls(command=command).to_json()}
        return cls(
            command=command,
            execution_name=_str(data, "executionName") or "",
            drain_seconds=None if drain_seconds is None else int(drain_seconds),
            node_pool=_str(data, "nodePool"),
            tainted=tainted,
            deadline=_number(data, "deadline"),
            give_up_at=_number(data, "giveUpAt"),
            replacement=ReplacementProgress.from_json(_sub(data, "replacement")),
            drain=DrainProgress.from_json(_sub(data, "drain")),
            termination=TerminationProgress.from_json(_sub(data, "termination")),
            outcome=_str(data, "outcome"),
            extra=tuple((k, v) for k, v in data.items() if k not in known),
        )

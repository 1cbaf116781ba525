"""One Step Functions execution as the simulator keeps it: identity, status, result, history, and why it waits.

Rules: an execution is RUNNING until it ends SUCCEEDED, FAILED or TIMED_OUT (`done`); `describe()` answers in
`DescribeExecution`'s shape, with `Output` only when it succeeded and `Error`/`Cause` only when it failed;
`context_object` is the `$$` a state of it reads (execution, state machine, state, entered time, retries). A
paused execution waits until an instant, or until one of its child executions ends (`Blocked.ready`).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from longshore_sim.asl import JSON


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    at: float
    type: str
    state: str = ""
    detail: str = ""


@dataclass(eq=False)
class Execution:
    """One execution: its identity, status, result and history (read these from tests and reports)."""

    name: str
    state_machine_arn: str
    input: JSON
    started_at: float
    timeout_seconds: float | None = None
    status: str = "RUNNING"  # RUNNING | SUCCEEDED | FAILED | TIMED_OUT
    output: JSON = None
    error: str | None = None
    cause: str | None = None
    stopped_at: float | None = None
    history: list[HistoryEvent] = field(default_factory=list)
    parent: Execution | None = None
    _runner: Generator[Blocked, None, JSON] | None = field(default=None, repr=False)
    _blocked: Blocked | None = field(default=None, repr=False)

    @property
    def arn(self) -> str:
        return f"{self.state_machine_arn.replace(':stateMachine:', ':execution:', 1)}:{self.name}"

    @property
    def done(self) -> bool:
        return self.status != "RUNNING"

    def describe(self) -> dict[str, Any]:
        """What `DescribeExecution` answers (the shape nested `.sync:2` tasks receive)."""
        described: dict[str, Any] = {
            "ExecutionArn": self.arn,
            "StateMachineArn": self.state_machine_arn,
            "Name": self.name,
            "Status": self.status,
            "StartDate": iso_time(self.started_at),
            "Input": self.input,
        }
        if self.stopped_at is not None:
            described["StopDate"] = iso_time(self.stopped_at)
        if self.status == "SUCCEEDED":
            described["Output"] = self.output
        if self.error is not None:
            described["Error"] = self.error
            described["Cause"] = self.cause or ""
        return described

    def context_object(self, state: str, entered: float, retries: int) -> dict[str, Any]:
        """The context object (`$$`) of the state `state` entered at `entered` after `retries` retries."""
        return {
            "Execution": {
                "Id": self.arn,
                "Name": self.name,
                "Input": self.input,
                "StartTime": iso_time(self.started_at),
            },
            "StateMachine": {
                "Id": self.state_machine_arn,
                "Name": self.state_machine_arn.rsplit(":", 1)[-1],
            },
            "State": {"Name": state, "EnteredTime": iso_time(entered), "RetryCount": retries},
        }


@dataclass(frozen=True, slots=True)
class Blocked:
    """Why a generator paused: until a time, and/or until one of some executions ends."""

    until: float | None = None
    children: tuple[Execution, ...] = ()

    def ready(self, now: float) -> bool:
        if self.until is not None and self.until <= now:
            return True
        return any(child.done for child in self.children)


def iso_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

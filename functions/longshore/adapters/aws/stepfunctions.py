"""`ports.workflow.DisruptionWorkflow` and `RotationWorkflow` on AWS Step Functions.

Theory of operation: a command's deterministic `execution_name()` is the execution name, so Step Functions
itself de-duplicates. Two answers mean "already there": `ExecutionAlreadyExists` (same name, different
input), and, for a *running* execution started with identical input, a success that returns the existing
execution. To tell the second from a real start, the adapter first asks `DescribeExecution` for the name's
ARN; only when that says `ExecutionDoesNotExist` does it start. Both cases give `StartResult(started=False)`.
(Two starters racing between the two calls may both report True; they still share one execution.)
Names stay reserved for 90 days after an execution closes. Rule: the adapter looks at the existing
execution's *status*, not only its name. RUNNING or SUCCEEDED means "already there". A disruption whose
execution closed without success (FAILED, ABORTED, TIMED_OUT: a reclaim drain that ran out of retries, an
execution stopped by hand) may be started again by a later event or planner pass: the adapter then uses the
name with an attempt suffix (`<name>-a2`, `-a3`, ... up to `MAX_ATTEMPTS`), checking each in turn, so a
reclaim of the same node is never locked out for 90 days, and a repeated start of a running retry is still
a no-op. Callers need `states:StartExecution` and `states:DescribeExecution`.
"""

from __future__ import annotations

import json
from typing import Any

from longshore.adapters.aws.retry import ClientError
from longshore.core.commands import (
    MAX_ATTEMPTS,
    RESTARTABLE_STATUSES,
    DisruptionCommand,
    RotationRequest,
    attempt_name,
)
from longshore.ports.workflow import StartResult


class StepFunctionsWorkflow:
    """Starts disruption and rotation executions; `client` is a boto3 `stepfunctions` client."""

    def __init__(
        self, client: Any, disruption_state_machine_arn: str, rotation_state_machine_arn: str | None = None
    ) -> None:
        self._client = client
        self._disruption_arn = disruption_state_machine_arn
        self._rotation_arn = rotation_state_machine_arn

    @staticmethod
    def execution_arn(state_machine_arn: str, name: str) -> str:
        """arn:<p>:states:<r>:<a>:stateMachine:<sm>  ->  arn:<p>:states:<r>:<a>:execution:<sm>:<name>"""
        return f"{state_machine_arn.replace(':stateMachine:', ':execution:', 1)}:{name}"

    def _status(self, execution_arn: str) -> str | None:
        """The execution's status, or None when no execution has this ARN."""
        try:
            described = self._client.describe_execution(executionArn=execution_arn)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ExecutionDoesNotExist":
                return None
            raise
        return str(described.get("status") or "RUNNING")

    def _start(
        self, state_machine_arn: str, base: str, payload: dict[str, Any], *, restart_failed: bool = False
    ) -> StartResult:
        name = base
        for attempt in range(1, MAX_ATTEMPTS + 1):
            name = attempt_name(base, attempt)
            existing = self.execution_arn(state_machine_arn, name)
            status = self._status(existing)
            if status is None:
                break
            if not restart_failed or status not in RESTARTABLE_STATUSES:
                return StartResult(started=False, execution_name=name, execution_arn=existing)
        else:
            return StartResult(started=False, execution_name=name)
        try:
            response = self._client.start_execution(
                stateMachineArn=state_machine_arn, name=name, input=json.dumps(payload, sort_keys=True)
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
                return StartResult(started=False, execution_name=name)
            raise
        return StartResult(started=True, execution_name=name, execution_arn=str(response["executionArn"]))

    def start(self, command: DisruptionCommand) -> StartResult:
        return self._start(
            self._disruption_arn, command.execution_name(), command.to_input(), restart_failed=True
        )

    def start_rotation(self, request: RotationRequest) -> StartResult:
        if not self._rotation_arn:
            raise ValueError(
                "StepFunctionsWorkflow: no rotation state machine ARN (LONGSHORE_ROTATION_STATE_MACHINE_ARN)"
            )
        return self._start(self._rotation_arn, request.execution_name(), request.to_input())

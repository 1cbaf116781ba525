"""`ports.workflow.DisruptionWorkflow` and `RotationWorkflow` on AWS Step Functions.

Theory of operation: a command's deterministic `execution_name()` is the execution name, so Step Functions
itself de-duplicates. Two answers mean "already there": `ExecutionAlreadyExists` (same name, different
input), and, for a *running* execution started with identical input, a success that returns the existing
execution. To tell the second from a real start, the adapter first asks `DescribeExecution` for the name's
ARN; only when that says `ExecutionDoesNotExist` does it start. Both cases give `StartResult(started=False)`.
(Two starters racing between the two calls may both report True; they still share one execution.)
Names stay reserved for 90 days after an execution closes, so the same instance is not disrupted twice for
the same reason within that time (a terminated instance never comes back; a rolled-back one is retried under
another reason or by hand). Callers need `states:StartExecution` and `states:DescribeExecution`.
"""

from __future__ import annotations

import json
from typing import Any

from longshore.adapters.aws.retry import ClientError
from longshore.core.commands import DisruptionCommand, RotationRequest
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

    def _exists(self, execution_arn: str) -> bool:
        try:
            self._client.describe_execution(executionArn=execution_arn)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ExecutionDoesNotExist":
                return False
            raise
        return True

    def _start(self, state_machine_arn: str, name: str, payload: dict[str, Any]) -> StartResult:
        existing = self.execution_arn(state_machine_arn, name)
        if self._exists(existing):
            return StartResult(started=False, execution_name=name, execution_arn=existing)
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
        return self._start(self._disruption_arn, command.execution_name(), command.to_input())

    def start_rotation(self, request: RotationRequest) -> StartResult:
        if not self._rotation_arn:
            raise ValueError(
                "StepFunctionsWorkflow: no rotation state machine ARN (LONGSHORE_ROTATION_STATE_MACHINE_ARN)"
            )
        return self._start(self._rotation_arn, request.execution_name(), request.to_input())

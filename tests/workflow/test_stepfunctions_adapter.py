"""StepFunctionsWorkflow on moto: the execution name is the idempotency key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longshore.adapters.aws.stepfunctions import StepFunctionsWorkflow
from longshore.core.commands import DisruptionCommand, RotationRequest
from longshore.workflow.definition import disruption_definition, rotation_definition
from tests.workflow.sfn_harness import ROLE_ARN, STEPS_ARN


@pytest.fixture
def sfn() -> Iterator[tuple[Any, str, str]]:
    with mock_aws():  # executions are recorded, not run
        client = boto3.client("stepfunctions", region_name="us-east-1")
        disruption = client.create_state_machine(
            name="d", definition=json.dumps(disruption_definition(STEPS_ARN)), roleArn=ROLE_ARN
        )["stateMachineArn"]
        rotation = client.create_state_machine(
            name="r", definition=json.dumps(rotation_definition(STEPS_ARN, disruption)), roleArn=ROLE_ARN
        )["stateMachineArn"]
        yield client, disruption, rotation


def test_the_same_command_starts_once(sfn: tuple[Any, str, str]) -> None:
    client, disruption, rotation = sfn
    workflow = StepFunctionsWorkflow(client, disruption, rotation)
    command = DisruptionCommand(instance_id="i-0abc", reason="drifted", node_name="n1", requested_at=10.0)

    first = workflow.start(command)
    again = workflow.start(
        DisruptionCommand(instance_id="i-0abc", reason="drifted", requested_at=10.0, urgent=True)
    )
    other_reason = workflow.start(DisruptionCommand(instance_id="i-0abc", reason="expired"))

    assert first.started and first.execution_name == "drifted-i-0abc-10" and first.execution_arn
    assert not again.started and again.execution_name == first.execution_name
    assert other_reason.started
    executions = client.list_executions(stateMachineArn=disruption)["executions"]
    assert sorted(e["name"] for e in executions) == ["drifted-i-0abc-10", "expired-i-0abc"]
    described = client.describe_execution(executionArn=first.execution_arn)
    assert json.loads(described["input"]) == command.to_input()


def test_rotation_starts_on_the_rotation_state_machine(sfn: tuple[Any, str, str]) -> None:
    client, disruption, rotation = sfn
    workflow = StepFunctionsWorkflow(client, disruption, rotation)
    request = RotationRequest(nodes=("n1", "n2"), max_unavailable=2, requested_at=1000.0)

    result = workflow.start_rotation(request)

    assert result.started and workflow.start_rotation(request).started is False
    (execution,) = client.list_executions(stateMachineArn=rotation)["executions"]
    assert (
        json.loads(client.describe_execution(executionArn=execution["executionArn"])["input"])
        == request.to_input()
    )


def test_rotation_without_its_state_machine_is_a_clear_error(sfn: tuple[Any, str, str]) -> None:
    client, disruption, _ = sfn
    with pytest.raises(ValueError, match="LONGSHORE_ROTATION_STATE_MACHINE_ARN"):
        StepFunctionsWorkflow(client, disruption).start_rotation(RotationRequest(nodes=("n1",)))


def test_a_failed_or_aborted_disruption_can_start_again_under_an_attempt_suffix(
    sfn: tuple[Any, str, str],
) -> None:
    client, disruption, rotation = sfn
    workflow = StepFunctionsWorkflow(client, disruption, rotation)
    command = DisruptionCommand(instance_id="i-0abc", reason="interruption", urgent=True, deadline_epoch=99.0)

    first = workflow.start(command)
    assert first.started and not workflow.start(command).started, "running: a repeated start is a no-op"
    client.stop_execution(executionArn=first.execution_arn, error="States.Timeout")

    second = workflow.start(command)
    assert second.started and second.execution_name == "interruption-i-0abc-a2"
    assert not workflow.start(command).started, "the second attempt runs: no third"
    names = sorted(e["name"] for e in client.list_executions(stateMachineArn=disruption)["executions"])
    assert names == ["interruption-i-0abc", "interruption-i-0abc-a2"]

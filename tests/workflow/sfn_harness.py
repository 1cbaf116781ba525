"""Run the real state machine definitions in moto's ASL interpreter, on virtual time, with the steps Lambda
dispatched in-process to `handlers.workflow_steps.handler` over the test's fakes.

Theory of operation (moto's Step Functions interpreter, `moto/stepfunctions/parser/`): `mock_aws` with `execute_state_machine` makes moto
interpret the ASL; `LambdaSimpleBackend.invoke` is replaced by a call into the handler (an exception becomes a
Lambda function error with `errorType` = its class name, as the Lambda runtime reports it); Wait states and
Retry back-offs advance the test's `VirtualClock` instead of sleeping, and the nested-execution poll interval
is shortened. One moto gap is filled: moto 5.2.5 does not map `states:startExecution.sync:2` parameters
(`StateMachineArn`, `Name`, `Input`) to boto's request shape nor the response back (LocalStack, where the
interpreter comes from, does); `_fill_sfn_integration_gap` restores that mapping, on the sfn integration only.
"""

from __future__ import annotations

import json
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.session
import pytest
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_callback,
    state_task_service_sfn,
)
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction
from moto.stepfunctions.parser.utils import camel_to_snake_case

from longshore.handlers import workflow_steps
from longshore.wiring.workflow_steps import CONTAINER as STEPS
from longshore.workflow.definition import disruption_definition, rotation_definition
from tests.workflow.fakes import World

REGION = "us-east-1"
ACCOUNT = "123456789012"
STEPS_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:longshore-workflow-steps"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/longshore-states"
MOTO_CONFIG: Any = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
REAL_TIME_BOUND_S = 60.0  # a hung interpreter fails the test instead of hanging the suite


def _operation(service: str, action: str) -> Any:
    model = botocore.session.get_session().get_service_model(service)
    for name in model.operation_names:
        if camel_to_snake_case(name) == action:
            return model.operation_model(name)
    raise KeyError(action)


def _fill_sfn_integration_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    cls = state_task_service_sfn.StateTaskServiceSfn
    original = cls._normalise_parameters

    def normalise_parameters(
        self: Any, parameters: dict[str, Any], boto_service_name: Any = None, service_action_name: Any = None
    ) -> None:
        original(self, parameters, boto_service_name, service_action_name)
        action = self._get_boto_service_action(service_action_name)
        self._to_boto_request(parameters, _operation("stepfunctions", action).input_shape)

    def normalise_response(
        self: Any, response: Any, boto_service_name: Any = None, service_action_name: Any = None
    ) -> None:
        action = self._get_boto_service_action(service_action_name)
        self._from_boto_response(response, _operation("stepfunctions", action).output_shape)

    monkeypatch.setattr(cls, "_normalise_parameters", normalise_parameters)
    monkeypatch.setattr(cls, "_normalise_response", normalise_response)


@dataclass
class StateMachines:
    client: Any
    disruption_arn: str
    rotation_arn: str
    world: World

    def run(self, arn: str, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        execution_arn = self.client.start_execution(
            stateMachineArn=arn, name=name, input=json.dumps(payload)
        )["executionArn"]
        return self.wait(execution_arn)

    def wait(self, execution_arn: str) -> dict[str, Any]:
        started = time.monotonic()
        while True:
            described: dict[str, Any] = self.client.describe_execution(executionArn=execution_arn)
            if described["status"] != "RUNNING":
                if "output" in described:
                    described["output_json"] = json.loads(described["output"])
                return described
            if time.monotonic() - started > REAL_TIME_BOUND_S:
                pytest.fail(
                    f"execution {execution_arn} still RUNNING after {REAL_TIME_BOUND_S} s of real time"
                )
            time.sleep(0.005)

    def executions(self, arn: str) -> list[dict[str, Any]]:
        return list(self.client.list_executions(stateMachineArn=arn)["executions"])


@contextmanager
def state_machines(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[StateMachines]:
    """Both state machines created in moto, executing against `world`'s fakes on its virtual clock."""

    def invoke(
        self: Any, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: Any
    ) -> bytes:
        event = json.loads(body)
        try:
            result = workflow_steps.handler(event, None)
        except Exception as error:
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)}).encode()
        return json.dumps(result).encode()

    def wait(self: Any, env: Any, wait_seconds: int) -> None:
        world.clock.advance(wait_seconds)

    monkeypatch.setattr(LambdaSimpleBackend, "invoke", invoke)
    monkeypatch.setattr(WaitFunction, "_wait_interval", wait)
    monkeypatch.setattr(retrier_decl, "time", types.SimpleNamespace(sleep=world.clock.advance))
    monkeypatch.setattr(state_task_service_callback, "_DELAY_SECONDS_SYNC_CONDITION_CHECK", 0.005)
    _fill_sfn_integration_gap(monkeypatch)
    STEPS.install(world.ports)
    try:
        with mock_aws(config=MOTO_CONFIG):
            client = boto3.client("stepfunctions", region_name=REGION)
            disruption = client.create_state_machine(
                name="longshore-disruption",
                definition=json.dumps(disruption_definition(STEPS_ARN)),
                roleArn=ROLE_ARN,
            )["stateMachineArn"]
            rotation = client.create_state_machine(
                name="longshore-rotation",
                definition=json.dumps(rotation_definition(STEPS_ARN, disruption)),
                roleArn=ROLE_ARN,
            )["stateMachineArn"]
            yield StateMachines(client, disruption, rotation, world)
    finally:
        STEPS.install(None)

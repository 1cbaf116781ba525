"""The deployed state machines: the workflow definitions, valid ASL once tokens are resolved, and their permissions."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from infra.state_machines import UnknownIntegration, integration_statements, task_states

from longshore.workflow.definition import disruption_definition, rotation_definition
from tests.infra.conftest import CDK_CLI, Synthesis, resources

pytestmark = [pytest.mark.slow, pytest.mark.cdk]

FAKE = {
    "AWS::Partition": "aws",
    "AWS::Region": "us-east-1",
    "AWS::AccountId": "123456789012",
    "AWS::URLSuffix": "amazonaws.com",
}


def _resolve(value: Any, template: dict[str, Any]) -> str:
    """An Fn::Join'ed definition string with pseudo parameters and function ARNs filled in."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        return str(value["Fn::Join"][0]).join(_resolve(part, template) for part in value["Fn::Join"][1])
    if "Ref" in value:
        return FAKE[value["Ref"]]
    if "Fn::GetAtt" in value:
        logical, attribute = value["Fn::GetAtt"]
        assert attribute == "Arn" and template["Resources"][logical]["Type"] == "AWS::Lambda::Function"
        return f"arn:aws:lambda:us-east-1:123456789012:function:{logical}"
    raise AssertionError(f"unexpected intrinsic {value}")


def _definitions(synthesis: Synthesis) -> dict[str, dict[str, Any]]:
    return {
        props["StateMachineName"]: json.loads(_resolve(props["DefinitionString"], synthesis.demo))
        for props in resources(synthesis.demo, "AWS::StepFunctions::StateMachine").values()
    }


def asl_validator() -> str:
    found = shutil.which("asl-validator") or (
        str(CDK_CLI / "asl-validator") if (CDK_CLI / "asl-validator").exists() else None
    )
    if found is None:
        pytest.fail("asl-validator not found on PATH or in .cdk-cli/node_modules/.bin: run `make tools`")
    return found


def test_deployed_definitions_are_the_workflow_packages_own(synthesis: Synthesis) -> None:
    definitions = _definitions(synthesis)
    steps_arn = next(
        f"arn:aws:lambda:us-east-1:123456789012:function:{lid}"
        for lid, p in resources(synthesis.demo, "AWS::Lambda::Function").items()
        if p["Handler"] == "longshore.handlers.workflow_steps.handler"
    )
    disruption_arn = "arn:aws:states:us-east-1:123456789012:stateMachine:longshore-demo-disruption"
    assert definitions["longshore-demo-disruption"] == disruption_definition(steps_arn)
    assert definitions["longshore-demo-rotation"] == rotation_definition(steps_arn, disruption_arn)


@pytest.mark.slow
def test_deployed_definitions_pass_asl_validator(synthesis: Synthesis, tmp_path: Path) -> None:
    command = [asl_validator()]
    for name, definition in _definitions(synthesis).items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(definition))
        command += ["--json-path", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_asl_validator_rejects_a_dangling_transition(synthesis: Synthesis, tmp_path: Path) -> None:
    broken = _definitions(synthesis)["longshore-demo-disruption"]
    broken["States"]["Taint"]["Next"] = "NoSuchState"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    result = subprocess.run(
        [asl_validator(), "--json-path", str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode != 0
    assert "NoSuchState" in result.stdout + result.stderr


# --- permission derivation, on small hand-written definitions --------------------------------------------


@pytest.fixture(scope="module")
def steps() -> tuple[cdk.Stack, lambda_.IFunction]:
    stack = cdk.Stack(cdk.App(), "Scratch", env=cdk.Environment(region="us-east-1"))
    function = lambda_.Function.from_function_arn(
        stack, "Steps", "arn:aws:lambda:us-east-1:123456789012:function:steps"
    )
    return stack, function


def _task(resource: str, **parameters: Any) -> dict[str, Any]:
    return {"Type": "Task", "Resource": resource, "Parameters": parameters, "End": True}


def test_task_states_are_found_inside_map_and_parallel() -> None:
    definition = {
        "StartAt": "A",
        "States": {
            "A": {
                "Type": "Parallel",
                "Branches": [{"StartAt": "B", "States": {"B": _task("x")}}],
                "Next": "M",
            },
            "M": {"Type": "Map", "ItemProcessor": {"StartAt": "C", "States": {"C": _task("y")}}, "End": True},
        },
    }
    assert [where for where, _ in task_states(definition)] == ["A/Branches[0]/B", "M/ItemProcessor/C"]


def test_an_unknown_integration_fails_the_synth_naming_the_state(
    steps: tuple[cdk.Stack, lambda_.IFunction],
) -> None:
    stack, function = steps
    definition = {"StartAt": "S", "States": {"S": _task("arn:aws:states:::sqs:sendMessage", QueueUrl="q")}}
    with pytest.raises(UnknownIntegration, match="state S uses 'arn:aws:states:::sqs:sendMessage'"):
        integration_statements(stack, "machine", definition, function, {})


def test_starting_a_foreign_state_machine_is_refused(steps: tuple[cdk.Stack, lambda_.IFunction]) -> None:
    stack, function = steps
    foreign = "arn:aws:states:us-east-1:123456789012:stateMachine:someone-else"
    definition = {
        "StartAt": "S",
        "States": {"S": _task("arn:aws:states:::states:startExecution.sync:2", StateMachineArn=foreign)},
    }
    with pytest.raises(UnknownIntegration, match="only this cluster's own state machines"):
        integration_statements(stack, "machine", definition, function, {"arn:mine": "mine"})


def test_invoking_another_function_is_refused(steps: tuple[cdk.Stack, lambda_.IFunction]) -> None:
    stack, function = steps
    definition = {
        "StartAt": "S",
        "States": {
            "S": _task(
                "arn:aws:states:::lambda:invoke", FunctionName="arn:aws:lambda:us-east-1:1:function:other"
            )
        },
    }
    with pytest.raises(UnknownIntegration, match="invokes"):
        integration_statements(stack, "machine", definition, function, {})


def test_sync_start_adds_execution_polling_and_the_managed_rule(
    steps: tuple[cdk.Stack, lambda_.IFunction],
) -> None:
    stack, function = steps
    mine = "arn:aws:states:us-east-1:123456789012:stateMachine:mine"
    definition = {
        "StartAt": "S",
        "States": {"S": _task("arn:aws:states:::states:startExecution.sync:2", StateMachineArn=mine)},
    }
    statements = [
        s.to_json() for s in integration_statements(stack, "machine", definition, function, {mine: "mine"})
    ]
    actions = [s["Action"] for s in statements]
    assert actions == [
        "states:StartExecution",
        ["states:DescribeExecution", "states:StopExecution"],
        ["events:PutTargets", "events:PutRule", "events:DescribeRule"],
    ]
    assert statements[0]["Resource"] == mine

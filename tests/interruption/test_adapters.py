"""The AWS-side pieces interruption handling owns: the provisioner trigger, the Step Functions start, and the
production wiring of the Lambda, against moto."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from longshore.adapters.aws.lambda_trigger import TRIGGER_SOURCE, LambdaProvisionerTrigger, TriggerError
from longshore.adapters.aws.stepfunctions import StepFunctionsWorkflow
from longshore.core.commands import DisruptionCommand
from longshore.services.interruption import InterruptionService
from longshore.wiring import interruption as interruption_wiring
from longshore.wiring.runtime import Runtime
from tests.conftest import VALID_V1_MANIFESTS

REGION = "us-east-1"


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield


def role_arn() -> str:
    iam = boto3.client("iam", region_name=REGION)
    return str(iam.create_role(RoleName="longshore", AssumeRolePolicyDocument="{}")["Role"]["Arn"])


def test_the_trigger_invokes_the_provisioner_asynchronously(aws: None) -> None:
    client = boto3.client("lambda", region_name=REGION)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("provisioner.py", "def handler(event, context):\n    return event\n")
    client.create_function(
        FunctionName="longshore-provisioner",
        Runtime="python3.11",
        Role=role_arn(),
        Handler="provisioner.handler",
        Code={"ZipFile": archive.getvalue()},
    )
    LambdaProvisionerTrigger(client, "longshore-provisioner").trigger("spot-interruption i-0123456789abcdef0")

    stubbed = boto3.client("lambda", region_name=REGION)
    with Stubber(stubbed) as stub:
        payload = json.dumps({"source": TRIGGER_SOURCE, "reason": "why"}).encode()
        stub.add_response(
            "invoke",
            {"StatusCode": 202},
            {"FunctionName": "longshore-provisioner", "InvocationType": "Event", "Payload": payload},
        )
        LambdaProvisionerTrigger(stubbed, "longshore-provisioner").trigger("why")
        stub.assert_no_pending_responses()


@pytest.mark.slow
def test_a_refused_invoke_raises_so_the_message_is_retried() -> None:
    client = boto3.client("lambda", region_name=REGION)
    with Stubber(client) as stub:
        stub.add_response("invoke", {"StatusCode": 500})
        with pytest.raises(TriggerError, match="longshore-provisioner refused the asynchronous invoke"):
            LambdaProvisionerTrigger(client, "longshore-provisioner").trigger("why")


def test_starting_the_same_disruption_twice_starts_one_execution(aws: None) -> None:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    arn = sfn.create_state_machine(
        name="longshore-disruption",
        definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
        roleArn=role_arn(),
    )["stateMachineArn"]
    workflow = StepFunctionsWorkflow(sfn, arn)  # what the handler wires (see the wiring test below)
    warning = DisruptionCommand("i-0123456789abcdef0", "interruption", urgent=True, deadline_epoch=1.0e9)
    first, again = workflow.start(warning), workflow.start(warning)
    # Step Functions answers an identical start of a running execution with the same ARN, silently; the
    # adapter tells it apart, so a duplicated warning is reported as "not started" ...
    assert first.started and not again.started and again.execution_arn == first.execution_arn
    # ... and the same name with another input (a later event for the same node) is not started either
    stopping = DisruptionCommand(
        "i-0123456789abcdef0", "interruption", urgent=True, deadline_epoch=1.0e9 + 60
    )
    later = workflow.start(stopping)
    assert (later.started, later.execution_name) == (False, "interruption-i-0123456789abcdef0")
    (execution,) = sfn.list_executions(stateMachineArn=arn)["executions"]
    described = sfn.describe_execution(executionArn=execution["executionArn"])
    assert json.loads(described["input"]) == warning.to_input()


@pytest.mark.slow
def test_the_handler_wires_production_adapters_from_the_environment(
    aws: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from longshore.config.loader import bundle_cluster

    ssm = boto3.client("ssm", region_name=REGION)
    ssm.put_parameter(
        Name="/longshore/demo/config",
        Type="String",
        Value=bundle_cluster([VALID_V1_MANIFESTS], cluster_name="demo", region=REGION),
    )
    role = role_arn()
    eks = boto3.client("eks", region_name=REGION)
    eks.create_cluster(name="demo", roleArn=role, resourcesVpcConfig={"subnetIds": []}, version="1.31")
    for variable, value in {
        "LONGSHORE_CLUSTER_NAME": "demo",
        "AWS_REGION": REGION,
        "LONGSHORE_CONFIG_PARAMETER": "/longshore/demo/config",
        "LONGSHORE_TABLE_NAME": "longshore-demo",
        "LONGSHORE_DISRUPTION_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:d",
        "LONGSHORE_PROVISIONER_FUNCTION_NAME": "longshore-provisioner",
    }.items():
        monkeypatch.setenv(variable, value)
    sfn = boto3.client("stepfunctions", region_name=REGION)
    machine = sfn.create_state_machine(
        name="d",
        definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}),
        roleArn=role,
    )["stateMachineArn"]
    assert machine == "arn:aws:states:us-east-1:123456789012:stateMachine:d"
    service = interruption_wiring.build_interruption(Runtime.from_env())
    assert isinstance(service, InterruptionService)
    # the wired workflow is the shared Step Functions adapter: one execution per command, duplicates refused
    warning = DisruptionCommand("i-0123456789abcdef0", "interruption", urgent=True, deadline_epoch=1.0e9)
    first, again = service._workflow.start(warning), service._workflow.start(warning)
    assert (first.started, again.started) == (True, False)
    [execution] = sfn.list_executions(stateMachineArn=machine)["executions"]
    assert execution["name"] == warning.execution_name()
    assert service._rebalance_policy("general") == "ignore"  # the pool exists in the bundled config

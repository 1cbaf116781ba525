"""Least privilege, asserted on the synthesised policies (the functions' role and the state machines' roles)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from infra.iam import CLUSTER_TAG

from longshore.adapters.aws import tags
from tests.infra.conftest import Synthesis, resources

pytestmark = [pytest.mark.slow, pytest.mark.cdk]

READ_ONLY = re.compile(r"^[a-z0-9-]+:(Describe|Get|List)[A-Za-z]*$")
AWS_REQUIRES_UNSCOPED = {
    # X-Ray has no resource-level permissions: tracing needs these on "*".
    "xray:PutTraceSegments": "X-Ray has no resource-level permissions",
    "xray:PutTelemetryRecords": "X-Ray has no resource-level permissions",
    # Step Functions logging to CloudWatch Logs (vended logs) requires these on "*" (AWS documentation).
    "logs:CreateLogDelivery": "vended-logs delivery for state machine logging",
    "logs:UpdateLogDelivery": "vended-logs delivery for state machine logging",
    "logs:DeleteLogDelivery": "vended-logs delivery for state machine logging",
    "logs:PutResourcePolicy": "vended-logs delivery for state machine logging",
}


def _statements(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(policy logical id, statement) for every statement of every IAM policy in the template."""
    return [
        (logical, statement)
        for logical, props in resources(template, "AWS::IAM::Policy").items()
        for statement in props["PolicyDocument"]["Statement"]
    ]


def _role_of(template: dict[str, Any], handler_prefix: str) -> set[str]:
    return {
        p["Role"]["Fn::GetAtt"][0]
        for p in resources(template, "AWS::Lambda::Function").values()
        if p["Handler"].startswith(handler_prefix)
    }


def _functions_role_policy(template: dict[str, Any], handler: str = "provisioner") -> list[dict[str, Any]]:
    """The statements of one function's own role (default: the provisioner, the widest EC2 user)."""
    (role,) = _role_of(template, f"longshore.handlers.{handler}.")
    return _role_policy(template, role)


def _role_policy(template: dict[str, Any], role: str) -> list[dict[str, Any]]:
    return [
        statement
        for props in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role} in props["Roles"]
        for statement in props["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def _resources(statement: dict[str, Any]) -> list[Any]:
    resource = statement["Resource"]
    return resource if isinstance(resource, list) else [resource]


def _text(value: Any) -> str:
    """An ARN (or an Fn::Join of one) as text with tokens shown as `<...>`."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        return "".join(_text(part) for part in value["Fn::Join"][1])
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::GetAtt" in value:
        return f"<{'.'.join(value['Fn::GetAtt'])}>"
    raise AssertionError(f"unexpected intrinsic {value}")


def _by_sid(statements: list[dict[str, Any]], sid: str) -> dict[str, Any]:
    (found,) = [s for s in statements if s.get("Sid") == sid]
    return found


@pytest.mark.parametrize("stack", ["demo", "private"])
def test_no_mutating_action_is_granted_on_star_without_a_condition(synthesis: Synthesis, stack: str) -> None:
    template = getattr(synthesis, stack)
    offending = [
        (policy, action)
        for policy, statement in _statements(template)
        if statement["Effect"] == "Allow" and "*" in _resources(statement) and not statement.get("Condition")
        for action in _actions(statement)
        if not READ_ONLY.match(action) and action not in AWS_REQUIRES_UNSCOPED
    ]
    assert offending == []
    assert not [
        s
        for _, s in _statements(template)
        if "*" in _actions(s) or any(a.endswith(":*") for a in _actions(s))
    ]


def test_terminate_and_delete_launch_template_require_this_cluster_tag(synthesis: Synthesis) -> None:
    statements = _functions_role_policy(synthesis.demo)
    granting = [
        s for s in statements if {"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"} & set(_actions(s))
    ]
    assert len(granting) == 1
    (statement,) = granting
    assert statement["Condition"] == {"StringEquals": {"aws:ResourceTag/longshore.io/cluster": "demo"}}
    assert sorted(_text(r).rsplit(":", 1)[1] for r in _resources(statement)) == [
        "instance/*",
        "launch-template/*",
    ]


def test_pass_role_names_only_the_node_role_and_only_for_ec2(synthesis: Synthesis) -> None:
    granting = [s for s in _functions_role_policy(synthesis.demo) if "iam:PassRole" in _actions(s)]
    assert len(granting) == 1
    assert [_text(r) for r in _resources(granting[0])] == [
        "arn:<AWS::Partition>:iam::<AWS::AccountId>:role/KarpenterNodeRole-demo"
    ]
    assert granting[0]["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}


def test_instance_profile_lookup_is_limited_to_the_node_role(synthesis: Synthesis) -> None:
    (statement,) = [
        s for s in _functions_role_policy(synthesis.demo) if "iam:ListInstanceProfilesForRole" in _actions(s)
    ]
    assert [_text(r) for r in _resources(statement)] == [
        "arn:<AWS::Partition>:iam::<AWS::AccountId>:role/KarpenterNodeRole-demo"
    ]


def test_pass_role_with_an_instance_profile_only_node_class_names_the_configured_role(
    synthesis: Synthesis,
) -> None:
    (statement,) = [s for s in _functions_role_policy(synthesis.private) if "iam:PassRole" in _actions(s)]
    assert [_text(r) for r in _resources(statement)] == [
        "arn:<AWS::Partition>:iam::123456789012:role/LongshoreNodes"
    ]


def test_launches_and_tags_require_the_cluster_request_tag(synthesis: Synthesis) -> None:
    statements = _functions_role_policy(synthesis.demo)
    created = _by_sid(statements, "Ec2CreateTaggedResources")
    assert set(_actions(created)) == {"ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"}
    assert created["Condition"] == {"StringEquals": {"aws:RequestTag/longshore.io/cluster": "demo"}}
    tagging = [s for s in statements if "ec2:CreateTags" in _actions(s)]
    assert len(tagging) == 1
    assert tagging[0]["Condition"]["StringEquals"] == {
        "aws:RequestTag/longshore.io/cluster": "demo",
        "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
    }
    # Launching is otherwise allowed only from existing images/subnets/... and from this cluster's templates.
    for statement in statements:
        if {"ec2:RunInstances", "ec2:CreateFleet"} & set(_actions(statement)) and statement is not created:
            kinds = {_text(r).rsplit(":", 1)[1] for r in _resources(statement)}
            if kinds == {"launch-template/*"}:
                assert statement["Condition"] == {
                    "StringEquals": {"aws:ResourceTag/longshore.io/cluster": "demo"}
                }
            else:
                assert kinds == {
                    "image/*",
                    "snapshot/*",
                    "subnet/*",
                    "security-group/*",
                    "capacity-reservation/*",
                    "placement-group/*",
                }


def test_cluster_ssm_and_workflow_permissions_name_only_our_resources(synthesis: Synthesis) -> None:
    statements = _functions_role_policy(synthesis.demo, "planner")
    (describe,) = [s for s in statements if "eks:DescribeCluster" in _actions(s)]
    assert [_text(r) for r in _resources(describe)] == [
        "arn:<AWS::Partition>:eks:us-east-1:<AWS::AccountId>:cluster/demo"
    ]
    (ssm,) = [s for s in statements if "ssm:GetParameter" in _actions(s)]
    assert {_text(r) for r in _resources(ssm)} == {
        "arn:<AWS::Partition>:ssm:us-east-1:<AWS::AccountId>:parameter/longshore/demo/config",
        "arn:<AWS::Partition>:ssm:us-east-1::parameter/aws/service/bottlerocket/*",
        "arn:<AWS::Partition>:ssm:us-east-1::parameter/aws/service/eks/*",
    }
    (start,) = [s for s in statements if "states:StartExecution" in _actions(s)]
    assert sorted(_text(r).rsplit(":", 1)[1] for r in _resources(start)) == [
        "longshore-demo-disruption",
        "longshore-demo-rotation",
    ]
    (describe_reads,) = [s for s in statements if "ec2:DescribeInstances" in _actions(s)]
    assert describe_reads["Condition"] == {"StringEquals": {"aws:RequestedRegion": "us-east-1"}}


def test_custom_ami_parameters_and_unmanaged_launch_templates_are_granted_only_when_configured(
    synthesis: Synthesis,
) -> None:
    statements = _functions_role_policy(synthesis.private)
    (ssm,) = [s for s in statements if "ssm:GetParameter" in _actions(s)]
    assert "arn:<AWS::Partition>:ssm:eu-west-1:123456789012:parameter/team/ami/latest" in [
        _text(r) for r in _resources(ssm)
    ]
    templates = _by_sid(statements, "Ec2LaunchFromOwnLaunchTemplates")
    assert "Condition" not in templates  # a user-managed template carries no Longshore tag
    assert "Condition" in _by_sid(_functions_role_policy(synthesis.demo), "Ec2LaunchFromOwnLaunchTemplates")


def test_vpc_placement_allows_interfaces_only_in_the_configured_subnets(synthesis: Synthesis) -> None:
    statements = _functions_role_policy(synthesis.private)
    create = _by_sid(statements, "LambdaVpcCreateInterfaces")
    assert sorted(_text(r).rsplit(":", 1)[1] for r in _resources(create)) == [
        "network-interface/*",
        "security-group/sg-0123456789abcdef0",
        "subnet/subnet-0aaa1111bbbb2222c",
        "subnet/subnet-0ddd3333eeee4444f",
    ]
    manage = _by_sid(statements, "LambdaVpcManageInterfaces")
    assert sorted(_text(r).rsplit(":", 1)[1] for r in manage["Condition"]["ArnEquals"]["ec2:Subnet"]) == [
        "subnet/subnet-0aaa1111bbbb2222c",
        "subnet/subnet-0ddd3333eeee4444f",
    ]
    (function,) = [
        p
        for p in resources(synthesis.private, "AWS::Lambda::Function").values()
        if p["Handler"].endswith("provisioner.handler")
    ]
    assert function["VpcConfig"] == {
        "SubnetIds": ["subnet-0aaa1111bbbb2222c", "subnet-0ddd3333eeee4444f"],
        "SecurityGroupIds": ["sg-0123456789abcdef0"],
    }
    assert "VpcConfig" not in next(iter(resources(synthesis.demo, "AWS::Lambda::Function").values()))


def test_state_machine_roles_reach_only_the_steps_function_and_the_disruption_machine(
    synthesis: Synthesis,
) -> None:
    machines = resources(synthesis.demo, "AWS::StepFunctions::StateMachine")
    policies = resources(synthesis.demo, "AWS::IAM::Policy")
    steps = {
        lid
        for lid, p in resources(synthesis.demo, "AWS::Lambda::Function").items()
        if p["Handler"].endswith("workflow_steps.handler")
    }
    for props in machines.values():
        role = props["RoleArn"]["Fn::GetAtt"][0]
        statements = [
            s
            for p in policies.values()
            if {"Ref": role} in p["Roles"]
            for s in p["PolicyDocument"]["Statement"]
        ]
        invoked = {
            _text(r).split(".")[0].strip("<")
            for s in statements
            if "lambda:InvokeFunction" in _actions(s)
            for r in _resources(s)
        }
        assert invoked == steps
        started = [
            _text(r) for s in statements if "states:StartExecution" in _actions(s) for r in _resources(s)
        ]
        if props["StateMachineName"].endswith("rotation"):
            assert started == [
                "arn:<AWS::Partition>:states:us-east-1:<AWS::AccountId>:stateMachine:longshore-demo-disruption"
            ]
        else:  # a drain longer than one execution continues in a new execution of the same machine
            assert started == [
                "arn:<AWS::Partition>:states:us-east-1:<AWS::AccountId>:stateMachine:longshore-demo-disruption"
            ]


def test_the_trigger_function_may_only_invoke_the_targets_read_its_secret_and_write_wake_leases(
    synthesis: Synthesis,
) -> None:
    template = synthesis.demo
    (role,) = _role_of(template, "longshore.handlers.trigger.")
    assert role not in _role_of(template, "longshore.handlers.provisioner.")
    statements = {
        s.get("Sid"): s for s in _role_policy(template, role) if not _actions(s)[0].startswith("logs:")
    }
    functions = {p["Handler"]: logical for logical, p in resources(template, "AWS::Lambda::Function").items()}
    assert set(statements) == {
        "TriggerProvisionerAndPlanner",
        "ReadTheWebhookSecret",
        "WriteOnlyWakeGateLeases",
    }
    invoke = statements["TriggerProvisionerAndPlanner"]
    assert sorted(r["Fn::GetAtt"][0] for r in _resources(invoke)) == sorted(
        [functions["longshore.handlers.provisioner.handler"], functions["longshore.handlers.planner.handler"]]
    )
    (secret,) = resources(template, "AWS::SecretsManager::Secret")
    assert statements["ReadTheWebhookSecret"]["Resource"] == {"Ref": secret}
    leases = statements["WriteOnlyWakeGateLeases"]
    assert sorted(_actions(leases)) == ["dynamodb:DeleteItem", "dynamodb:PutItem"]
    assert leases["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["lease#wake-*"]}}


def test_the_condition_tag_is_the_tag_the_launcher_writes() -> None:
    assert CLUSTER_TAG == tags.CLUSTER

"""The demo stack's resources and the properties that matter, matched on properties (never logical ids)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template
from infra.interruption import RULES

from longshore.config import load_cluster_text
from longshore.core import telemetry
from longshore.core.model import ClusterConfig, Origin
from tests.infra.conftest import REPO, Synthesis, function_by_handler, resources

pytestmark = [pytest.mark.slow, pytest.mark.cdk]

HANDLERS = {
    "provisioner": "longshore.handlers.provisioner.handler",
    "planner": "longshore.handlers.planner.handler",
    "interruption": "longshore.handlers.interruption.handler",
    "steps": "longshore.handlers.workflow_steps.handler",
}
CONTRACT_ENVIRONMENT = (
    "LONGSHORE_CLUSTER_NAME",
    "LONGSHORE_CONFIG_PARAMETER",
    "LONGSHORE_TABLE_NAME",
    "LONGSHORE_DISRUPTION_STATE_MACHINE_ARN",
    "LONGSHORE_ROTATION_STATE_MACHINE_ARN",
    "LONGSHORE_INTERRUPTION_QUEUE_URL",
    "LONGSHORE_PROVISIONER_FUNCTION_NAME",
)


def _ref_target(value: Any) -> str | None:
    """The logical id a `Ref`/`Fn::GetAtt` points to."""
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return str(value["Fn::GetAtt"][0])
    return None


@pytest.mark.parametrize("role", sorted(HANDLERS))
def test_each_function_runs_arm64_python311_with_tracing_and_the_contract_environment(
    synthesis: Synthesis, role: str
) -> None:
    _, props = function_by_handler(synthesis.demo, HANDLERS[role])
    assert props["Runtime"] == "python3.11"
    assert props["Architectures"] == ["arm64"]
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert props["FunctionName"] == f"longshore-demo-{role}"
    env = props["Environment"]["Variables"]
    assert set(CONTRACT_ENVIRONMENT) <= set(env)
    assert env["LONGSHORE_CLUSTER_NAME"] == "demo"
    assert env["LONGSHORE_CONFIG_PARAMETER"] == "/longshore/demo/config"
    assert env["LONGSHORE_PROVISIONER_FUNCTION_NAME"] == "longshore-demo-provisioner"
    assert env["POWERTOOLS_SERVICE_NAME"] == "longshore-demo"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == telemetry.NAMESPACE == "Longshore"
    assert env["POWERTOOLS_LOG_LEVEL"] == "INFO"
    assert "AWS_REGION" not in env  # reserved: Lambda sets it


def test_environment_points_at_the_stack_own_table_queue_and_state_machines(synthesis: Synthesis) -> None:
    _, props = function_by_handler(synthesis.demo, HANDLERS["steps"])
    env = props["Environment"]["Variables"]
    (table_id,) = resources(synthesis.demo, "AWS::DynamoDB::Table")
    queues = resources(synthesis.demo, "AWS::SQS::Queue")
    (queue_id,) = [lid for lid, p in queues.items() if p.get("QueueName") == "longshore-demo-interruption"]
    assert _ref_target(env["LONGSHORE_TABLE_NAME"]) == table_id
    assert _ref_target(env["LONGSHORE_INTERRUPTION_QUEUE_URL"]) == queue_id
    machines = {
        p["StateMachineName"] for p in resources(synthesis.demo, "AWS::StepFunctions::StateMachine").values()
    }
    for variable, name in (
        ("LONGSHORE_DISRUPTION_STATE_MACHINE_ARN", "longshore-demo-disruption"),
        ("LONGSHORE_ROTATION_STATE_MACHINE_ARN", "longshore-demo-rotation"),
    ):
        assert name in machines
        assert json.dumps(env[variable]).endswith(f':stateMachine:{name}"]]}}')


def test_only_the_provisioner_and_the_planner_are_singletons(synthesis: Synthesis) -> None:
    concurrency = {
        role: function_by_handler(synthesis.demo, handler)[1].get("ReservedConcurrentExecutions")
        for role, handler in HANDLERS.items()
    }
    assert concurrency == {"provisioner": 1, "planner": 1, "interruption": None, "steps": None}


def test_provisioner_and_planner_run_every_minute_and_drop_stale_ticks(synthesis: Synthesis) -> None:
    scheduled = {
        _ref_target(target["Arn"])
        for props in resources(synthesis.demo, "AWS::Events::Rule").values()
        if props.get("ScheduleExpression") == "rate(1 minute)"
        for target in props["Targets"]
    }
    expected = {function_by_handler(synthesis.demo, HANDLERS[role])[0] for role in ("provisioner", "planner")}
    assert scheduled == expected
    configs = resources(synthesis.demo, "AWS::Lambda::EventInvokeConfig")
    assert {p["FunctionName"]["Ref"] for p in configs.values()} == expected
    assert all(
        p["MaximumRetryAttempts"] == 0 and p["MaximumEventAgeInSeconds"] == 60 for p in configs.values()
    )


def test_interruption_queue_is_encrypted_short_lived_and_dead_lettered(demo_template: Template) -> None:
    demo_template.has_resource_properties(
        "AWS::SQS::Queue",
        {
            "QueueName": "longshore-demo-interruption",
            "MessageRetentionPeriod": 6 * 180,
            "VisibilityTimeout": 180,
            "SqsManagedSseEnabled": True,
            "RedrivePolicy": {"deadLetterTargetArn": Match.any_value(), "maxReceiveCount": 5},
        },
    )
    demo_template.has_resource_properties(
        "AWS::SQS::Queue",
        {
            "QueueName": "longshore-demo-interruption-dlq",
            "SqsManagedSseEnabled": True,
            "MessageRetentionPeriod": 1209600,
        },
    )


def test_both_queues_refuse_plain_http(synthesis: Synthesis) -> None:
    policies = resources(synthesis.demo, "AWS::SQS::QueuePolicy")
    protected: set[str | None] = set()
    for props in policies.values():
        for statement in props["PolicyDocument"]["Statement"]:
            if statement["Effect"] == "Deny" and statement.get("Condition") == {
                "Bool": {"aws:SecureTransport": "false"}
            }:
                assert statement["Action"] == "sqs:*"
                protected.update(_ref_target(queue) for queue in props["Queues"])
    assert protected == set(resources(synthesis.demo, "AWS::SQS::Queue"))


def test_eventbridge_may_send_only_as_the_five_interruption_rules(synthesis: Synthesis) -> None:
    rules = {
        lid: props
        for lid, props in resources(synthesis.demo, "AWS::Events::Rule").items()
        if "EventPattern" in props
    }
    patterns = {(p["EventPattern"]["source"][0], p["EventPattern"]["detail-type"][0]) for p in rules.values()}
    assert patterns == {
        ("aws.health", "AWS Health Event"),
        ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
        ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
        ("aws.ec2", "EC2 Instance State-change Notification"),
        ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
    }
    assert len(RULES) == 5
    state_change = next(
        p
        for p in rules.values()
        if p["EventPattern"]["detail-type"] == ["EC2 Instance State-change Notification"]
    )
    assert state_change["EventPattern"]["detail"] == {
        "state": ["stopping", "stopped", "shutting-down", "terminated"]
    }
    queue_ids = {
        lid for lid, p in resources(synthesis.demo, "AWS::SQS::Queue").items() if "RedrivePolicy" in p
    }
    for props in rules.values():
        assert [_ref_target(t["Arn"]) for t in props["Targets"]] == list(queue_ids)
    senders = [
        statement
        for props in resources(synthesis.demo, "AWS::SQS::QueuePolicy").values()
        for statement in props["PolicyDocument"]["Statement"]
        if statement["Effect"] == "Allow"
    ]
    assert {s["Principal"]["Service"] for s in senders} == {"events.amazonaws.com"}
    assert {_ref_target(s["Condition"]["ArnEquals"]["aws:SourceArn"]) for s in senders} == set(rules)


def test_interruption_function_consumes_the_queue_reporting_partial_batch_failures(
    synthesis: Synthesis,
) -> None:
    (mapping,) = resources(synthesis.demo, "AWS::Lambda::EventSourceMapping").values()
    interruption_id, props = function_by_handler(synthesis.demo, HANDLERS["interruption"])
    assert _ref_target(mapping["FunctionName"]) == interruption_id
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BatchSize"] == 10
    queue = resources(synthesis.demo, "AWS::SQS::Queue")[_ref_target(mapping["EventSourceArn"]) or ""]
    assert queue["QueueName"] == "longshore-demo-interruption"
    assert queue["VisibilityTimeout"] >= props["Timeout"]  # Lambda refuses a mapping otherwise


def test_table_has_the_contract_layout_ttl_and_point_in_time_recovery(demo_template: Template) -> None:
    demo_template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "BillingMode": "PAY_PER_REQUEST",
            "TimeToLiveSpecification": {"AttributeName": "ttl", "Enabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "by-instance",
                    "KeySchema": [{"AttributeName": "instance_id", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        },
    )
    demo_template.has_resource("AWS::DynamoDB::Table", {"DeletionPolicy": "Retain"})


def test_state_machines_are_standard_logged_and_traced(synthesis: Synthesis) -> None:
    machines = resources(synthesis.demo, "AWS::StepFunctions::StateMachine")
    log_groups = resources(synthesis.demo, "AWS::Logs::LogGroup")
    assert {p["StateMachineName"] for p in machines.values()} == {
        "longshore-demo-disruption",
        "longshore-demo-rotation",
    }
    for props in machines.values():
        assert props["StateMachineType"] == "STANDARD"
        assert props["TracingConfiguration"] == {"Enabled": True}
        assert props["LoggingConfiguration"]["Level"] == "ALL"
        (destination,) = props["LoggingConfiguration"]["Destinations"]
        group = log_groups[_ref_target(destination["CloudWatchLogsLogGroup"]["LogGroupArn"]) or ""]
        assert group["LogGroupName"] == f"/aws/vendedlogs/states/{props['StateMachineName']}"
        assert group["RetentionInDays"] == 30


def test_every_function_logs_to_its_own_group_with_retention(synthesis: Synthesis) -> None:
    log_groups = resources(synthesis.demo, "AWS::Logs::LogGroup")
    for handler in HANDLERS.values():
        _, props = function_by_handler(synthesis.demo, handler)
        group = log_groups[_ref_target(props["LoggingConfig"]["LogGroup"]) or ""]
        assert group["LogGroupName"] == f"/aws/lambda/{props['FunctionName']}"
        assert group["RetentionInDays"] == 30


def test_config_parameter_holds_the_validated_bundle_that_loads_back_to_the_same_cluster(
    synthesis: Synthesis,
) -> None:
    (parameter,) = resources(synthesis.demo, "AWS::SSM::Parameter").values()
    assert parameter["Name"] == "/longshore/demo/config"
    assert parameter["Type"] == "String"
    assert parameter["Tier"] == "Standard"
    assert parameter["Value"] == synthesis.demo_source.bundle
    loaded = load_cluster_text(parameter["Value"], "ssm:/longshore/demo/config")
    assert _without_origins(loaded) == _without_origins(synthesis.demo_source.config)


def _without_origins(config: ClusterConfig) -> ClusterConfig:
    """The config with file and line stripped (the SSM copy is a different file, with other line numbers)."""

    def bare(origin: Origin) -> Origin:
        return replace(origin, file="", line=None)

    return replace(
        config,
        node_pools=tuple(replace(p, origin=bare(p.origin)) for p in config.node_pools),
        node_classes=tuple(replace(c, origin=bare(c.origin)) for c in config.node_classes),
    )


def test_access_entries_map_each_functions_role_to_its_own_group(synthesis: Synthesis) -> None:
    entries = list(resources(synthesis.demo, "AWS::EKS::AccessEntry").values())
    assert {e["ClusterName"] for e in entries} == {"demo"} and {e["Type"] for e in entries} == {"STANDARD"}
    assert sorted(g for e in entries for g in e["KubernetesGroups"]) == [
        "longshore-interruption",
        "longshore-planner",
        "longshore-provisioner",
        "longshore-steps",
    ]
    roles = {
        _ref_target(p["Role"])
        for p in resources(synthesis.demo, "AWS::Lambda::Function").values()
        if p["Handler"] != "longshore.handlers.trigger.handler"  # it never calls the cluster
    }
    assert roles == {_ref_target(e["PrincipalArn"]) for e in entries}


def test_stack_is_region_specific_and_account_agnostic(synthesis: Synthesis) -> None:
    text = json.dumps(synthesis.demo)
    assert '"AWS::AccountId"' in text
    assert "123456789012" not in text
    assert ":states:us-east-1:" in text and ":ec2:us-east-1:" in text  # the cluster's region, from its config


def test_access_entry_can_be_left_out_for_aws_auth_clusters(synthesis: Synthesis) -> None:
    assert resources(synthesis.private, "AWS::EKS::AccessEntry") == {}


def test_a_config_over_4_kb_goes_to_the_advanced_tier(synthesis: Synthesis) -> None:
    (parameter,) = resources(synthesis.private, "AWS::SSM::Parameter").values()
    assert parameter["Tier"] == "Advanced"
    assert parameter["Name"] == "/longshore/private/config"


def test_outputs_name_the_role_and_state_machines_an_operator_needs(synthesis: Synthesis) -> None:
    assert set(synthesis.demo["Outputs"]) == {
        "ProvisionerRoleArn",
        "PlannerRoleArn",
        "InterruptionRoleArn",
        "StepsRoleArn",
        "TriggerRoleArn",
        "WebhookSecretArn",
        "AlarmTopicArn",
        "DisruptionStateMachineArn",
        "RotationStateMachineArn",
        "InterruptionQueueUrl",
        "WebhookUrl",
    }


def test_the_trigger_function_is_small_untraced_and_behind_a_public_url(synthesis: Synthesis) -> None:
    logical, props = function_by_handler(synthesis.demo, "longshore.handlers.trigger.handler")
    assert props["FunctionName"] == "longshore-demo-trigger"
    assert props["Architectures"] == ["arm64"] and props["Runtime"] == "python3.11"
    assert props["MemorySize"] == 256 and props["Timeout"] == 5
    assert props["ReservedConcurrentExecutions"] == 2  # bounds a flood's cost (bench/trigger_flood.py)
    assert props.get("TracingConfig", {"Mode": "PassThrough"}) == {"Mode": "PassThrough"}
    assert (
        props["LoggingConfig"]["LogFormat"] == "JSON" and props["LoggingConfig"]["SystemLogLevel"] == "WARN"
    )
    env = props["Environment"]["Variables"]
    (secret,) = resources(synthesis.demo, "AWS::SecretsManager::Secret")
    assert env["LONGSHORE_WEBHOOK_SECRET_ARN"] == {"Ref": secret}
    generated = resources(synthesis.demo, "AWS::SecretsManager::Secret")[secret]["GenerateSecretString"]
    assert generated["PasswordLength"] >= 32 and generated["ExcludePunctuation"] is True
    assert env["LONGSHORE_PROVISIONER_FUNCTION_NAME"] == "longshore-demo-provisioner"
    assert env["LONGSHORE_PLANNER_FUNCTION_NAME"] == "longshore-demo-planner"
    (url,) = resources(synthesis.demo, "AWS::Lambda::Url").values()
    assert url["AuthType"] == "NONE" and _ref_target(url["TargetFunctionArn"]) == logical
    assert _ref_target(synthesis.demo["Outputs"]["WebhookUrl"]["Value"]) == next(
        iter(resources(synthesis.demo, "AWS::Lambda::Url"))
    )


def test_the_webhook_manifest_sends_what_the_trigger_decides_on_and_never_blocks() -> None:
    import yaml

    from longshore.core.triggers import admission_targets

    manifest = yaml.safe_load((REPO / "deploy" / "webhook.yaml").read_text())
    assert manifest["kind"] == "ValidatingWebhookConfiguration"
    (webhook,) = manifest["webhooks"]
    assert webhook["failurePolicy"] == "Ignore" and webhook["timeoutSeconds"] <= 5
    assert webhook["sideEffects"] == "NoneOnDryRun" and webhook["admissionReviewVersions"] == ["v1"]
    assert webhook["clientConfig"] == {"url": "${LONGSHORE_WEBHOOK_URL}"}
    (rule,) = webhook["rules"]
    assert rule["resources"] == ["pods"] and rule["apiGroups"] == [""]
    unbound = {"metadata": {}, "spec": {}}
    bound = {"metadata": {}, "spec": {"nodeName": "n"}}
    decided = {op for op in ("CREATE", "UPDATE", "DELETE") if admission_targets(op, "Pod", unbound, bound)}
    assert set(rule["operations"]) == decided == {"CREATE", "DELETE"}


@pytest.mark.parametrize(("stack", "memory"), [("demo", 1024), ("private", 1769)])
def test_the_functions_that_read_the_whole_cluster_take_function_memory_mb(
    synthesis: Synthesis, stack: str, memory: int
) -> None:
    """`functionMemoryMb` (default 1024; the private stack's settings give 1769) sizes the provisioner, the
    planner and the steps function; the interruption handler keeps 512 MB."""
    template = getattr(synthesis, stack)
    for role in ("provisioner", "planner", "steps"):
        _, props = function_by_handler(template, HANDLERS[role])
        assert props["MemorySize"] == memory, role
    _, interruption = function_by_handler(template, HANDLERS["interruption"])
    assert interruption["MemorySize"] == 512

"""Deployment settings from CDK context: every bad value is refused naming the key and the value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from infra.settings import (
    FUNCTION_MEMORY_MB,
    LOG_RETENTION_DAYS,
    DeploymentSettings,
    SettingsError,
    VpcPlacement,
)

from infra import naming


def settings(**context: object) -> DeploymentSettings:
    return DeploymentSettings.from_context(context.get)


def test_defaults_are_account_agnostic_without_vpc_with_access_entry() -> None:
    assert settings() == DeploymentSettings(account=None, vpc=None, access_entry=True, log_retention_days=30)


def test_all_values_are_read() -> None:
    read = settings(
        account="123456789012",
        subnetIds="subnet-0aaa1111bbbb2222c, subnet-0ddd3333eeee4444f",
        securityGroupIds=["sg-0123456789abcdef0"],
        nodeRole="KarpenterNodeRole-demo",
        alarmTopicArn="arn:aws:sns:us-east-1:123456789012:oncall",
        accessEntry="false",
        dashboard="false",
        logRetentionDays="90",
        functionMemoryMb=1769,
    )
    assert read == DeploymentSettings(
        account="123456789012",
        vpc=VpcPlacement(("subnet-0aaa1111bbbb2222c", "subnet-0ddd3333eeee4444f"), ("sg-0123456789abcdef0",)),
        node_role="KarpenterNodeRole-demo",
        alarm_topic_arn="arn:aws:sns:us-east-1:123456789012:oncall",
        access_entry=False,
        dashboard=False,
        log_retention_days=90,
        function_memory_mb=1769,
    )


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"account": "12345"}, "context 'account': '12345' is not a 12-digit AWS account id"),
        (
            {"subnetIds": "subnet-0aaa1111bbbb2222c,vpc-1", "securityGroupIds": "sg-0123456789abcdef0"},
            "'subnetIds': 'vpc-1' is not a subnet id",
        ),
        ({"subnetIds": "subnet-0aaa1111bbbb2222c"}, "'subnetIds' and 'securityGroupIds' go together"),
        ({"securityGroupIds": "sg-0123456789abcdef0"}, "'subnetIds' and 'securityGroupIds' go together"),
        ({"nodeRole": "not a role"}, "context 'nodeRole': 'not a role' is not an IAM role name"),
        ({"alarmTopicArn": "oncall"}, "context 'alarmTopicArn': 'oncall' is not an SNS topic ARN"),
        ({"accessEntry": "maybe"}, "context 'accessEntry': 'maybe' must be true or false"),
        ({"dashboard": "no"}, "context 'dashboard': 'no' must be true or false"),
        (
            {"logRetentionDays": "10"},
            "context 'logRetentionDays': '10' is not one of CloudWatch's retention periods",
        ),
        (
            {"functionMemoryMb": "512"},
            "context 'functionMemoryMb': '512' is not a whole number of MB from 1024",
        ),
        ({"functionMemoryMb": 10241}, "context 'functionMemoryMb': 10241 is not a whole number of MB"),
        ({"functionMemoryMb": "2GB"}, "context 'functionMemoryMb': '2GB' is not a whole number of MB"),
        ({"functionMemoryMb": 1769.5}, "context 'functionMemoryMb': 1769.5 is not a whole number of MB"),
        ({"functionMemoryMb": True}, "context 'functionMemoryMb': True is not a whole number of MB"),
    ],
)
def test_bad_values_name_the_key_and_the_value(context: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")):
        settings(**context)


@pytest.mark.cdk
def test_retention_days_pair_with_cloudwatch_enum_in_order() -> None:
    from aws_cdk import aws_logs as logs
    from infra.cluster import retention

    assert retention(30) == logs.RetentionDays.ONE_MONTH
    assert retention(7) == logs.RetentionDays.ONE_WEEK
    assert retention(3653) == logs.RetentionDays.TEN_YEARS
    assert len(LOG_RETENTION_DAYS) == len(list(logs.RetentionDays)) - 1  # all but INFINITE


def test_physical_names_stay_within_limits_and_apart() -> None:
    long_a = "a" * 99 + "x"
    long_b = "a" * 99 + "y"
    names = {naming.function_name(cluster, "interruption") for cluster in (long_a, long_b)}
    assert len(names) == 2
    assert all(len(name) <= naming.LAMBDA_NAME_LIMIT for name in names)
    assert naming.function_name("demo", "provisioner") == "longshore-demo-provisioner"
    assert len(naming.state_machine_name(long_a, "disruption")) <= naming.STATE_MACHINE_NAME_LIMIT


def test_alarm_emails_are_read_and_checked() -> None:
    assert settings(alarmEmail="a@example.com, b@ops.example.org").alarm_emails == (
        "a@example.com",
        "b@ops.example.org",
    )
    with pytest.raises(
        SettingsError, match="context 'alarmEmail': 'not-an-address' is not an e-mail address"
    ):
        settings(alarmEmail="not-an-address")
    with pytest.raises(SettingsError, match="subscribe the addresses to that topic instead"):
        settings(alarmEmail="a@example.com", alarmTopicArn="arn:aws:sns:us-east-1:123456789012:oncall")


def test_cdk_json_states_the_default_function_memory() -> None:
    context = json.loads((Path(__file__).resolve().parents[2] / "cdk.json").read_text())["context"]
    assert context["functionMemoryMb"] == FUNCTION_MEMORY_MB[0] == settings().function_memory_mb

"""Lambda runtime settings come from the environment, and a missing variable is named."""

from __future__ import annotations

import pytest

from longshore.config.settings import RuntimeSettings, SettingsError

FULL = {
    "LONGSHORE_CLUSTER_NAME": "demo",
    "AWS_REGION": "us-east-1",
    "LONGSHORE_CONFIG_PARAMETER": "/longshore/demo/config",
    "LONGSHORE_TABLE_NAME": "longshore-demo",
    "LONGSHORE_DISRUPTION_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:disruption",
    "LONGSHORE_ROTATION_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:rotation",
    "LONGSHORE_INTERRUPTION_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/q",
    "LONGSHORE_PROVISIONER_FUNCTION_NAME": "longshore-provisioner",
}


def test_reads_every_variable() -> None:
    settings = RuntimeSettings.from_env(FULL)
    assert settings.cluster_name == "demo" and settings.table_name == "longshore-demo"
    assert settings.require("interruption_queue_url") == FULL["LONGSHORE_INTERRUPTION_QUEUE_URL"]
    assert settings.provisioner_function_name == "longshore-provisioner"


def test_missing_required_variables_are_named() -> None:
    env = {k: v for k, v in FULL.items() if k not in ("LONGSHORE_TABLE_NAME", "LONGSHORE_CONFIG_PARAMETER")}
    with pytest.raises(
        SettingsError, match="missing environment variables: LONGSHORE_CONFIG_PARAMETER, LONGSHORE_TABLE_NAME"
    ):
        RuntimeSettings.from_env(env)


def test_region_falls_back_to_aws_default_region() -> None:
    env = {k: v for k, v in FULL.items() if k != "AWS_REGION"} | {"AWS_DEFAULT_REGION": "eu-west-1"}
    assert RuntimeSettings.from_env(env).region == "eu-west-1"


def test_optional_variable_required_where_used() -> None:
    env = {k: v for k, v in FULL.items() if k != "LONGSHORE_DISRUPTION_STATE_MACHINE_ARN"}
    settings = RuntimeSettings.from_env(env)
    assert settings.disruption_state_machine_arn is None
    with pytest.raises(SettingsError, match="LONGSHORE_DISRUPTION_STATE_MACHINE_ARN is not set"):
        settings.require("disruption_state_machine_arn")


def test_reads_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in FULL.items():
        monkeypatch.setenv(name, value)
    assert RuntimeSettings.from_env() == RuntimeSettings.from_env(FULL)

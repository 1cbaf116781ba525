"""Runtime settings of the Lambda functions, read once from their environment.

Theory of operation: the CDK stack sets the environment variables listed in docs/contracts.md on each function;
`RuntimeSettings.from_env()` reads them into one frozen pydantic model at cold start, so a handler is wired from
explicit values and tests can build settings without touching `os.environ` (pass `environ=`). The variables
every function needs are required and a missing one is reported by its variable name; the ones only some
functions use (state machine ARNs, queue URL, provisioner and planner functions) are optional here and checked where used
with `settings.require("disruption_state_machine_arn")`, which names the variable that is missing.
`LONGSHORE_MODE` is `active` (the default) or `shadow` (`cdk deploy -c mode=shadow`): in shadow mode the wiring
(`wiring.runtime.Runtime`) puts the `adapters.shadow` stand-ins in front of every port that writes to EC2 or
Kubernetes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict


class SettingsError(ValueError):
    """The Lambda environment lacks a variable or holds a bad value."""


class RuntimeSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    cluster_name: str
    region: str
    config_parameter: str
    table_name: str
    disruption_state_machine_arn: str | None = None
    rotation_state_machine_arn: str | None = None
    interruption_queue_url: str | None = None
    provisioner_function_name: str | None = None
    planner_function_name: str | None = None
    webhook_secret_arn: str | None = None
    mode: Literal["active", "shadow"] = (
        "active"  # shadow: decide, log and measure; write nothing (`-c mode=shadow`)
    )

    #: field -> environment variable (AWS_REGION falls back to AWS_DEFAULT_REGION)
    ENVIRONMENT: ClassVar[dict[str, str]] = {
        "cluster_name": "LONGSHORE_CLUSTER_NAME",
        "region": "AWS_REGION",
        "config_parameter": "LONGSHORE_CONFIG_PARAMETER",
        "table_name": "LONGSHORE_TABLE_NAME",
        "disruption_state_machine_arn": "LONGSHORE_DISRUPTION_STATE_MACHINE_ARN",
        "rotation_state_machine_arn": "LONGSHORE_ROTATION_STATE_MACHINE_ARN",
        "interruption_queue_url": "LONGSHORE_INTERRUPTION_QUEUE_URL",
        "provisioner_function_name": "LONGSHORE_PROVISIONER_FUNCTION_NAME",
        "planner_function_name": "LONGSHORE_PLANNER_FUNCTION_NAME",
        "webhook_secret_arn": "LONGSHORE_WEBHOOK_SECRET_ARN",
        "mode": "LONGSHORE_MODE",
    }
    MODES: ClassVar[tuple[str, ...]] = ("active", "shadow")
    REQUIRED: ClassVar[tuple[str, ...]] = ("cluster_name", "region", "config_parameter", "table_name")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RuntimeSettings:
        """Read the settings from `environ` (default: the process environment)."""
        env = os.environ if environ is None else environ
        values: dict[str, str] = {}
        for name, variable in cls.ENVIRONMENT.items():
            value = env.get(variable, "").strip()
            if not value and name == "region":
                value = env.get("AWS_DEFAULT_REGION", "").strip()
            if value:
                values[name] = value
        missing = [cls.ENVIRONMENT[name] for name in cls.REQUIRED if name not in values]
        if missing:
            raise SettingsError(
                f"missing environment variable{'s' if len(missing) > 1 else ''}: {', '.join(missing)} "
                "(the Longshore stack sets them on every function; see docs/contracts.md)"
            )
        mode = values.get("mode")
        if mode is not None and mode not in cls.MODES:
            raise SettingsError(
                f"environment variable LONGSHORE_MODE has value {mode!r}; expected one of {', '.join(cls.MODES)}"
            )
        return cls.model_validate(values)

    @property
    def shadow(self) -> bool:
        """Shadow mode: every decision is made, logged and measured, and nothing is written to EC2 or Kubernetes."""
        return self.mode == "shadow"

    def require(self, name: str) -> str:
        """The value of optional setting `name`, or a `SettingsError` naming its environment variable."""
        if name not in self.ENVIRONMENT:
            raise KeyError(name)
        value = getattr(self, name)
        if not value:
            raise SettingsError(
                f"environment variable {self.ENVIRONMENT[name]} is not set, but this function needs it"
            )
        return str(value)

"""`cdk deploy -c mode=shadow`: every Longshore function runs in shadow mode (`LONGSHORE_MODE=shadow`).

The wiring reads that variable (`config.settings.RuntimeSettings.mode`) and puts `adapters.shadow` in front of
every port that writes to EC2 or Kubernetes; `tests/shadow/test_shadow_wiring.py` checks that side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from infra.config_source import load_cluster_source
from infra.settings import DeploymentSettings, SettingsError
from infra.stack import LongshoreStack

from longshore.config.settings import RuntimeSettings
from tests.infra.conftest import Synthesis, resources

pytestmark = [pytest.mark.slow, pytest.mark.cdk]

HANDLERS = {
    f"longshore.handlers.{name}.handler"
    for name in ("provisioner", "planner", "interruption", "workflow_steps", "trigger")
}


def _longshore_functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = {
        props["Handler"]: props
        for props in resources(template, "AWS::Lambda::Function").values()
        if str(props.get("Handler", "")).startswith("longshore.handlers.")
    }
    assert set(found) == HANDLERS, "every Longshore function is in the template"
    return found


@pytest.mark.slow
def test_mode_shadow_sets_shadow_mode_on_every_function(tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path / "cdk.out"), context={"aws:cdk:bundling-stacks": [], "mode": "shadow"})
    settings = DeploymentSettings.from_context(app.node.try_get_context)
    assert settings.shadow
    stack = LongshoreStack(app, load_cluster_source("demo"), settings)
    template = app.synth().get_stack_artifact(stack.artifact_id).template

    for handler, props in _longshore_functions(template).items():
        env = props["Environment"]["Variables"]
        assert env["LONGSHORE_MODE"] == "shadow", handler
        runtime = RuntimeSettings.from_env(
            {k: v if isinstance(v, str) else "token" for k, v in env.items()} | {"AWS_REGION": "us-east-1"}
        )
        assert runtime.shadow, f"{handler} reads shadow mode from its environment"


def test_the_default_deployment_is_active_on_every_function(synthesis: Synthesis) -> None:
    for handler, props in _longshore_functions(synthesis.demo).items():
        assert props["Environment"]["Variables"]["LONGSHORE_MODE"] == "active", handler


def test_an_unknown_mode_is_refused_naming_the_key_and_the_value() -> None:
    with pytest.raises(SettingsError, match=r"context 'mode': 'dry' is not one of active, shadow"):
        DeploymentSettings.from_context({"mode": "dry"}.get)
    assert DeploymentSettings.from_context({}.get).mode == "active"

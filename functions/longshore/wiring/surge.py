"""The Step Functions workflow adapter plus surge starts: a disruption whose replacement is already launched
carries that claim in its input, which the workflow's LaunchReplacement step adopts instead of launching
another (`services.disruption.SurgeWorkflow`). It lives in the wiring because its input names the workflow's
own state (`workflow.state.ReplacementProgress`), which the adapters may not import."""

from __future__ import annotations

from typing import Any

from longshore.adapters.aws.stepfunctions import StepFunctionsWorkflow
from longshore.core.commands import DisruptionCommand
from longshore.ports.workflow import StartResult
from longshore.workflow.state import ReplacementProgress


class StepFunctionsSurgeWorkflow(StepFunctionsWorkflow):
    """The shared Step Functions adapter, plus starting a disruption whose replacement is already launched."""

    def __init__(
        self, client: Any, disruption_state_machine_arn: str, rotation_state_machine_arn: str | None = None
    ):
        super().__init__(client, disruption_state_machine_arn, rotation_state_machine_arn)
        self._disruption_machine = disruption_state_machine_arn

    def start_surge(
        self, command: DisruptionCommand, replacement_claim_id: str, give_up_at: float | None
    ) -> StartResult:
        payload = {
            **command.to_input(),
            "replacement": ReplacementProgress(replacement_claim_id, "launching", 0, give_up_at).to_json(),
        }
        return self._start(self._disruption_machine, command.execution_name(), payload)

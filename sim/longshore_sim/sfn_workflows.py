"""The `DisruptionWorkflow` and `RotationWorkflow` ports on the Step Functions simulator.

Rules: the documents run are `workflow.definition`'s own, the ones CDK deploys; a disruption start behaves as
the Step Functions adapter's (a failed, aborted or timed-out execution is started again under `attempt_name`,
a running or succeeded one makes the start a no-op); Task steps run `workflow_steps.process_step` in process.
"""

from __future__ import annotations

from typing import Any

from longshore.core.commands import (
    MAX_ATTEMPTS,
    RESTARTABLE_STATUSES,
    DisruptionCommand,
    RotationRequest,
    attempt_name,
)
from longshore.ports.metrics import MetricsSink
from longshore.ports.workflow import StartResult
from longshore_sim.asl import JSON
from longshore_sim.sfn_execution import Execution
from longshore_sim.stepfunctions import (
    DEFAULT_DISRUPTION_ARN,
    DEFAULT_ROTATION_ARN,
    DEFAULT_STEPS_ARN,
    StepFunctionsSimulator,
    TaskInvoker,
)

# -- the workflow ports on the simulator --------------------------------------------------------------------


def steps_invoker(ports: Any, sink: MetricsSink | None = None) -> TaskInvoker:
    """A Task invoker running `workflow_steps.process_step` in process against `ports` (`StepPorts`)."""
    from longshore.adapters.memory_metrics import MemoryMetricsSink
    from longshore.wiring.workflow_steps import process_step

    metrics: MetricsSink = sink if sink is not None else MemoryMetricsSink()

    def invoke(resource: str, payload: JSON) -> JSON:
        return process_step(payload, ports, metrics)

    return invoke


class SimulatedWorkflows:
    """`DisruptionWorkflow` and `RotationWorkflow` on the simulator, running `workflow.definition`'s documents.

    `start_surge` starts a disruption whose replacement was already launched (the planner launches planned
    replacements itself): the execution input carries the replacement claim, so the workflow waits for it to
    be initialized before tainting.
    """

    def __init__(
        self,
        simulator: StepFunctionsSimulator,
        *,
        steps_arn: str = DEFAULT_STEPS_ARN,
        disruption_arn: str = DEFAULT_DISRUPTION_ARN,
        rotation_arn: str = DEFAULT_ROTATION_ARN,
    ) -> None:
        from longshore.workflow.definition import disruption_definition, rotation_definition

        self.simulator = simulator
        self.disruption_arn = disruption_arn
        self.rotation_arn = rotation_arn
        simulator.register(disruption_arn, disruption_definition(steps_arn))
        simulator.register(rotation_arn, rotation_definition(steps_arn, disruption_arn))

    def _start(self, arn: str, name: str, payload: JSON) -> StartResult:
        started = self.simulator.start_execution(name, None, payload, state_machine_arn=arn)
        return StartResult(started, name, self.simulator.execution(name, arn).arn)

    def start(self, command: DisruptionCommand) -> StartResult:
        """As the Step Functions adapter: a failed, aborted or timed-out execution is started again under
        `attempt_name`; a running or succeeded one makes the start a no-op."""
        base = command.execution_name()
        name = base
        for attempt in range(1, MAX_ATTEMPTS + 1):
            name = attempt_name(base, attempt)
            known = {e.name: e for e in self.simulator.executions(self.disruption_arn)}.get(name)
            if known is None or known.status not in RESTARTABLE_STATUSES:
                break
        return self._start(self.disruption_arn, name, command.to_input())

    def start_surge(
        self, command: DisruptionCommand, replacement_claim_id: str, give_up_at: float | None
    ) -> StartResult:
        from longshore.workflow.state import ReplacementProgress

        progress = ReplacementProgress(replacement_claim_id, "launching", 0, give_up_at)
        payload = {**command.to_input(), "replacement": progress.to_json()}
        return self._start(self.disruption_arn, command.execution_name(), payload)

    def start_rotation(self, request: RotationRequest) -> StartResult:
        return self._start(self.rotation_arn, request.execution_name(), request.to_input())

    def disruptions(self) -> tuple[Execution, ...]:
        return self.simulator.executions(self.disruption_arn)

    def rotations(self) -> tuple[Execution, ...]:
        return self.simulator.executions(self.rotation_arn)

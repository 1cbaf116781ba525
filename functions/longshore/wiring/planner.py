"""The disruption planner function, built from the production adapters (`build_planner`), and its container.

The planner of a container holds the cluster config it was built with (rebuilt when the config changes), the
claim table, the EKS API through the kubernetes client, the disruption state machine (with surge starts: a
disruption whose replacement the planner already launched carries that claim, which the workflow's
LaunchReplacement step adopts instead of launching another), the claim launcher for replacements and the AMI
resolver for drift. `process` is one invocation's loop: a pass, then another whenever `next_pass_at` asks for
one within the remaining time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from longshore.adapters.aws.stepfunctions import StepFunctionsWorkflow
from longshore.core.commands import DisruptionCommand
from longshore.ports.workflow import StartResult
from longshore.services.disruption import DisruptionService, PassReport
from longshore.services.disruption_invocation import InvocationReport, run_invocation
from longshore.wiring.container import Container
from longshore.wiring.observability import logger, metrics
from longshore.wiring.runtime import Runtime
from longshore.workflow.state import ReplacementProgress

DEADLINE_MARGIN_S = 15.0


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


def build_planner(wiring: Runtime) -> DisruptionService:
    """The planner of one container, on the production adapters (names in docs/contracts.md)."""
    from longshore.adapters.aws.amis import AmiResolver, ResolvedImages
    from longshore.adapters.powertools_metrics import PowertoolsMetricsSink
    from longshore.services.disruption import PlannerPorts

    settings, config, clock = wiring.settings, wiring.config, wiring.clock
    ec2, ssm = wiring.client("ec2"), wiring.client("ssm")
    ports = PlannerPorts(
        cluster=wiring.kube_cluster("longshore-disruption", cached=True),
        claims=wiring.claims,
        offerings=wiring.offerings,
        workflow=StepFunctionsSurgeWorkflow(
            wiring.client("stepfunctions"),
            settings.require("disruption_state_machine_arn"),
            settings.rotation_state_machine_arn,
        ),
        launcher=wiring.launcher,
        clock=clock,
        metrics=PowertoolsMetricsSink(metrics()),
        images=ResolvedImages(lambda: AmiResolver(ssm, ec2), config.kubernetes_version, clock.now),
        lease=wiring.lease,
    )
    return DisruptionService(config, wiring.catalog_loader(), ports, logger)


def process(
    service: DisruptionService,
    remaining_s: Callable[[], float],
    wait: Callable[[float], None],
    owner: str = "",
) -> InvocationReport:
    """The invocation's loop, without the Lambda wiring; `owner` (the request id) holds the planner lease."""

    def log_pass(report: PassReport) -> None:
        logger.info("planner pass", extra=report.to_dict())

    return run_invocation(
        service,
        remaining_s=remaining_s,
        wait=wait,
        margin_s=DEADLINE_MARGIN_S,
        on_pass=log_pass,
        owner=owner,
    )


CONTAINER: Container[DisruptionService] = Container(build_planner)

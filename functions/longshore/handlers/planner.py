"""The disruption planner Lambda: every minute and by the trigger, planner passes while one is due.

Theory of operation: EventBridge invokes the function once a minute, and the trigger function (the admission
webhook) whenever a bound pod is deleted. `handler` builds the production
`DisruptionService` once per container (`build_service`, from `RuntimeSettings`: the cluster config in SSM,
the claim table, the EKS API through the kubernetes client, the disruption state machine, the EC2 launcher
for replacements, the AMI resolver for drift) and runs `services.disruption.run_invocation`: one pass, then
another whenever `next_pass_at` asks for one within the remaining time, and none after a quiet pass. The service keeps its pending consolidation decision in
memory between passes and invocations of the same container; a cold start simply recomputes it.

Everything the service decides is logged through Powertools `Logger` (decisions at INFO with their reason
and $/h saved, nodes passed over at DEBUG), metrics go out as EMF through `PowertoolsMetricsSink`, and the
pass is traced. `configure()` installs another service (tests, the simulation); `process()` is the loop
without the Lambda wiring.

`StepFunctionsSurgeWorkflow` adds `start_surge` to the shared Step Functions adapter: the input of a
disruption whose replacement the planner already launched carries that claim (`"replacement": {"claimId":
...}`), which the workflow's LaunchReplacement step adopts instead of launching another.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from longshore.adapters.aws.stepfunctions import StepFunctionsWorkflow
from longshore.core import telemetry
from longshore.core.commands import DisruptionCommand
from longshore.core.model import NodeClass
from longshore.handlers.runtime import Runtime
from longshore.ports.workflow import StartResult
from longshore.services.disruption import DisruptionService, InvocationReport, PassReport, run_invocation
from longshore.workflow.state import ReplacementProgress

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "longshore"))
tracer = Tracer()
metrics = Metrics(namespace=telemetry.NAMESPACE)

DEADLINE_MARGIN_S = 15.0
IMAGE_REFRESH_S = 300.0


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


class ResolvedImages:
    """`ImageResolver` on the launcher's AMI resolver: every image a node class resolves to now (each
    architecture and accelerator variant), re-read every `IMAGE_REFRESH_S` so a new AMI is seen."""

    VARIANTS = (("x86_64", ""), ("arm64", ""), ("x86_64", "nvidia"), ("x86_64", "neuron"))

    def __init__(
        self, new_resolver: Callable[[], Any], kubernetes_version: str, now: Callable[[], float]
    ) -> None:
        self._new_resolver = new_resolver
        self._version = kubernetes_version
        self._now = now
        self._resolver: Any = None
        self._fetched_at = 0.0

    def current_images(self, node_class: NodeClass) -> frozenset[str]:
        from longshore.adapters.aws.amis import AmiError

        if self._resolver is None or self._now() - self._fetched_at > IMAGE_REFRESH_S:
            self._resolver, self._fetched_at = self._new_resolver(), self._now()
        found: set[str] = set()
        for arch, accelerator in self.VARIANTS:
            try:
                found.add(self._resolver.resolve(node_class, self._version, arch, accelerator))
            except (AmiError, LookupError, ValueError):
                continue
            except Exception as error:  # an SSM/EC2 error must not stop the pass: no AMI drift this time
                logger.warning(
                    "cannot resolve current AMIs", extra={"node_class": node_class.name, "error": str(error)}
                )
                return frozenset()
        return frozenset(found)


def build_service() -> DisruptionService:
    """Production wiring from the Lambda environment (names in docs/contracts.md)."""
    from longshore.adapters.aws.amis import AmiResolver
    from longshore.adapters.powertools_metrics import PowertoolsMetricsSink
    from longshore.services.disruption import PlannerPorts

    wiring = Runtime.from_env()
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
        metrics=PowertoolsMetricsSink(metrics),
        images=ResolvedImages(lambda: AmiResolver(ssm, ec2), config.kubernetes_version, clock.now),
    )
    return DisruptionService(config, wiring.catalog_loader(), ports, logger)


def process(
    service: DisruptionService, remaining_s: Callable[[], float], wait: Callable[[float], None]
) -> InvocationReport:
    """The invocation's loop, without the Lambda wiring."""

    def log_pass(report: PassReport) -> None:
        logger.info("planner pass", extra=report.to_dict())

    return run_invocation(
        service, remaining_s=remaining_s, wait=wait, margin_s=DEADLINE_MARGIN_S, on_pass=log_pass
    )


_service: DisruptionService | None = None


def configure(service: DisruptionService | None) -> None:
    """Install the service `handler` uses (None: build the production one on the next call)."""
    global _service
    _service = service


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point: `longshore.handlers.planner.handler`."""
    global _service
    if _service is None:
        _service = build_service()
    report = process(_service, lambda: context.get_remaining_time_in_millis() / 1000.0, time.sleep)
    return report.to_dict()

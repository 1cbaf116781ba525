"""What flows into the simulated world's functions besides the clock: the disruption workflows' Task states, the
provisioner and planner triggers, the admission webhook, the interruption queue and AMI releases (a part of
`world.SimulatedWorld`; its module docstring has the theory of operation).

Rules:
- A workflow step runs `wiring.workflow_steps.process_step` in process on the `steps` container; an injected
  crash (`step_crashes`) falls after the step's work and before its answer, and its retry is let through, so
  successive crashes fall on successive steps. Every answered step passes `step_observers`.
- The interruption queue is polled as the event source mapping does: up to 10 messages per poll, delivered
  in the Lambda's SQS event shape; the ones not in `batchItemFailures` are deleted, the others made visible
  again at once.
- The admission webhook sees pods only, as `deploy/webhook.yaml` registers it, and its triggers are counted
  per target in `webhook_triggers`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.core.model import ClusterConfig
from longshore_sim.clock import VirtualClock

if TYPE_CHECKING:
    from longshore.services.interruption import InterruptionService
    from longshore.wiring.container import Container
    from longshore.wiring.runtime import Runtime
    from longshore.workflow.context import StepPorts
    from longshore_sim.world import VirtualTime


class WorldTraffic:
    """The workflow steps, triggers, webhook, interruption queue and AMI releases of `SimulatedWorld`."""

    config: ClusterConfig
    clock: VirtualClock
    time: VirtualTime
    metrics: MemoryMetricsSink
    steps: Container[StepPorts]
    interruptions: Container[InterruptionService]
    step_observers: list[Callable[[str, dict[str, Any]], None]]
    step_crashes: int
    _crashed_last: bool
    provisioner_triggers: list[Callable[[str], None]]
    planner_triggers: list[Callable[[str], None]]
    triggered: list[tuple[float, str]]
    webhook_calls: int
    webhook_triggers: dict[str, int]
    interruption_responses: list[dict[str, Any]]
    sqs: Any
    queue_url: str
    queue_arn: str
    ec2_reader: Any
    _runtimes: list[Runtime]

    def _invoke_step(self, resource: str, payload: Any) -> Any:
        """The workflow-steps Lambda, in process (`handlers.workflow_steps.process_step`) on `step_ports`."""
        from longshore.wiring.workflow_steps import process_step

        result = process_step(payload, self.steps.get(), self.metrics)
        if self.step_crashes > 0 and not self._crashed_last:
            # the runtime dies after the work, before the answer (a timeout, an OOM kill); its retry is let
            # through, so the crashes fall on successive steps
            from longshore_sim.asl import StatesError

            self.step_crashes -= 1
            self._crashed_last = True
            raise StatesError("Lambda.Unknown", "the function's runtime exited before answering (injected)")
        self._crashed_last = False
        step = str(payload.get("step") if isinstance(payload, dict) else "")
        for observer in self.step_observers:
            observer(step, result)
        return result

    def trigger(self, reason: str) -> None:
        """`ports.triggers.ProvisionerTrigger`: the interruption handler asks the provisioner to run now."""
        self.triggered.append((self.clock.now(), reason))
        for callback in self.provisioner_triggers:
            callback(reason)

    def _admission_webhook(
        self, operation: str, plural: str, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        """The stack's admission webhook (`deploy/webhook.yaml`, pods only): the emulator's request as the
        function URL event Lambda would build, through `handlers.trigger.process` in process. Its provisioner
        trigger is `trigger()`; its planner trigger calls `planner_triggers` (the runner's planner cadence)."""
        if plural != "pods":
            return
        from longshore.adapters.events.admission import admission_review, function_url_event
        from longshore.core.triggers import PLANNER, PROVISIONER
        from longshore.wiring.trigger import process

        self.webhook_calls += 1
        uid = f"admission-{self.webhook_calls}"
        event = function_url_event(admission_review(uid, operation, obj, old))
        response = process(
            event,
            {
                PROVISIONER: _CountedTrigger(
                    PROVISIONER, self._webhook_provisioner_trigger, self.webhook_triggers
                ),
                PLANNER: _CountedTrigger(PLANNER, self._planner_trigger, self.webhook_triggers),
            },
        )
        if response.get("statusCode") != 200:
            raise RuntimeError(f"the trigger function answered {response}")

    def _webhook_provisioner_trigger(self, reason: str) -> None:
        for callback in self.provisioner_triggers:
            callback(f"admission: {reason}")

    def wake_planner(self, reason: str) -> None:
        """Start a planner invocation now (as the trigger function does)."""
        self._planner_trigger(reason)

    def _planner_trigger(self, reason: str) -> None:
        for callback in self.planner_triggers:
            callback(reason)

    def send_event(self, event: dict[str, Any]) -> str:
        """Put an EventBridge event on the interruption queue, as the stack's rules do (the body is the event)."""
        return str(self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(event))["MessageId"])

    def poll_queue(self) -> int:
        """One poll of the event source mapping: receive up to 10 messages, run the interruption Lambda on them,
        delete the ones it did not report as failed and make the failed ones visible again. Returns how many
        messages were delivered."""
        from longshore.adapters.events.sqs import lambda_sqs_event
        from longshore.wiring.interruption import process_batch

        messages = self.sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return 0
        response = process_batch(
            lambda_sqs_event(messages, self.queue_arn, self.config.region),
            self.interruptions.get(),
            self.time,
            self.metrics,
        )
        self.interruption_responses.append(response)
        failed = {item["itemIdentifier"] for item in response.get("batchItemFailures") or []}
        for message in messages:
            if message["MessageId"] in failed:
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
            else:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return len(messages)

    def queue_depth(self) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes.get("ApproximateNumberOfMessages", 0)) + int(
            attributes.get("ApproximateNumberOfMessagesNotVisible", 0)
        )

    def publish_amis(self, release: str) -> dict[str, str]:
        """A new EKS AMI release: register an image per variant and point the public SSM parameters at it
        (what AWS does when it publishes an AMI). Returns {parameter name: new image id}."""
        from longshore.adapters.aws.amis import ssm_parameter_name
        from longshore_sim.aws import AMI_VARIANTS, put_public_parameter, register_image

        published: dict[str, str] = {}
        version = self.config.kubernetes_version
        for family, arch, accelerator in AMI_VARIANTS:
            name = f"{family.lower()}-{arch}-{accelerator or 'standard'}-{version}-{release}"
            image = register_image(self.ec2_reader, name, arch)
            parameter = ssm_parameter_name(family, version, arch, accelerator)
            put_public_parameter(self.config.region, parameter, image)
            published[parameter] = image
        # The launcher's resolver trusts an answer for 5 minutes (REFRESH_SECONDS); the scenario publishes at a
        # chosen instant and wants launches from then on to use it, as a cold container would: start afresh.
        for runtime in self._runtimes:
            launcher = runtime.__dict__.get("launcher")
            if launcher is not None:
                launcher.fleet.forget_images()
        return published


class _CountedTrigger:
    """`ports.triggers.Trigger` for the simulated webhook: counts the triggers per target, then fires."""

    def __init__(self, target: str, fire: Callable[[str], None], counts: dict[str, int]) -> None:
        self.target, self.fire, self.counts = target, fire, counts

    def trigger(self, reason: str) -> None:
        self.counts[self.target] = self.counts.get(self.target, 0) + 1
        self.fire(reason)

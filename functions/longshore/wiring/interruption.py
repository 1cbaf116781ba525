"""The interruption function's plumbing: SQS batches of EventBridge events in, partial batch failures out.

Theory of operation: the function is triggered by the interruption queue's event source mapping with
`ReportBatchItemFailures`. Powertools' `BatchProcessor` runs `handle_record` once per message and returns
`{"batchItemFailures": [...]}` listing only the messages whose handler raised. Each message therefore ends
in exactly one of three ways:

- *acted on*: the service carried out at least one action (logged at INFO, `InterruptionActions` counted);
- *acknowledged as a no-op*: malformed (logged at WARNING, `InterruptionMessagesMalformed`: whatever the
  parser raises, and a record without a text body), unknown kind,
  state without action, ignored rebalance, duplicate, or only foreign instances (logged at DEBUG, as the
  issue asks for foreign instances, otherwise INFO; `InterruptionMessagesIgnored` by reason). The message is
  deleted: it would never succeed, so retrying it would only hide it until it reached the DLQ;
- *failed*: a port raised (throttling, the API server down...). Only that message is reported in
  `batchItemFailures`; SQS makes it visible again and, after the queue's `maxReceiveCount` receives, moves
  it to the dead-letter queue (the queue's redrive policy, created by the stack).

`process_batch` is the entry point without the wiring: tests and the simulation call it with their own
service, clock and metric sink; `handler` wires production adapters once per container (`build_service`).
Every message also counts `InterruptionMessagesReceived` by kind and `InterruptionQueueLatencyMs` (now minus
the event's time).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from longshore.adapters.events.parse import MalformedEventError, parse_event
from longshore.core import telemetry
from longshore.ports.clock import Clock
from longshore.ports.metrics import MetricsSink
from longshore.services.interruption import InterruptionService, MessageOutcome
from longshore.wiring.container import Container
from longshore.wiring.observability import logger
from longshore.wiring.runtime import Runtime


def process_batch(
    event: Mapping[str, Any],
    service: InterruptionService,
    clock: Clock,
    sink: MetricsSink,
    context: LambdaContext | None = None,
) -> dict[str, Any]:
    """Handle one SQS batch; the response lists the messages to retry (`batchItemFailures`)."""
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

    def record_handler(record: SQSRecord) -> str:
        return handle_record(record, service, clock, sink)

    response = process_partial_response(
        event=dict(event), record_handler=record_handler, processor=processor, context=context
    )
    return dict(response)


def handle_record(record: SQSRecord, service: InterruptionService, clock: Clock, sink: MetricsSink) -> str:
    """Handle one message; returns how it ended ("acted" or "ignored"), raises to have it retried."""
    where = _where(record)
    try:
        parsed = parse_event(_body(record))
    except Exception as error:  # parsing is pure: whatever it raises, the body is at fault
        text = str(error) if isinstance(error, MalformedEventError) else f"{type(error).__name__}: {error}"
        logger.warning("malformed interruption message acknowledged", extra={**where, "error": text[:500]})
        sink.emit(telemetry.MESSAGES_RECEIVED, 1, "Count", {telemetry.DIM_KIND: "malformed"})
        sink.emit(telemetry.MESSAGES_MALFORMED, 1, "Count")
        return "ignored"
    sink.emit(telemetry.MESSAGES_RECEIVED, 1, "Count", {telemetry.DIM_KIND: parsed.kind})
    sink.emit(telemetry.QUEUE_LATENCY_MS, max(0.0, (clock.now() - parsed.time) * 1000.0), "Milliseconds")
    try:
        outcome = service.handle(parsed)
    except Exception:
        logger.exception(
            "interruption message failed; SQS will redeliver it (and move it to the DLQ after maxReceiveCount)",
            extra={
                **where,
                "kind": parsed.kind,
                "event_id": parsed.event_id,
                "instances": list(parsed.instance_ids),
            },
        )
        raise
    _report(outcome, where, sink)
    return "acted" if outcome.acted else "ignored"


def _where(record: SQSRecord) -> dict[str, str]:
    attributes = record.get("attributes")
    count = attributes.get("ApproximateReceiveCount") if isinstance(attributes, Mapping) else None
    return {"message_id": str(record.get("messageId")), "receive_count": str(count)}


def _body(record: SQSRecord) -> str:
    body = record.get("body")
    if not isinstance(body, str):
        raise MalformedEventError(f"the SQS record has no text body (body is {type(body).__name__})")
    return body


def _report(outcome: MessageOutcome, where: dict[str, str], sink: MetricsSink) -> None:
    event = outcome.event
    for instance in outcome.instances:
        if instance.acted:
            sink.emit(telemetry.INTERRUPTION_ACTIONS, 1, "Count", {telemetry.DIM_ACTION: instance.action})
        else:
            sink.emit(
                telemetry.MESSAGES_IGNORED,
                1,
                "Count",
                {telemetry.DIM_REASON: instance.ignore_reason or "none"},
            )
    fields = {
        **where,
        "kind": event.kind,
        "detail_type": event.detail_type,
        "event_id": event.event_id,
        "state": event.state,
        "note": event.note,
        "instances": [
            {"instance_id": i.instance_id, "action": i.action, "ignored": i.ignore_reason, "detail": i.detail}
            for i in outcome.instances
        ],
        "provisioner_triggered": outcome.provisioner_triggered,
    }
    if outcome.acted:
        logger.info("interruption message acted on", extra=fields)
    elif outcome.instances and all(i.ignore_reason == "foreign" for i in outcome.instances):
        logger.debug(
            "interruption message names only instances of other clusters; acknowledged", extra=fields
        )
    else:
        logger.info("interruption message acknowledged as a no-op", extra=fields)


def build_interruption(wiring: Runtime) -> InterruptionService:
    """The interruption service of one container, on the production adapters (names in docs/contracts.md)."""
    from longshore.services.interruption import rebalance_policies

    return InterruptionService(
        claims=wiring.claims,
        offerings=wiring.offerings,
        workflow=wiring.workflows,
        cluster=wiring.kube_cluster("longshore-interruption"),
        instances=wiring.instances,
        provisioner=wiring.provisioner_trigger,
        clock=wiring.clock,
        rebalance_policy=rebalance_policies(wiring.config),
    )


CONTAINER: Container[InterruptionService] = Container(build_interruption)

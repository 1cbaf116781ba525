"""The interruption queue: EventBridge rules for the five EC2/Health event kinds, delivered to one SQS queue.

Theory of operation: as in Karpenter's getting-started template (reference/karpenter.md §5) the queue keeps
messages for 300 s (an interruption older than that is moot), is encrypted (SSE-SQS: EventBridge can write
to it without a key policy) and refuses plain HTTP. Each rule may send to it only as itself (the queue
policy's `aws:SourceArn` condition, added by the SQS target). Two rules are narrower than Karpenter's, so the
account's unrelated events never cost an invocation: instance state changes only for the four states the
handler acts on, and Health events only for EC2 scheduled changes.

A message the handler fails on is redelivered after the visibility timeout, and after `maxReceiveCount`
receives goes to the dead-letter queue (kept 14 days, alarmed above 0). The redelivery schedule must fit in
the retention period, or failed messages would expire instead of reaching the DLQ; that is checked here.
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.naming import QUEUE_NAME_LIMIT

RETENTION = cdk.Duration.seconds(300)
VISIBILITY_TIMEOUT = cdk.Duration.seconds(40)
DLQ_RETENTION = cdk.Duration.days(14)
DLQ_SUFFIX = "-dlq"


@dataclass(frozen=True, slots=True)
class InterruptionRule:
    construct_id: str
    source: str
    detail_type: str
    detail: dict[str, list[str]] | None = None


RULES = (
    InterruptionRule("ScheduledChangeRule", "aws.health", "AWS Health Event",
                     {"service": ["EC2"], "eventTypeCategory": ["scheduledChange"]}),
    InterruptionRule("SpotInterruptionRule", "aws.ec2", "EC2 Spot Instance Interruption Warning"),
    InterruptionRule("RebalanceRule", "aws.ec2", "EC2 Instance Rebalance Recommendation"),
    InterruptionRule("InstanceStateChangeRule", "aws.ec2", "EC2 Instance State-change Notification",
                     {"state": ["stopping", "stopped", "shutting-down", "terminated"]}),
    InterruptionRule("CapacityReservationInterruptionRule", "aws.ec2",
                     "EC2 Capacity Reservation Instance Interruption Warning"),
)  # fmt: skip


class InterruptionQueueError(ValueError):
    """Settings that would lose messages; the message names the config field and the value."""


class InterruptionQueue(Construct):
    """The queue, its DLQ and the five rules that feed it."""

    def __init__(
        self, scope: Construct, construct_id: str, *, queue_name: str, max_receive_count: int
    ) -> None:
        super().__init__(scope, construct_id)
        redelivery = max_receive_count * VISIBILITY_TIMEOUT.to_seconds()
        if not max_receive_count >= 1 or redelivery >= RETENTION.to_seconds():
            raise InterruptionQueueError(
                f"spec.interruption.maxReceiveCount: {max_receive_count} receives x {VISIBILITY_TIMEOUT.to_seconds():g} s "
                f"visibility must stay under the {RETENTION.to_seconds():g} s retention, or failed messages "
                f"expire before they reach the dead-letter queue (use 1 to "
                f"{int((RETENTION.to_seconds() - 1) // VISIBILITY_TIMEOUT.to_seconds())})"
            )
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            queue_name=f"{queue_name[: QUEUE_NAME_LIMIT - len(DLQ_SUFFIX)]}{DLQ_SUFFIX}",
            retention_period=DLQ_RETENTION,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=queue_name,
            retention_period=RETENTION,
            visibility_timeout=VISIBILITY_TIMEOUT,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=max_receive_count
            ),
        )
        self.rules = [
            events.Rule(
                self,
                rule.construct_id,
                description=f"Longshore: {rule.detail_type} events to the interruption queue",
                event_pattern=events.EventPattern(
                    source=[rule.source], detail_type=[rule.detail_type], detail=rule.detail
                ),
                targets=[targets.SqsQueue(self.queue)],
            )
            for rule in RULES
        ]

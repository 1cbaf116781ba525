"""The interruption queue: EventBridge rules for the five EC2/Health event kinds, delivered to one SQS queue.

Theory of operation: as in Karpenter's getting-started template the queue is encrypted (SSE-SQS: EventBridge can write
to it without a key policy) and refuses plain HTTP. Each rule may send to it only as itself (the queue
policy's `aws:SourceArn` condition, added by the SQS target). Two rules are narrower than Karpenter's, so the
account's unrelated events never cost an invocation: instance state changes only for the four states the
handler acts on, and Health events only for EC2 scheduled changes.

The visibility timeout is six times the interruption function's timeout (what AWS recommends for an SQS
event source: a batch still being processed, or retried by the poller, is never handed out twice). A message
the handler fails on is redelivered after that, and after `maxReceiveCount` receives goes to the dead-letter
queue (kept 14 days, alarmed above 0). Karpenter keeps messages 300 s (an interruption older than that is
moot); here the retention is at least that and long enough for every redelivery, `(maxReceiveCount + 1) x
visibility`, so a failing message reaches the DLQ instead of expiring. A redelivered stale message is
harmless: the handler's actions on a node that is already gone are no-ops.
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.naming import QUEUE_NAME_LIMIT

MIN_RETENTION_S = 300
MAX_RETENTION_S = 14 * 24 * 3600  # SQS's limit
VISIBILITY_PER_FUNCTION_TIMEOUT = 6
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
        self,
        scope: Construct,
        construct_id: str,
        *,
        queue_name: str,
        max_receive_count: int,
        function_timeout_s: int,
    ) -> None:
        super().__init__(scope, construct_id)
        self.visibility_timeout_s = VISIBILITY_PER_FUNCTION_TIMEOUT * function_timeout_s
        self.retention_s = max(MIN_RETENTION_S, (max_receive_count + 1) * self.visibility_timeout_s)
        if not max_receive_count >= 1 or self.retention_s > MAX_RETENTION_S:
            raise InterruptionQueueError(
                f"spec.interruption.maxReceiveCount: {max_receive_count} receives x {self.visibility_timeout_s} s "
                f"visibility must fit in SQS's {MAX_RETENTION_S} s retention, or failed messages expire before "
                f"they reach the dead-letter queue (use 1 to {MAX_RETENTION_S // self.visibility_timeout_s - 1})"
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
            retention_period=cdk.Duration.seconds(self.retention_s),
            visibility_timeout=cdk.Duration.seconds(self.visibility_timeout_s),
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

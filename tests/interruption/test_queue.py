"""The handler against a real SQS API (moto): redrive to the DLQ, and EventBridge rules delivering AWS events.

The test plays the Lambda event source mapping: receive, call the handler, delete what it did not report as
failed, and make the failed ones visible again (what the visibility timeout does in AWS).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longshore.adapters.events.sqs import lambda_sqs_event
from longshore.wiring.interruption import process_batch
from tests.fakes import Metrics
from tests.interruption.fakes import EVENTS, World, claim, event_for, instance_id

REGION = "us-east-1"
MAX_RECEIVES = 3


@pytest.fixture
def queues() -> Iterator[tuple[Any, str, str, str]]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        dlq_url = sqs.create_queue(QueueName="longshore-interruption-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVES)})
        url = sqs.create_queue(
            QueueName="longshore-interruption",
            Attributes={"RedrivePolicy": redrive, "MessageRetentionPeriod": "300", "VisibilityTimeout": "30"},
        )["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        yield sqs, url, arn, dlq_url


def poll_once(sqs: Any, url: str, arn: str, world: World, sink: Metrics) -> int:
    """One event-source-mapping poll; returns how many messages were handed to the function."""
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"]).get(
        "Messages", []
    )
    if not messages:
        return 0
    response = process_batch(lambda_sqs_event(messages, arn, REGION), world.service(), world.clock, sink)
    failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
    for message in messages:
        if message["MessageId"] in failed:
            sqs.change_message_visibility(
                QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
        else:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return len(messages)


def queue_bodies(sqs: Any, url: str) -> list[str]:
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    return [m["Body"] for m in messages]


def test_a_message_that_keeps_failing_lands_in_the_dlq_and_the_others_do_not(
    queues: tuple[Any, str, str, str],
) -> None:
    sqs, url, arn, dlq_url = queues
    world = World.of(claim(1), claim(2))
    world.workflow.failures_left = 10**6  # Step Functions is down for good
    failing = json.dumps(event_for("spot-interruption-warning.json", instance_id(1)))
    fine = json.dumps(event_for("state-change-terminated.json", instance_id(2)))
    malformed = (EVENTS / "malformed-truncated.json").read_text()
    for body in (failing, fine, malformed):
        sqs.send_message(QueueUrl=url, MessageBody=body)

    sink = Metrics()
    polls = [poll_once(sqs, url, arn, world, sink) for _ in range(MAX_RECEIVES + 2)]

    assert polls[0] == 3  # all three delivered first
    assert polls[1:MAX_RECEIVES] == [1] * (
        MAX_RECEIVES - 1
    )  # then only the failing one, until maxReceiveCount
    assert polls[MAX_RECEIVES:] == [0, 0]  # then SQS moved it away
    assert queue_bodies(sqs, dlq_url) == [failing]  # the DLQ holds exactly the failing message
    assert world.claims.by_instance(instance_id(2)) is None  # the good message was acted on once
    assert sink.count("InterruptionMessagesMalformed") == 1  # the malformed one was acknowledged, not retried


def test_a_message_that_fails_once_succeeds_on_redelivery(queues: tuple[Any, str, str, str]) -> None:
    sqs, url, arn, dlq_url = queues
    world = World.of(claim(1))
    world.workflow.failures_left = 1
    sqs.send_message(
        QueueUrl=url, MessageBody=json.dumps(event_for("spot-interruption-warning.json", instance_id(1)))
    )
    sink = Metrics()
    assert [poll_once(sqs, url, arn, world, sink) for _ in range(3)] == [1, 1, 0]
    assert list(world.workflow.executions) == [f"interruption-{instance_id(1)}"]
    assert queue_bodies(sqs, dlq_url) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "sample",
    [
        "spot-interruption-warning.json",
        "rebalance-recommendation.json",
        "state-change-stopping.json",
        "health-scheduled-change-ec2.json",
        "capacity-reservation-interruption-warning.json",
    ],
)
def test_eventbridge_rules_deliver_aws_events_the_handler_acts_on(
    queues: tuple[Any, str, str, str], sample: str
) -> None:
    sqs, url, arn, _ = queues
    events = boto3.client("events", region_name=REGION)
    document = event_for(sample, instance_id(1), *([instance_id(2)] if "health" in sample else []))
    events.put_rule(
        Name="longshore-interruption",
        EventPattern=json.dumps({"source": [document["source"]], "detail-type": [document["detail-type"]]}),
    )
    events.put_targets(Rule="longshore-interruption", Targets=[{"Id": "queue", "Arn": arn}])
    events.put_events(
        Entries=[
            {
                "Source": document["source"],
                "DetailType": document["detail-type"],
                "Detail": json.dumps(document["detail"]),
                "Resources": document["resources"],
            }
        ]
    )
    (message,) = sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"]
    delivered = json.loads(message["Body"])
    assert "account" not in delivered  # moto's envelope lacks it; AWS always sends it
    delivered["account"] = "123456789012"
    message["Body"] = json.dumps(delivered)

    world = World.of(claim(1), claim(2), rebalance={"default": "notify"})
    sink = Metrics()
    response = process_batch(lambda_sqs_event([message], arn, REGION), world.service(), world.clock, sink)
    assert response == {"batchItemFailures": []}
    assert sink.count("InterruptionActions") == (2 if "health" in sample else 1)
    assert sink.count("InterruptionMessagesMalformed") == 0

"""The Lambda SQS event as the event source mapping builds it, from ReceiveMessage output.

Theory of operation: in AWS the event source mapping polls the queue and hands the function
`{"Records": [...]}` with camelCase keys (`messageId`, `receiptHandle`, `body`, `attributes`...). Tests and the
simulation play the event source mapping themselves: they call `ReceiveMessage` (moto) and turn the messages
into that event with `lambda_sqs_event`, then delete what the handler did not report in `batchItemFailures`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

_ATTRIBUTES = ("ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp")


def lambda_sqs_event(messages: Iterable[Mapping[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    """`messages` as returned by `ReceiveMessage(AttributeNames=["All"])`, as a Lambda SQS event."""
    records = []
    for message in messages:
        attributes = message.get("Attributes", {})
        records.append(
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": {key: str(attributes.get(key, "")) for key in _ATTRIBUTES},
                "messageAttributes": {},
                "md5OfBody": message.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
        )
    return {"Records": records}

"""A throttled or failing claim table slows a pass instead of failing it: throttling and 5xx answers are
retried with bounded backoff on the injected clock after botocore's own attempts; answers (a failed condition,
a validation error) are not retried; past the bound the error surfaces."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse  # type: ignore[import-untyped]
from botocore.config import Config  # type: ignore[import-untyped]
from moto import mock_aws

from longshore.adapters.aws.dynamodb import DynamoClaimStore, DynamoLease, DynamoTable
from longshore.adapters.aws.retry import ClientError, backoff_delays
from longshore.core.claims import NodeClaim
from longshore_sim.aws import RawBody, ThrottleInjector, create_table
from tests.adapters.conftest import BOTOCORE_SESSION

ONE_ATTEMPT = Config(retries={"total_max_attempts": 1, "mode": "standard"})  # botocore's sleeps are real time


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        session = boto3.session.Session(botocore_session=BOTOCORE_SESSION, region_name="us-east-1")
        dynamodb = session.client("dynamodb", config=ONE_ATTEMPT)
        create_table(dynamodb, "longshore")
        yield dynamodb


def claim(name: str) -> NodeClaim:
    return NodeClaim(id=name, nodepool="default", node_class="default", requirements=())


def test_throttled_calls_are_retried_on_the_injected_clock(client: Any) -> None:
    slept: list[float] = []
    store = DynamoClaimStore(DynamoTable(client, "longshore", sleep=slept.append))
    assert store.create_if_absent(claim("a"))
    throttle = ThrottleInjector("ProvisionedThroughputExceededException").attach(client)
    throttle.throttle("Scan", 3)
    assert [c.id for c in store.list()] == ["a"]
    assert throttle.injected == {"Scan": 3} and slept == list(backoff_delays()[:3])


def test_server_errors_are_retried_and_answers_are_not(client: Any) -> None:
    slept: list[float] = []
    failures = {"n": 2}

    def five_hundred(request: Any, **_: Any) -> Any:
        if failures["n"] <= 0:
            return None
        failures["n"] -= 1
        request.url = "http://127.0.0.1:9/nowhere"  # moto must not execute the failed attempt
        body = b'{"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "boom"}'
        return AWSResponse(request.url, 500, {"Content-Type": "application/x-amz-json-1.0"}, RawBody(body))

    client.meta.events.register_first("before-send.dynamodb.PutItem", five_hundred)
    table = DynamoTable(client, "longshore", sleep=slept.append)
    lease = DynamoLease(table)
    assert lease.acquire("planner", "me", 100.0, 60.0)  # two 500s, then the write
    assert slept == list(backoff_delays()[:2])
    slept.clear()
    assert not lease.acquire("planner", "someone-else", 110.0, 60.0)  # a failed condition: an answer
    assert slept == []


def test_past_the_bound_the_error_surfaces(client: Any) -> None:
    slept: list[float] = []
    store = DynamoClaimStore(DynamoTable(client, "longshore", sleep=slept.append))
    ThrottleInjector("ProvisionedThroughputExceededException").attach(client).throttle("Scan", 100)
    with pytest.raises(ClientError, match="ProvisionedThroughputExceeded"):
        store.list()
    assert slept == list(backoff_delays())

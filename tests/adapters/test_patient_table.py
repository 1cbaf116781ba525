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
from longshore_sim.aws import create_table
from longshore_sim.throttle import RawBody, ThrottleInjector
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


# -- every table access path of the functions (issue #12) -----------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.t, self.slept = 1000.0, []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


def _runtime(client: Any, clock: _Clock) -> Any:
    from longshore.config.settings import RuntimeSettings
    from longshore.wiring.runtime import Runtime
    from longshore.wiring.runtime_parts import RuntimeParts

    settings = RuntimeSettings(
        cluster_name="demo", region="us-east-1", config_parameter="/p", table_name="longshore"
    )
    return Runtime(settings, session=object(), clock=clock, parts=RuntimeParts(clients={"dynamodb": client}))


# (what, DynamoDB operation, the call on a runtime whose table holds claim "a" with instance i-1)
PATHS: list[tuple[str, str, Any]] = [
    ("claims.create_if_absent", "PutItem", lambda r: r.claims.create_if_absent(claim("b"))),
    ("claims.get", "GetItem", lambda r: r.claims.get("a")),
    ("claims.by_instance", "Query", lambda r: r.claims.by_instance("i-1")),
    ("claims.list", "Scan", lambda r: r.claims.list()),
    ("claims.put", "PutItem", lambda r: r.claims.put(claim("c"))),
    ("claims.compare_and_put", "PutItem", lambda r: r.claims.compare_and_put(r.claims.get("a"))),
    ("claims.delete", "DeleteItem", lambda r: r.claims.delete("a")),
    ("claims.delete_if", "DeleteItem", lambda r: r.claims.delete_if("a", 0)),
    ("offerings.mark_unavailable", "PutItem", lambda r: r.offerings.mark_unavailable("m5", "z", "spot", 2e3)),
    ("offerings.unavailable", "Query", lambda r: r.offerings.unavailable(1000.0)),
    ("lease.acquire", "PutItem", lambda r: r.lease.acquire("planner", "me", 1000.0, 60.0)),
    ("lease.release", "DeleteItem", lambda r: r.lease.release("planner", "me")),
]


@pytest.mark.parametrize("fault", ["throttling", "5xx"])
@pytest.mark.parametrize(("what", "operation", "call"), PATHS, ids=[p[0] for p in PATHS])
def test_every_table_access_of_the_functions_runtime_is_retried_with_backoff(
    client: Any, fault: str, what: str, operation: str, call: Any
) -> None:
    """The claims (planner state included: the consolidateAfter clock, surge replacements, removal marks),
    the leases and the offering cache, as every function's `Runtime` wires them: two transient answers are
    retried on the injected clock with backoff and the call succeeds."""
    from dataclasses import replace

    clock = _Clock()
    runtime = _runtime(client, clock)
    assert runtime.claims.create_if_absent(replace(claim("a"), instance_id="i-1"))
    if fault == "throttling":
        ThrottleInjector("ProvisionedThroughputExceededException").attach(client).throttle(operation, 2)
    else:
        failures = {"n": 2}

        def five_hundred(request: Any, **_: Any) -> Any:
            if failures["n"] <= 0:
                return None
            failures["n"] -= 1
            request.url = "http://127.0.0.1:9/nowhere"
            body = b'{"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "boom"}'
            return AWSResponse(
                request.url, 500, {"Content-Type": "application/x-amz-json-1.0"}, RawBody(body)
            )

        client.meta.events.register_first(f"before-send.dynamodb.{operation}", five_hundred)
    call(runtime)
    assert clock.slept == list(backoff_delays()[:2]), what

"""The webhook's guards on moto: a request without the per-cluster secret gets 403 and costs nothing else; with
it, a burst of admissions wakes each target once per window, across containers (the gate lives in DynamoDB)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longshore.adapters.aws.dynamodb import DynamoLease, DynamoTable
from longshore.adapters.aws.secrets import CachedSecret
from longshore.adapters.events.admission import function_url_event
from longshore.adapters.wake_gate import DEFAULT_WINDOW_S, LeaseWakeGate
from longshore.core.triggers import PLANNER, PROVISIONER
from longshore.wiring.trigger import TriggerPorts, serve
from longshore_sim.aws import create_table
from longshore_sim.clock import VirtualClock
from tests.fakes import FakeTrigger

SAMPLES = Path(__file__).resolve().parents[1] / "events" / "admission"
SECRET = "s3cr3t-0123456789abcdefghijklmnopqrstuv"
TABLE = "longshore-demo-state"


START = 1_700_000_000.0


class CountingClient:
    """A Secrets Manager client that counts reads (moto underneath)."""

    def __init__(self, client: Any) -> None:
        self.client, self.reads = client, 0

    def get_secret_value(self, **kwargs: Any) -> Any:
        self.reads += 1
        return self.client.get_secret_value(**kwargs)


@pytest.fixture
def aws() -> Any:
    with mock_aws():
        secrets = boto3.client("secretsmanager", region_name="us-east-1")
        arn = secrets.create_secret(Name="longshore-demo-webhook", SecretString=SECRET)["ARN"]
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_table(dynamodb, TABLE)
        yield CountingClient(secrets), arn, dynamodb


def container(aws: Any, clock: VirtualClock, provisioner: FakeTrigger, planner: FakeTrigger) -> TriggerPorts:
    secrets, arn, dynamodb = aws
    return TriggerPorts(
        secret=CachedSecret(secrets, arn, clock.now),
        gate=LeaseWakeGate(DynamoLease(DynamoTable(dynamodb, TABLE)), clock.now),
        triggers={PROVISIONER: provisioner, PLANNER: planner},
    )


def review(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(json.loads((SAMPLES / name).read_text())["body"])
    return document


@pytest.mark.parametrize(
    "path", ["/", "/wrong", f"/{SECRET}x", f"/{SECRET[:-1]}", f"{SECRET}", f"/{SECRET}/"]
)
def test_a_request_without_the_secret_gets_403_and_wakes_nothing(aws: Any, path: str) -> None:
    provisioner, planner = FakeTrigger(), FakeTrigger()
    ports = container(aws, VirtualClock(START), provisioner, planner)
    event = function_url_event(review("admission-pod-create.json"))
    event["rawPath"] = path

    response = serve(event, ports)

    assert response["statusCode"] == 403
    assert provisioner.reasons == planner.reasons == []
    assert aws[2].scan(TableName=TABLE)["Count"] == 0, "no gate write for an unauthenticated request"


@pytest.mark.parametrize("event", [None, [], "text", {"rawPath": 7}, {}])
def test_anything_that_is_not_a_request_gets_403(aws: Any, event: Any) -> None:
    assert (
        serve(event, container(aws, VirtualClock(START), FakeTrigger(), FakeTrigger()))["statusCode"] == 403
    )


@pytest.mark.slow
def test_the_secret_is_read_once_per_container_per_cache_period(aws: Any) -> None:
    clock = VirtualClock(START)
    ports = container(aws, clock, FakeTrigger(), FakeTrigger())
    for i in range(20):
        event = function_url_event(review("admission-pod-create.json"), secret=SECRET if i % 2 else "no")
        serve(event, ports)

    assert aws[0].reads == 1
    clock.advance(301)
    serve(function_url_event(review("admission-pod-create.json")), ports)
    assert aws[0].reads == 2


@pytest.mark.slow
def test_a_burst_wakes_each_target_once_across_containers_then_again_after_the_window(aws: Any) -> None:
    clock, provisioner, planner = VirtualClock(START), FakeTrigger(), FakeTrigger()
    containers = [container(aws, clock, provisioner, planner) for _ in range(3)]
    create, delete = review("admission-pod-create.json"), review("admission-pod-delete-bound.json")

    responses = [
        serve(function_url_event(create if i % 3 else delete, secret=SECRET), containers[i % 3])
        for i in range(60)
    ]

    assert {r["statusCode"] for r in responses} == {200}
    assert all(json.loads(r["body"])["response"]["allowed"] for r in responses)
    assert len(provisioner.reasons) == 1 and len(planner.reasons) == 1
    clock.advance(DEFAULT_WINDOW_S)
    for ports in containers:
        serve(function_url_event(create, secret=SECRET), ports)
    assert len(provisioner.reasons) == 2


def test_an_unreadable_secret_gives_503_and_wakes_nothing(aws: Any) -> None:
    secrets, _, dynamodb = aws
    provisioner = FakeTrigger()
    ports = TriggerPorts(
        secret=CachedSecret(
            secrets, "arn:aws:secretsmanager:us-east-1:123456789012:secret:gone", VirtualClock(START).now
        ),
        gate=LeaseWakeGate(DynamoLease(DynamoTable(dynamodb, TABLE)), VirtualClock(START).now),
        triggers={PROVISIONER: provisioner},
    )

    response = serve(function_url_event(review("admission-pod-create.json"), secret=SECRET), ports)

    assert response["statusCode"] == 503 and provisioner.reasons == []


class BrokenGate:
    def claim(self, target: str) -> bool:
        raise RuntimeError("DynamoDB is unreachable")


def test_an_unreachable_gate_fails_open_so_the_pod_still_wakes_its_target() -> None:
    provisioner = FakeTrigger()

    class Secret:
        def current(self) -> str:
            return SECRET

    ports = TriggerPorts(secret=Secret(), gate=BrokenGate(), triggers={PROVISIONER: provisioner})
    response = serve(function_url_event(review("admission-pod-create.json"), secret=SECRET), ports)

    assert response["statusCode"] == 200 and len(provisioner.reasons) == 1


def test_a_dry_run_wakes_nothing_and_takes_no_gate(aws: Any) -> None:
    provisioner = FakeTrigger()
    ports = container(aws, VirtualClock(START), provisioner, FakeTrigger())
    document = review("admission-pod-create.json")
    document["request"]["dryRun"] = True

    assert serve(function_url_event(document, secret=SECRET), ports)["statusCode"] == 200
    assert provisioner.reasons == [] and aws[2].scan(TableName=TABLE)["Count"] == 0

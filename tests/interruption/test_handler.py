"""The SQS Lambda: every message ends acted on, acknowledged as a no-op (logged and counted), or retried."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

from longshore.core import telemetry
from longshore.handlers import interruption as lambda_module
from longshore.wiring import interruption as interruption_wiring
from longshore.wiring.interruption import process_batch
from longshore.wiring.observability import logger
from tests.fakes import Metrics
from tests.interruption.fakes import EVENTS, World, claim, event_for, instance_id, sqs_event


def run(world: World, *bodies: str) -> tuple[dict[str, Any], Metrics]:
    sink = Metrics()
    return process_batch(sqs_event(*bodies), world.service(), world.clock, sink), sink


def body(name: str, *ids: str) -> str:
    return json.dumps(event_for(name, *ids))


def failed_ids(response: dict[str, Any]) -> list[str]:
    return [item["itemIdentifier"] for item in response["batchItemFailures"]]


def test_a_mixed_batch_acts_acknowledges_and_counts_every_message() -> None:
    world = World.of(*(claim(n) for n in range(1, 6)))
    bodies = [
        body("spot-interruption-warning.json", instance_id(1)),  # m0 acted
        (EVENTS / "malformed-truncated.json").read_text(),  # m1 malformed
        (EVENTS / "unknown-ami-state-change.json").read_text(),  # m2 unknown kind
        body("state-change-terminated.json", "i-0fffffffffffffff9"),  # m3 foreign
        body("state-change-running.json", instance_id(2)),  # m4 no-op state
        body("spot-interruption-warning.json", instance_id(1)),  # m5 duplicate
        (EVENTS / "malformed-missing-instance-id.json").read_text(),  # m6 missing field
    ]
    response, sink = run(world, *bodies)
    assert response == {"batchItemFailures": []}  # nothing is retried: each ended acted on or as a no-op
    assert sink.count(telemetry.MESSAGES_RECEIVED) == len(bodies)
    assert sink.count(telemetry.MESSAGES_RECEIVED, Kind="spot-interruption") == 2
    assert sink.count(telemetry.MESSAGES_RECEIVED, Kind="malformed") == 2
    assert sink.count(telemetry.MESSAGES_MALFORMED) == 2
    assert sink.count(telemetry.INTERRUPTION_ACTIONS, Action="interrupt") == 1
    reasons = Counter(dict(p.dimensions)["Reason"] for p in sink.named(telemetry.MESSAGES_IGNORED))
    assert reasons == Counter({"unknown-kind": 1, "foreign": 1, "no-op-state": 1, "duplicate": 1})
    assert list(world.workflow.executions) == [f"interruption-{instance_id(1)}"]


def test_queue_latency_is_now_minus_the_event_time() -> None:
    world = World.of(claim(1))
    _, sink = run(world, body("spot-interruption-warning.json", instance_id(1)))
    (latency,) = sink.named(telemetry.QUEUE_LATENCY_MS)
    event_time = json.loads(body("spot-interruption-warning.json", instance_id(1)))["time"]
    assert event_time == "2024-03-18T15:38:08Z" and world.clock.now() == 1710776290.0
    assert (latency.value, latency.unit) == (2000.0, "Milliseconds")


def test_a_transient_failure_retries_that_message_alone() -> None:
    world = World.of(*(claim(n) for n in range(1, 4)))
    world.workflow.failures_left = 1  # the first workflow start fails (throttled)
    response, sink = run(
        world,
        body("spot-interruption-warning.json", instance_id(1)),
        body("spot-interruption-warning.json", instance_id(2)),
        body("state-change-terminated.json", instance_id(3)),
    )
    assert failed_ids(response) == ["m0"]
    assert list(world.workflow.executions) == [f"interruption-{instance_id(2)}"]
    assert world.claims.by_instance(instance_id(3)) is None
    assert sink.count(telemetry.INTERRUPTION_ACTIONS) == 2


def test_when_every_message_fails_each_is_reported_rather_than_raising() -> None:
    world = World.of(claim(1), claim(2))
    world.workflow.failures_left = 2
    response, _ = run(
        world,
        body("spot-interruption-warning.json", instance_id(1)),
        body("spot-interruption-warning.json", instance_id(2)),
    )
    assert failed_ids(response) == ["m0", "m1"]


@dataclass
class FakeLambdaContext:
    function_name: str = "longshore-interruption"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:longshore-interruption"
    aws_request_id: str = "req-1"


def test_the_lambda_entry_point_logs_and_writes_emf_metrics(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    world = World.of(claim(1))
    interruption_wiring.CONTAINER.install(world.service())
    try:
        response = lambda_module.handler(
            sqs_event(
                body("spot-interruption-warning.json", instance_id(1)),
                (EVENTS / "malformed-truncated.json").read_text(),
            ),
            FakeLambdaContext(),  # type: ignore[arg-type]
        )
    finally:
        interruption_wiring.CONTAINER.install(None)
    assert response == {"batchItemFailures": []}
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    logs = {record.getMessage(): record.__dict__ for record in caplog.records}
    acted = logs["interruption message acted on"]
    assert acted["instances"][0]["action"] == "interrupt" and acted["message_id"] == "m0"
    malformed = logs["malformed interruption message acknowledged"]
    assert malformed["levelname"] == "WARNING" and "not JSON" in malformed["error"]
    emitted = {
        (
            metric["Name"],
            tuple(
                sorted(
                    (k, line[k])
                    for d in line["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
                    for k in d
                    if k != "service"
                )
            ),
        )
        for line in lines
        if "_aws" in line
        for metric in line["_aws"]["CloudWatchMetrics"][0]["Metrics"]
    }
    assert (telemetry.INTERRUPTION_ACTIONS, (("Action", "interrupt"),)) in emitted
    assert (telemetry.MESSAGES_RECEIVED, (("Kind", "malformed"),)) in emitted
    assert (telemetry.MESSAGES_MALFORMED, ()) in emitted
    assert (telemetry.QUEUE_LATENCY_MS, ()) in emitted
    assert all(
        line["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Longshore" for line in lines if "_aws" in line
    )


def test_foreign_only_messages_get_a_debug_line_and_other_no_ops_an_info_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger.setLevel("DEBUG")  # as POWERTOOLS_LOG_LEVEL=DEBUG would set it
    try:
        world = World.of(claim(1))
        _, sink = run(
            world,
            body("state-change-terminated.json", "i-0fffffffffffffff9"),
            body("state-change-running.json", instance_id(1)),
        )
    finally:
        logger.setLevel("INFO")
    lines = [(r.levelname, r.getMessage(), r.__dict__.get("message_id")) for r in caplog.records]
    assert (
        "DEBUG",
        "interruption message names only instances of other clusters; acknowledged",
        "m0",
    ) in lines
    assert ("INFO", "interruption message acknowledged as a no-op", "m1") in lines
    assert sink.count(telemetry.MESSAGES_IGNORED, Reason="foreign") == 1
    assert sink.count(telemetry.MESSAGES_IGNORED, Reason="no-op-state") == 1

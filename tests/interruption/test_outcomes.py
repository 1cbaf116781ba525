"""Property: whatever a message holds, it ends in exactly one of three ways and never crashes the batch.

Messages are AWS-shaped samples mutated at random (a field deleted, a value replaced by another JSON value,
the text truncated). With healthy ports every message is acted on or acknowledged as a no-op, counted once;
with a failing workflow the only messages reported for retry are those that needed the workflow.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longshore.core import telemetry
from longshore.wiring.interruption import process_batch
from tests.fakes import Metrics
from tests.interruption.fakes import EVENTS, World, claim, event_for, instance_id, sqs_event

pytestmark = pytest.mark.slow

SAMPLES = sorted(p.name for p in EVENTS.glob("*.json") if not p.name.startswith("malformed-truncated"))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=5,
)


def paths(document: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(document, dict):
        for key, value in document.items():
            found += paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found += paths(value, (*prefix, index))
    return found


@st.composite
def messages(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(SAMPLES))
    document = json.loads((EVENTS / name).read_text())
    if "instance-id" in json.dumps(document) and document.get("source") == "aws.ec2":
        document = event_for(name, instance_id(draw(st.integers(1, 3))))
    mutation = draw(st.sampled_from(["none", "delete", "replace", "truncate"]))
    text = json.dumps(document)
    if mutation in ("delete", "replace"):
        path = draw(st.sampled_from(paths(document)))
        mutated = copy.deepcopy(document)
        parent = mutated
        for part in path[:-1]:
            parent = parent[part]
        if mutation == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_values)
        text = json.dumps(mutated)
    elif mutation == "truncate":
        text = text[: draw(st.integers(0, len(text) - 1))]
    return text


def world() -> World:
    return World.of(claim(1), claim(2), rebalance={"default": "notify"})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages(), min_size=1, max_size=6))
def test_with_healthy_ports_every_message_is_acted_on_or_acknowledged(bodies: list[str]) -> None:
    sink = Metrics()
    fakes = world()
    response = process_batch(sqs_event(*bodies), fakes.service(), fakes.clock, sink)
    assert response["batchItemFailures"] == []
    assert sink.count(telemetry.MESSAGES_RECEIVED) == len(bodies)
    assert sink.count(telemetry.QUEUE_LATENCY_MS) + sink.count(telemetry.MESSAGES_MALFORMED) == len(bodies)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages(), min_size=1, max_size=6))
def test_with_a_failing_workflow_only_messages_that_need_it_are_retried(bodies: list[str]) -> None:
    sink = Metrics()
    fakes = world()
    fakes.workflow.failures_left = 10**6
    response = process_batch(sqs_event(*bodies), fakes.service(), fakes.clock, sink)
    failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
    # the same messages, in the same order, with healthy ports: which of them need the workflow?
    probe = world()
    needs_workflow = []
    for body in bodies:
        before = probe.workflow.attempts
        process_batch(sqs_event(body), probe.service(), probe.clock, Metrics())
        needs_workflow.append(probe.workflow.attempts > before)
    assert [f"m{index}" in failed for index in range(len(bodies))] == needs_workflow

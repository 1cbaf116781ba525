"""The fuzz targets: each takes one generated input and returns normally unless Longshore mishandled it.

A target's contract is the project's rule for bad input: every input ends either in a result or in the
documented error for that entry point (`ConfigErrors`, a `longshore validate` exit status with a message,
`MalformedEventError`, an acknowledged SQS message with a log line and a metric, `CommandError`,
`StepError`, click's usage errors). Any other exception, or a broken invariant (an `AssertionError`), is a
crash. The seeds are the project's own valid inputs: `clusters/*.yaml`, the Karpenter fixtures, the sample
EventBridge events in `tests/events/`, and rotation and disruption workflow inputs.
"""

from __future__ import annotations

import copy
import json
import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import yaml
from click.testing import CliRunner
from hypothesis import strategies as st

from longshore.adapters.events.parse import MalformedEventError, parse_event
from longshore.cli.main import main
from longshore.cli.rotate import parse_age
from longshore.config import ConfigErrors, load_cluster_text
from longshore.core import telemetry
from longshore.core.commands import CommandError, DisruptionCommand, RotationRequest
from longshore.wiring import interruption as interruption_handler
from longshore.wiring.workflow_steps import process_step
from longshore.workflow.errors import StepError
from longshore.workflow.state import DisruptionState
from tests.fakes import Metrics
from tests.fuzz.mutate import json_text, mutated_tree, yaml_text
from tests.fuzz.test_trigger_fuzz import check_trigger, trigger_events

ROOT = Path(__file__).resolve().parents[2]


def _yaml_seeds() -> list[list[Any]]:
    files = sorted(ROOT.glob("clusters/*.yaml")) + sorted(ROOT.glob("tests/fixtures/karpenter/**/*.yaml"))
    seeds = []
    for file in files:
        try:
            seeds.append([d for d in yaml.safe_load_all(file.read_text()) if d is not None])
        except yaml.YAMLError:
            continue  # an invalid fixture that is not YAML at all; the text mutations cover such files
    return seeds


def _event_seeds() -> list[Any]:
    seeds = []
    for file in sorted((ROOT / "tests" / "events").glob("*.json")):
        try:
            seeds.append(json.loads(file.read_text()))
        except ValueError:
            continue  # the truncated sample is not JSON; the text mutations cover it
    return seeds


def _rotation_seeds() -> list[Any]:
    rotation = RotationRequest(
        nodes=("node-a", "node-b"), max_unavailable=2, drain_seconds=600, requested_at=1.7e9
    )
    command = DisruptionCommand(
        instance_id="i-0123456789abcdef0",
        reason="drifted",
        node_name="node-a",
        claim_id="claim-node-a",
        replace=True,
    )
    state = DisruptionState(command=command, execution_name="drift-i-0123", drain_seconds=300).to_json()
    return [rotation.to_input(), command.to_input(), state]


def _workflow_seeds() -> list[Any]:
    states = _rotation_seeds()
    steps = [
        "validate",
        "launch_replacement",
        "taint",
        "drain",
        "terminate",
        "finalize",
        "rollback",
        "plan_rotation",
    ]
    return [
        {"step": step, "state": state, "execution": "fuzz"}
        for step in steps
        for state in (states[0] if step == "plan_rotation" else states[2],)
    ]


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    strategy: st.SearchStrategy[Any]
    run: Callable[[Any], None]
    short_examples: int  # examples in the normal test suite


# --- config -------------------------------------------------------------------------------------------------


def run_config(text: str) -> None:
    try:
        load_cluster_text(text, "fuzz.yaml")
    except ConfigErrors as errors:
        assert errors.errors, "ConfigErrors without an error"
        assert all(error.file == "fuzz.yaml" for error in errors), "an error does not name the file"


def run_validate(text: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "cluster.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        for extra in ([], ["--json"]):
            result = CliRunner().invoke(main, ["validate", *extra, str(path)])
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                raise result.exception
            assert result.exit_code in (0, 1), f"exit status {result.exit_code}: {result.output[-500:]}"
            assert "Traceback" not in result.output


# --- events -------------------------------------------------------------------------------------------------


def run_event(text: str) -> None:
    try:
        parse_event(text)
    except MalformedEventError as error:
        assert str(error), "a MalformedEventError without a message"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.message_ids: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message_id = record.__dict__.get("message_id")
        if message_id is not None:
            self.message_ids.append(str(message_id))


def run_sqs(text: str) -> None:
    """A batch of the fuzzed body and a valid one: both are acknowledged, each with a log line and a metric."""
    from tests.interruption.fakes import World, claim, event_for, instance_id, sqs_event

    world = World.of(claim(1))
    valid = json.dumps(event_for("state-change-running.json", instance_id(1)))
    records = _Records()
    root = logging.getLogger()
    root.addHandler(records)
    interruption_handler.logger.setLevel("DEBUG")
    sink = Metrics()
    try:
        response = interruption_handler.process_batch(
            sqs_event(text, valid), world.service(), world.clock, sink
        )
    finally:
        root.removeHandler(records)
        interruption_handler.logger.setLevel("INFO")
    assert response["batchItemFailures"] == [], f"a message was sent to retry: {response}"
    received = sink.count(telemetry.MESSAGES_RECEIVED)
    assert received == 2, f"{received} InterruptionMessagesReceived points for 2 messages"
    assert {"m0", "m1"} <= set(records.message_ids), f"a message without a log line: {records.message_ids}"


# --- rotation and workflow inputs ---------------------------------------------------------------------------


def run_rotation(case: tuple[Any, str]) -> None:
    data, age = case
    try:
        request = RotationRequest.from_input(data)
        request.execution_name()
        json.dumps(request.to_input())
    except CommandError as error:
        assert str(error)
    try:
        state = DisruptionState.from_json(data)
        json.dumps(state.to_json())
        state.command.execution_name()
    except StepError as error:
        assert str(error)
    try:
        parse_age(age)
    except click.BadParameter as error:
        assert error.format_message()


def run_workflow(event: Any) -> None:
    from tests.workflow.fakes import new_world

    world = new_world()
    world.add_node("node-a", "i-0123456789abcdef0")
    world.add_node("node-b", "i-0123456789abcdef1")
    if not isinstance(event, dict):
        return  # the Lambda runtime always hands the handler a JSON object
    try:
        process_step(copy.deepcopy(event), world.ports, Metrics())  # the strategy's values stay as drawn
    except StepError as error:
        assert str(error)


_ages = st.one_of(
    st.sampled_from(["30d", "12h", "90m", "2w", "9" * 5000 + "d", "٣d", "-1d", " 1d ", ""]),
    st.text(max_size=12),
)

TARGETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target("config", yaml_text(_yaml_seeds()), run_config, 300),
        Target("validate-cli", yaml_text(_yaml_seeds()), run_validate, 60),
        Target("event-parser", json_text(_event_seeds()), run_event, 300),
        Target("sqs-handler", json_text(_event_seeds()), run_sqs, 150),
        Target(
            "rotation-input",
            st.tuples(st.sampled_from(_rotation_seeds()).flatmap(mutated_tree), _ages),
            run_rotation,
            300,
        ),
        Target("trigger", trigger_events(), check_trigger, 0),  # short run: test_trigger_fuzz.py
        Target(
            "workflow-step",
            st.sampled_from(_workflow_seeds()).flatmap(lambda seed: mutated_tree(seed, 4)),
            run_workflow,
            150,
        ),
    )
}

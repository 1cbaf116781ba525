"""The workflow-steps Lambda entry: event shape, execution name, metrics per step, clear errors."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from longshore.core import telemetry
from longshore.core.commands import DisruptionCommand
from longshore.wiring.workflow_steps import process_step
from longshore.workflow.errors import StepInputError
from tests.workflow.fakes import World, make_pdb, make_pod, new_world


class RecordingSink:
    def __init__(self) -> None:
        self.points: list[tuple[str, float, dict[str, str]]] = []

    def emit(
        self, name: str, value: float, unit: str = "Count", dimensions: Mapping[str, str] | None = None
    ) -> None:
        assert name in telemetry.ALL_METRICS
        self.points.append((name, value, dict(dimensions or {})))


@pytest.fixture
def world() -> World:
    w = new_world()
    w.add_node("n1", "i-1")
    return w


def run(world: World, sink: RecordingSink, step: str, state: dict[str, object]) -> dict[str, object]:
    return process_step({"step": step, "execution": "expired-i-1", "state": state}, world.ports, sink)


def test_steps_run_with_the_execution_name_and_emit_their_metrics(world: World) -> None:
    sink = RecordingSink()
    world.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}))
    world.cluster.pdbs.append(make_pdb("db", {"app": "db"}, min_available=1))
    command = DisruptionCommand(instance_id="i-1", reason="expired", deadline_epoch=world.clock.now() + 100)

    state = run(world, sink, "validate", command.to_input())
    state = run(world, sink, "taint", state)
    assert world.cluster.nodes["n1"]["metadata"]["annotations"]["longshore.io/disruption"] == "expired-i-1"
    state = run(world, sink, "drain", state)
    assert (telemetry.EVICTIONS_BLOCKED_BY_PDB, 1.0, {}) in sink.points
    while state["drain"]["status"] != "drained":  # type: ignore[index]
        world.clock.advance(state["drain"]["waitSeconds"])  # type: ignore[index]
        state = run(world, sink, "drain", state)
    durations = [v for name, v, _ in sink.points if name == telemetry.DRAIN_DURATION_S]
    assert len(durations) == 1 and 70 <= durations[0] <= 110
    state = run(world, sink, "finalize", state)
    assert (telemetry.NODES_DISRUPTED, 1.0, {telemetry.DIM_REASON: "expired"}) in sink.points


@pytest.mark.parametrize(
    ("event", "needle"),
    [
        ({"state": {}}, "field 'step' has value None"),
        ({"step": "validate", "state": []}, "field 'state' has value []"),
        ({"step": "validate", "state": {"instanceId": "i-1"}}, "field 'reason' has value None"),
    ],
)
def test_bad_events_are_named(world: World, event: dict[str, object], needle: str) -> None:
    with pytest.raises(StepInputError) as error:
        process_step(event, world.ports, RecordingSink())
    assert needle in str(error.value)

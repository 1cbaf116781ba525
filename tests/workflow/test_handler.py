"""The workflow-steps Lambda entry: event shape, execution name, metrics per step, clear errors."""

from __future__ import annotations

import pytest

from longshore.core import telemetry
from longshore.core.commands import DisruptionCommand
from longshore.wiring.workflow_steps import process_step
from longshore.workflow.errors import StepInputError
from tests.fakes import Metrics
from tests.workflow.fakes import World, make_pdb, make_pod, new_world


@pytest.fixture
def world() -> World:
    w = new_world()
    w.add_node("n1", "i-1")
    return w


def run(world: World, sink: Metrics, step: str, state: dict[str, object]) -> dict[str, object]:
    return process_step({"step": step, "execution": "expired-i-1", "state": state}, world.ports, sink)


def test_steps_run_with_the_execution_name_and_emit_their_metrics(world: World) -> None:
    sink = Metrics()
    world.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}))
    world.cluster.pdbs.append(make_pdb("db", {"app": "db"}, min_available=1))
    command = DisruptionCommand(instance_id="i-1", reason="expired", deadline_epoch=world.clock.now() + 100)

    state = run(world, sink, "validate", command.to_input())
    state = run(world, sink, "taint", state)
    assert world.cluster.nodes["n1"]["metadata"]["annotations"]["longshore.io/disruption"] == "expired-i-1"
    state = run(world, sink, "drain", state)
    assert sink.emitted(telemetry.EVICTIONS_BLOCKED_BY_PDB, 1.0)
    while state["drain"]["status"] != "drained":  # type: ignore[index]
        world.clock.advance(state["drain"]["waitSeconds"])  # type: ignore[index]
        state = run(world, sink, "drain", state)
    durations = [p.value for p in sink.named(telemetry.DRAIN_DURATION_S)]
    assert len(durations) == 1 and 70 <= durations[0] <= 110
    state = run(world, sink, "finalize", state)
    assert sink.emitted(telemetry.NODES_DISRUPTED, 1.0, {telemetry.DIM_REASON: "expired"})


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
        process_step(event, world.ports, Metrics())
    assert needle in str(error.value)

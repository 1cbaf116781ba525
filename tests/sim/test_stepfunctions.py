"""The virtual-time ASL executor: the real disruption and rotation definitions end to end on fakes, and the
interpreter's semantics (Retry, Catch, Map concurrency, Wait forms, timeouts, idempotent names) on small
documents whose outcome is known from the Step Functions documentation."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.core import telemetry
from longshore.core.commands import DisruptionCommand, RotationRequest
from longshore.workflow.context import WorkflowLimits
from longshore_sim.asl import SimulatorError
from longshore_sim.clock import VirtualClock
from longshore_sim.sfn_workflows import SimulatedWorkflows, steps_invoker
from longshore_sim.stepfunctions import StepFunctionsSimulator
from tests.workflow.fakes import START, World, make_pdb, make_pod, new_world, run_clock

DISRUPTED = ("karpenter.sh/disrupted", "NoSchedule")
LAMBDA = "arn:aws:lambda:us-east-1:123456789012:function:test"


@pytest.fixture
def world() -> World:
    w = new_world()
    for index in (1, 2, 3):
        w.add_node(f"n{index}", f"i-{index}")
        w.cluster.add_pod(make_pod(f"app-{index}", f"n{index}", labels={"app": "web"}))
        w.cluster.add_pod(make_pod(f"agent-{index}", f"n{index}", owner_kind="DaemonSet"))
    return w


def wire(
    world: World, sink: MemoryMetricsSink | None = None
) -> tuple[StepFunctionsSimulator, SimulatedWorkflows]:
    simulator = StepFunctionsSimulator(world.clock, steps_invoker(world.ports, sink))
    return simulator, SimulatedWorkflows(simulator)


# -- the real definitions ------------------------------------------------------------------------------------


def test_surge_disruption_runs_to_the_end_with_the_replacement_first(world: World) -> None:
    sink = MemoryMetricsSink()
    simulator, workflows = wire(world, sink)
    command = DisruptionCommand(instance_id="i-1", reason="drifted", replace=True, requested_at=START)

    result = workflows.start(command)
    run_clock(world.clock, simulator)

    execution = simulator.execution(result.execution_name, workflows.disruption_arn)
    assert result.started and execution.status == "SUCCEEDED", execution.cause
    assert execution.output["outcome"] == "disrupted"
    assert "n1" not in world.cluster.nodes and world.instances.state("i-1") == "terminated"
    replacement = world.claims.get(execution.output["replacement"]["claimId"])
    assert replacement is not None and replacement.initialized_at is not None
    (tainted_at,) = world.cluster.times("taint", "n1")
    assert replacement.initialized_at <= tainted_at
    # the Wait states took virtual time: 60 s replacement, drain grace, 20 s shutdown polled every 10 s
    assert execution.stopped_at is not None and execution.stopped_at - START >= 60 + 20
    assert sink.total(telemetry.NODES_DISRUPTED, Reason="drifted") == 1


def test_a_second_start_with_the_same_name_is_refused(world: World) -> None:
    simulator, workflows = wire(world)
    command = DisruptionCommand(instance_id="i-2", reason="empty", requested_at=START)
    assert workflows.start(command).started
    assert not workflows.start(command).started
    run_clock(world.clock, simulator)
    assert len(workflows.disruptions()) == 1 and world.instances.state("i-2") == "terminated"


def test_pdb_blocks_the_drain_until_the_deadline_then_the_pod_is_deleted(world: World) -> None:
    world.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}, grace=30))
    world.cluster.pdbs.append(make_pdb("db", {"app": "db"}, min_available=1))
    sink = MemoryMetricsSink()
    simulator, workflows = wire(world, sink)
    deadline = START + 600
    command = DisruptionCommand(
        instance_id="i-1", reason="expired", deadline_epoch=deadline, requested_at=START
    )

    workflows.start(command)
    run_clock(world.clock, simulator)

    execution = workflows.disruptions()[0]
    assert execution.status == "SUCCEEDED", execution.cause
    assert "default/db-0" in world.cluster.blocked and "default/db-0" not in world.cluster.evicted
    (deleted_at,) = world.cluster.times("delete-pod", "default/db-0")
    assert deadline - 30 <= deleted_at <= deadline
    assert world.instances.state("i-1") == "terminated"
    assert sink.total(telemetry.EVICTIONS_BLOCKED_BY_PDB) >= 1


def test_a_failure_before_terminate_removes_the_taint(world: World) -> None:
    world.limits = WorkflowLimits(max_drain_without_deadline_s=300)
    world.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}))
    world.cluster.pdbs.append(make_pdb("db", {"app": "db"}, max_unavailable=0))
    simulator, workflows = wire(world)

    workflows.start(DisruptionCommand(instance_id="i-1", reason="drifted", requested_at=START))
    run_clock(world.clock, simulator)

    execution = workflows.disruptions()[0]
    assert execution.status == "FAILED" and execution.error == "DrainTimedOutError"
    assert "did not drain" in (execution.cause or "")
    assert world.cluster.times("taint", "n1") and world.cluster.times("untaint", "n1")
    assert DISRUPTED not in world.cluster.taints("n1")
    assert world.instances.state("i-1") == "running"
    # the rollback happened once the 300 s bound passed, not before
    (untainted_at,) = world.cluster.times("untaint", "n1")
    assert untainted_at - world.cluster.times("taint", "n1")[0] >= 300


def test_rotation_of_three_nodes_keeps_at_most_one_disrupting(world: World) -> None:
    simulator, workflows = wire(world)
    request = RotationRequest(nodes=("n1", "n2", "n3"), max_unavailable=1, requested_at=START)

    result = workflows.start_rotation(request)
    run_clock(world.clock, simulator)

    rotation = simulator.execution(result.execution_name, workflows.rotation_arn)
    assert rotation.status == "SUCCEEDED", rotation.cause
    children = workflows.disruptions()
    assert len(children) == 3 and {c.status for c in children} == {"SUCCEEDED"}
    assert all(c.parent is rotation for c in children)
    assert world.cluster.max_tainted == 1
    order = [(what, name) for _, what, name in world.cluster.log if what in ("taint", "delete-node")]
    assert order[:2] == [("taint", "n1"), ("delete-node", "n1")]  # the canary finished first
    assert [what for what, _ in order] == ["taint", "delete-node"] * 3
    # one at a time: each node's disruption started only after the previous one ended
    spans = sorted((c.started_at, c.stopped_at or 0.0) for c in children)
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans))


def test_rotation_with_two_unavailable_overlaps_the_rest(world: World) -> None:
    world.add_node("n4", "i-4")
    simulator, workflows = wire(world)
    request = RotationRequest(
        nodes=("n1", "n2", "n3", "n4"), max_unavailable=2, surge=False, requested_at=START
    )

    workflows.start_rotation(request)
    run_clock(world.clock, simulator)

    assert workflows.rotations()[0].status == "SUCCEEDED"
    assert world.cluster.max_tainted == 2
    assert not any(name in world.cluster.nodes for name in ("n1", "n2", "n3", "n4"))


def test_rotation_refusing_a_foreign_node_fails_without_children(world: World) -> None:
    world.add_node("stranger", "i-9", claimed=False, owned=False)
    simulator, workflows = wire(world)

    workflows.start_rotation(RotationRequest(nodes=("n1", "stranger"), requested_at=START))
    run_clock(world.clock, simulator)

    rotation = workflows.rotations()[0]
    assert rotation.status == "FAILED" and rotation.error == "NotOwnedError"
    assert "stranger" in (rotation.cause or "") and workflows.disruptions() == ()


def test_a_failed_child_fails_the_rotation_with_task_failed(world: World) -> None:
    world.replacements.fail = True
    simulator, workflows = wire(world)

    workflows.start_rotation(RotationRequest(nodes=("n1", "n2"), requested_at=START))
    run_clock(world.clock, simulator)

    rotation = workflows.rotations()[0]
    assert rotation.status == "FAILED" and rotation.error == "States.TaskFailed"
    assert "ReplacementFailedError" in (rotation.cause or "")
    assert len(workflows.disruptions()) == 1  # the canary failed; the rest never started
    assert world.cluster.nodes.keys() >= {"n1", "n2"}


# -- interpreter semantics on small documents ---------------------------------------------------------------


class Flaky:
    """A Lambda that fails `failures` times with `error`, recording the virtual time of each call."""

    def __init__(self, clock: VirtualClock, failures: int, error: type[Exception] = RuntimeError) -> None:
        self.clock, self.failures, self.error = clock, failures, error
        self.calls: list[float] = []

    def __call__(self, resource: str, payload: Any) -> Any:
        self.calls.append(self.clock.now())
        if len(self.calls) <= self.failures:
            raise self.error(f"attempt {len(self.calls)} failed")
        return {"ok": True, "echo": payload}


class TransientError(Exception):
    pass


def task(**extra: Any) -> dict[str, Any]:
    return {"Type": "Task", "Resource": LAMBDA, **extra}


def test_retry_backs_off_in_virtual_time() -> None:
    clock = VirtualClock(START)
    flaky = Flaky(clock, 3, TransientError)
    simulator = StepFunctionsSimulator(clock, flaky)
    retry = [
        {
            "ErrorEquals": ["TransientError"],
            "IntervalSeconds": 2,
            "MaxAttempts": 4,
            "BackoffRate": 2.0,
            "MaxDelaySeconds": 5,
        }
    ]
    definition = {"StartAt": "T", "States": {"T": task(Retry=retry, End=True)}}

    assert simulator.start_execution("x", definition, {"a": 1})
    run_clock(clock, simulator)

    assert [t - START for t in flaky.calls] == [0, 2, 6, 11]  # 2, 4, then 8 capped at 5
    execution = simulator.execution("x")
    assert execution.status == "SUCCEEDED" and execution.output == {"ok": True, "echo": {"a": 1}}


def test_catch_puts_the_error_at_its_result_path_and_retry_gives_up() -> None:
    clock = VirtualClock(START)
    simulator = StepFunctionsSimulator(clock, Flaky(clock, 10, TransientError))
    definition = {
        "StartAt": "T",
        "States": {
            "T": task(
                Retry=[{"ErrorEquals": ["TransientError"], "MaxAttempts": 1, "IntervalSeconds": 1}],
                Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Done"}],
                Next="Done",
            ),
            "Done": {
                "Type": "Pass",
                "Parameters": {"kept.$": "$.keep", "error.$": "$.error.Error"},
                "End": True,
            },
        },
    }
    simulator.start_execution("x", definition, {"keep": "me"})
    run_clock(clock, simulator)

    execution = simulator.execution("x")
    assert execution.status == "SUCCEEDED"
    assert execution.output == {"kept": "me", "error": "TransientError"}


def test_map_respects_max_concurrency_in_virtual_time() -> None:
    clock = VirtualClock(START)
    simulator = StepFunctionsSimulator(clock, lambda resource, payload: payload)
    definition = {
        "StartAt": "Each",
        "States": {
            "Each": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "MaxConcurrencyPath": "$.limit",
                "ItemSelector": {"value.$": "$$.Map.Item.Value", "index.$": "$$.Map.Item.Index"},
                "ItemProcessor": {
                    "StartAt": "Sleep",
                    "States": {
                        "Sleep": {"Type": "Wait", "SecondsPath": "$.value", "Next": "Echo"},
                        "Echo": task(End=True),
                    },
                },
                "ResultPath": "$.results",
                "End": True,
            }
        },
    }
    simulator.start_execution("x", definition, {"items": [10, 10, 10, 10, 10], "limit": 2})
    run_clock(clock, simulator)

    execution = simulator.execution("x")
    assert execution.status == "SUCCEEDED"
    assert [r["index"] for r in execution.output["results"]] == [0, 1, 2, 3, 4]
    assert execution.stopped_at == START + 30  # ceil(5 / 2) rounds of 10 s


def test_choice_wait_timestamp_and_fail_paths() -> None:
    clock = VirtualClock(START)
    simulator = StepFunctionsSimulator(clock, lambda resource, payload: payload)
    definition = {
        "StartAt": "Route",
        "States": {
            "Route": {
                "Type": "Choice",
                "Choices": [
                    {
                        "And": [
                            {"Variable": "$.n", "NumericGreaterThanEquals": 3},
                            {"Not": {"Variable": "$.tag", "StringEquals": "skip"}},
                        ],
                        "Next": "Until",
                    },
                    {"Variable": "$.missing", "IsPresent": False, "Next": "Bad"},
                ],
            },
            "Until": {"Type": "Wait", "TimestampPath": "$.at", "Next": "Ok"},
            "Ok": {"Type": "Succeed", "OutputPath": "$.n"},
            "Bad": {"Type": "Fail", "ErrorPath": "$.why", "Cause": "n too small"},
        },
    }
    simulator.start_execution("big", definition, {"n": 5, "tag": "go", "at": "2026-01-01T01:00:00Z"})
    simulator.start_execution("small", definition, {"n": 1, "tag": "go", "why": "TooSmall"})
    run_clock(clock, simulator)

    big, small = simulator.execution("big"), simulator.execution("small")
    assert big.status == "SUCCEEDED" and big.output == 5 and big.stopped_at == START + 3600
    assert small.status == "FAILED" and (small.error, small.cause) == ("TooSmall", "n too small")


def test_execution_timeout_and_missing_paths() -> None:
    clock = VirtualClock(START)
    simulator = StepFunctionsSimulator(clock, lambda resource, payload: payload)
    slow = {
        "StartAt": "W",
        "TimeoutSeconds": 100,
        "States": {"W": {"Type": "Wait", "Seconds": 1000, "End": True}},
    }
    broken = {"StartAt": "P", "States": {"P": {"Type": "Pass", "InputPath": "$.nope", "End": True}}}
    simulator.start_execution("slow", slow, {})
    simulator.start_execution("broken", broken, {})
    run_clock(clock, simulator)

    slow_run = simulator.execution("slow")
    assert slow_run.status == "TIMED_OUT" and slow_run.stopped_at == START + 100
    broken_run = simulator.execution("broken")
    assert (
        broken_run.status == "FAILED"
        and broken_run.error == "States.Runtime"
        and "$.nope" in (broken_run.cause or "")
    )


@pytest.mark.slow
def test_history_limit_fails_a_runaway_execution() -> None:
    clock = VirtualClock(START)
    simulator = StepFunctionsSimulator(clock, lambda resource, payload: payload)
    loop = {"StartAt": "A", "States": {"A": {"Type": "Wait", "Seconds": 1, "Next": "A"}}}
    simulator.start_execution("loop", loop, {})
    run_clock(clock, simulator, limit_s=20_000)

    execution = simulator.execution("loop")
    assert execution.status == "FAILED" and execution.error == "States.Runtime"
    assert "25000 history events" in (execution.cause or "")


def test_unsupported_documents_are_refused_before_running() -> None:
    simulator = StepFunctionsSimulator(VirtualClock(START), lambda resource, payload: payload)
    with pytest.raises(SimulatorError, match="'Type' has value 'Parallel'"):
        simulator.start_execution(
            "p", {"StartAt": "P", "States": {"P": {"Type": "Parallel", "End": True}}}, {}
        )
    with pytest.raises(SimulatorError, match="transition to 'Nowhere'"):
        simulator.start_execution(
            "n", {"StartAt": "P", "States": {"P": {"Type": "Pass", "Next": "Nowhere"}}}, {}
        )
    assert simulator.executions() == ()

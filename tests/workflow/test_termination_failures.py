"""Terminate and CheckTermination failing, through the real disruption definition on the virtual ASL executor.

Outcomes asserted: the execution fails with the original error (the failed-executions alarm sees it), a
Warning Event says why on the node, and the node is never left cordoned and drained without a word: when the
instance is still running (EC2 refused to terminate it) the node is untainted and returns to service; when
the instance is going away anyway (stuck in shutting-down, or reclaimed by AWS) the taint stays, so no pod is
scheduled onto a dying node.
"""

from __future__ import annotations

import pytest

from longshore.core.commands import DisruptionCommand
from longshore_sim.sfn_execution import Execution
from longshore_sim.sfn_workflows import SimulatedWorkflows, steps_invoker
from longshore_sim.stepfunctions import StepFunctionsSimulator
from tests.workflow.fakes import START, World, make_pod, new_world, run_clock

DISRUPTED = ("karpenter.sh/disrupted", "NoSchedule")


@pytest.fixture
def world() -> World:
    w = new_world()
    for index in (1, 2):
        w.add_node(f"n{index}", f"i-{index}")
        w.cluster.add_pod(make_pod(f"app-{index}", f"n{index}", labels={"app": "web"}))
        w.cluster.add_pod(make_pod(f"agent-{index}", f"n{index}", owner_kind="DaemonSet"))
    return w


def _disrupt(world: World, command: DisruptionCommand) -> Execution:
    simulator = StepFunctionsSimulator(world.clock, steps_invoker(world.ports))
    workflows = SimulatedWorkflows(simulator)
    started = workflows.start(command)
    run_clock(world.clock, simulator, limit_s=6 * 3600)
    execution = simulator.execution(started.execution_name, workflows.disruption_arn)
    assert execution.done, "the execution must end"
    return execution


def test_ec2_refusing_to_terminate_fails_the_execution_and_returns_the_node_to_service(world: World) -> None:
    world.instances.refuse_terminate.add("i-1")
    execution = _disrupt(world, DisruptionCommand(instance_id="i-1", reason="drifted", requested_at=START))

    assert execution.status == "FAILED"
    assert execution.error == "ClientError" and "UnauthorizedOperation" in (execution.cause or "")
    assert world.instances.state("i-1") == "running"
    assert DISRUPTED not in world.cluster.taints("n1"), "a running node is not left cordoned forever"
    assert "longshore.io/disruption" not in world.cluster.nodes["n1"]["metadata"]["annotations"]
    assert "DisruptionFailed" in world.cluster.event_reasons("n1")
    assert world.claims.get("claim-n1") is not None, "the node still exists: its claim is kept"
    assert world.cluster.evicted == ["default/app-1"], "the drain ran; only then was termination tried"


def test_an_instance_stuck_shutting_down_fails_the_execution_and_keeps_the_node_cordoned(
    world: World,
) -> None:
    world.instances.stuck_shutting_down.add("i-1")
    execution = _disrupt(world, DisruptionCommand(instance_id="i-1", reason="expired", requested_at=START))

    assert execution.status == "FAILED"
    assert execution.error == "TerminationTimedOutError"
    assert "shutting-down" in (execution.cause or "")
    assert world.instances.state("i-1") == "shutting-down"
    assert DISRUPTED in world.cluster.taints("n1"), "no pod may be scheduled onto a node that is going away"
    assert "DisruptionFailed" in world.cluster.event_reasons("n1")


def test_a_reclaimed_instance_whose_termination_is_refused_keeps_its_taint(world: World) -> None:
    """A spot interruption: AWS takes the instance whatever we do, so the node must stay cordoned."""
    world.instances.refuse_terminate.add("i-1")
    command = DisruptionCommand(
        instance_id="i-1", reason="interruption", urgent=True, deadline_epoch=START + 120, requested_at=START
    )
    execution = _disrupt(world, command)

    assert execution.status == "FAILED" and execution.error == "ClientError"
    assert DISRUPTED in world.cluster.taints("n1")
    assert "DisruptionFailed" in world.cluster.event_reasons("n1")
    assert world.cluster.pods_on("n1") == ["default/agent-1"], "drained before the instance dies"

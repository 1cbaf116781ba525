"""A spot interruption warning for a node a voluntary disruption is already draining: the reclaim wins.

Through the real disruption definition on the virtual ASL executor. Outcomes asserted: the reclaim deadline
(two minutes) is applied to the drain, so a pod a PodDisruptionBudget protects is deleted by the deadline
rather than killed with the instance; the node is drained and its instance terminated; the interruption
execution succeeds; the voluntary execution yields (succeeds with outcome `superseded`) instead of failing,
so neither trips the failed-executions alarm.
"""

from __future__ import annotations

import pytest

from longshore.core.commands import DisruptionCommand
from longshore_sim.sfn_execution import Execution
from longshore_sim.sfn_workflows import SimulatedWorkflows, steps_invoker
from longshore_sim.stepfunctions import StepFunctionsSimulator
from tests.workflow.fakes import START, World, make_pdb, make_pod, new_world, run_clock

RECLAIM_NOTICE_S = 120.0


@pytest.fixture
def world() -> World:
    w = new_world()
    for index in (1, 2):
        w.add_node(f"n{index}", f"i-{index}")
        w.cluster.add_pod(make_pod(f"app-{index}", f"n{index}", labels={"app": "web"}))
        w.cluster.add_pod(make_pod(f"agent-{index}", f"n{index}", owner_kind="DaemonSet"))
    # db-0 may never be evicted voluntarily: its budget allows no disruption
    w.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}, grace=30))
    w.cluster.pdbs.append(make_pdb("db", {"app": "db"}, max_unavailable=0))
    return w


def _reclaim(at: float) -> DisruptionCommand:
    return DisruptionCommand(
        instance_id="i-1",
        reason="interruption",
        node_name="n1",
        claim_id="claim-n1",
        urgent=True,
        deadline_epoch=at + RECLAIM_NOTICE_S,
        requested_at=at,
    )


def _run_both(
    world: World, voluntary: DisruptionCommand, warning_after_s: float
) -> tuple[Execution, Execution]:
    simulator = StepFunctionsSimulator(world.clock, steps_invoker(world.ports))
    workflows = SimulatedWorkflows(simulator)
    first = workflows.start(voluntary)
    run_clock(world.clock, simulator, limit_s=START + warning_after_s - world.clock.now())
    reclaim = _reclaim(world.clock.now())
    second = workflows.start(reclaim)
    assert second.started
    run_clock(world.clock, simulator, limit_s=6 * 3600)
    return (
        simulator.execution(first.execution_name, workflows.disruption_arn),
        simulator.execution(second.execution_name, workflows.disruption_arn),
    )


def test_a_reclaim_during_a_consolidation_drain_drains_by_the_reclaim_deadline(world: World) -> None:
    voluntary = DisruptionCommand(instance_id="i-1", reason="underutilized", requested_at=START)
    consolidation, interruption = _run_both(world, voluntary, warning_after_s=60)

    warned_at = START + 60
    assert interruption.status == "SUCCEEDED", interruption.cause
    (deleted_at,) = world.cluster.times("delete-pod", "default/db-0")
    assert deleted_at <= warned_at + RECLAIM_NOTICE_S, (
        "the reclaim deadline forced the blocked pod out in time"
    )
    assert world.cluster.evicted == ["default/app-1"]
    assert world.instances.state("i-1") == "terminated" and "n1" not in world.cluster.nodes
    assert consolidation.status == "SUCCEEDED", consolidation.cause
    assert consolidation.output["outcome"] == "superseded"
    assert world.cluster.pods_on("n2") == ["default/agent-2", "default/app-2"], "n2 untouched"


def test_a_reclaim_while_a_surge_waits_for_its_replacement_wins_and_the_surge_yields(world: World) -> None:
    """The warning comes while the surge waits for its replacement (not tainted yet); the replacement is
    ready while the reclaim drain runs, and the surge's Taint finds the node held by the reclaim."""
    world.replacements.ready_after = 60.0
    voluntary = DisruptionCommand(instance_id="i-1", reason="drifted", replace=True, requested_at=START)
    drift, interruption = _run_both(world, voluntary, warning_after_s=30)

    warned_at = START + 30
    assert interruption.status == "SUCCEEDED", interruption.cause
    (deleted_at,) = world.cluster.times("delete-pod", "default/db-0")
    assert deleted_at <= warned_at + RECLAIM_NOTICE_S
    assert world.instances.state("i-1") == "terminated"
    assert drift.status == "SUCCEEDED", drift.cause
    assert drift.output["outcome"] == "superseded"

"""A scheduled change days away: PDB and `do-not-disrupt` are honoured until the real deadline.

Through the real disruption definition on the virtual ASL executor. A Health event's deadline three days out
is longer than one execution may drain (`WorkflowLimits.max_execution_drain_s`, 20 h): the drain continues
in chained executions (`<name>-c1`, `-c2`, ...) instead of clamping the deadline. Outcomes asserted: the pod
whose PodDisruptionBudget allows no disruption and the `do-not-disrupt` pod stay on the node until their
grace period before the deadline, then go; the node is terminated before the deadline; every execution of
the chain succeeds and the node is held by one execution at a time.
"""

from __future__ import annotations

import pytest

from longshore.core.commands import DisruptionCommand
from longshore_sim.sfn_workflows import SimulatedWorkflows, steps_invoker
from longshore_sim.stepfunctions import StepFunctionsSimulator
from tests.workflow.fakes import START, make_pdb, make_pod, new_world, run_clock

DAY = 86_400.0


@pytest.mark.slow
def test_a_three_day_deadline_is_honoured_across_chained_executions() -> None:
    world = new_world()
    world.add_node("n1", "i-1")
    world.add_node("n2", "i-2")
    world.cluster.add_pod(make_pod("web-1", "n1", labels={"app": "web"}))
    world.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}, grace=30))
    world.cluster.pdbs.append(make_pdb("db", {"app": "db"}, max_unavailable=0))
    world.cluster.add_pod(make_pod("batch", "n1", annotations={"karpenter.sh/do-not-disrupt": "true"}))
    deadline = START + 3 * DAY
    command = DisruptionCommand(
        instance_id="i-1",
        reason="interruption",
        node_name="n1",
        claim_id="claim-n1",
        urgent=True,
        deadline_epoch=deadline,
        requested_at=START,
    )
    simulator = StepFunctionsSimulator(world.clock, steps_invoker(world.ports))
    workflows = SimulatedWorkflows(simulator)

    assert workflows.start(command).started
    run_clock(world.clock, simulator, limit_s=4 * DAY)

    for pod in ("default/db-0", "default/batch"):
        (deleted_at,) = world.cluster.times("delete-pod", pod)
        assert deadline - 30 <= deleted_at <= deadline, f"{pod} kept until its grace before the deadline"
    assert world.cluster.evicted == ["default/web-1"]
    assert world.instances.state("i-1") == "terminated" and "n1" not in world.cluster.nodes
    chain = workflows.disruptions()
    assert [e.name for e in chain] == ["interruption-i-1"] + [
        f"interruption-i-1-c{n}" for n in range(1, len(chain))
    ]
    assert len(chain) >= 4 and all(e.status == "SUCCEEDED" for e in chain), [e.cause for e in chain]
    assert world.cluster.times("untaint", "n1") == []
    assert world.cluster.pods_on("n2") == []

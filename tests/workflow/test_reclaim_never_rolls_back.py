"""A reclaim drain (reason `interruption`) whose steps fail is never rolled back into service.

Through the real disruption definition on the virtual ASL executor, over the stateful fakes: the Kubernetes
API refuses pod lists for longer than a Task's retries. Outcomes asserted: the node keeps its
`karpenter.sh/disrupted` taint throughout (it is never untainted, so no new pod lands on a dying instance);
the execution goes round again until its deadline and drains the node once the API is back; when the outage
outlasts the deadline the execution fails with the node still cordoned, and a later warning for the same node
starts a new attempt (`<name>-a2`) instead of being refused by the used name.
"""

from __future__ import annotations

from longshore.core.commands import DisruptionCommand
from longshore_sim.sfn_workflows import SimulatedWorkflows, steps_invoker
from longshore_sim.stepfunctions import StepFunctionsSimulator
from tests.workflow.fakes import START, World, make_pdb, make_pod, new_world, run_clock

NOTICE_S = 120.0
TAINT = ("karpenter.sh/disrupted", "NoSchedule")


def _world() -> World:
    world = new_world()
    world.add_node("n1", "i-1")
    world.cluster.add_pod(make_pod("app-1", "n1", labels={"app": "web"}))
    world.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}))
    world.cluster.pdbs.append(make_pdb("db", {"app": "db"}, max_unavailable=0))
    return world


def _reclaim(at: float) -> DisruptionCommand:
    return DisruptionCommand(
        instance_id="i-1",
        reason="interruption",
        node_name="n1",
        claim_id="claim-n1",
        urgent=True,
        deadline_epoch=at + NOTICE_S,
        requested_at=at,
    )


def test_an_api_outage_longer_than_the_retries_keeps_the_node_cordoned_and_drains_it_when_back() -> None:
    world = _world()
    world.cluster.fail_calls["list_pods"] = 12  # > the 5 tries of one Task: the first Drain fails
    simulator = StepFunctionsSimulator(world.clock, steps_invoker(world.ports))
    workflows = SimulatedWorkflows(simulator)

    started = workflows.start(_reclaim(START))
    run_clock(world.clock, simulator, limit_s=3600)

    execution = simulator.execution(started.execution_name, workflows.disruption_arn)
    assert execution.status == "SUCCEEDED", execution.cause
    assert world.cluster.times("untaint", "n1") == [], "a reclaim never puts the node back in service"
    for pod in ("default/app-1", "default/db-0"):
        (removed_at,) = world.cluster.times("evict", pod) + world.cluster.times("delete-pod", pod)
        assert removed_at <= START + NOTICE_S, f"{pod} is out by the reclaim deadline"
    assert world.instances.state("i-1") == "terminated" and "n1" not in world.cluster.nodes


def test_an_outage_past_the_deadline_fails_cordoned_and_a_later_warning_starts_a_new_attempt() -> None:
    world = _world()
    world.cluster.fail_calls["list_pods"] = 10_000
    simulator = StepFunctionsSimulator(world.clock, steps_invoker(world.ports))
    workflows = SimulatedWorkflows(simulator)

    first = workflows.start(_reclaim(START))
    run_clock(world.clock, simulator, limit_s=3600)

    failed = simulator.execution(first.execution_name, workflows.disruption_arn)
    assert failed.status == "FAILED"
    assert failed.stopped_at is not None and failed.stopped_at <= START + NOTICE_S + 60
    assert TAINT in world.cluster.taints("n1") and world.cluster.times("untaint", "n1") == []

    world.cluster.fail_calls["list_pods"] = 0
    again = workflows.start(_reclaim(world.clock.now()))
    assert again.started and again.execution_name == "interruption-i-1-a2"
    run_clock(world.clock, simulator, limit_s=3600)
    retried = simulator.execution(again.execution_name, workflows.disruption_arn)
    assert retried.status == "SUCCEEDED", retried.cause
    assert world.cluster.pods_on("n1") == [] and world.instances.state("i-1") == "terminated"
    assert not workflows.start(_reclaim(world.clock.now())).started, "a succeeded attempt is final"

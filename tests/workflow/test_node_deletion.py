"""`kubectl delete node` and a Node that vanishes: the instance never leaks, no pod is lost.

The lifecycle (`services.lifecycle.Lifecycle`) over the stateful workflow fakes, with the real disruption
definition on the virtual ASL executor. Outcomes asserted: a managed Node carries the `karpenter.sh/termination`
finalizer; deleting it drains it (evictions, PDB honoured), terminates its instance, then the Node goes and
the claim is forgotten; a Node that disappears anyway (finalizer stripped by hand) leads to the instance's
termination and the claim's removal.
"""

from __future__ import annotations

from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.services.lifecycle import Lifecycle
from longshore_sim.sfn_workflows import SimulatedWorkflows, steps_invoker
from longshore_sim.stepfunctions import StepFunctionsSimulator
from tests.adapters.conftest import cluster_config
from tests.workflow.fakes import World, make_pdb, make_pod, new_world, run_clock

FINALIZER = "karpenter.sh/termination"


def _lifecycle(world: World, workflows: SimulatedWorkflows | None) -> Lifecycle:
    return Lifecycle(
        store=world.claims,
        instances=world.instances,
        cluster=world.cluster,
        config=cluster_config(),
        metrics=MemoryMetricsSink(),
        workflow=workflows,
    )


def _world() -> World:
    world = new_world()
    for n in (1, 2):
        world.add_node(f"n{n}", f"i-{n}")
        world.cluster.add_pod(make_pod(f"web-{n}", f"n{n}", labels={"app": "web"}))
    world.cluster.pdbs.append(make_pdb("web", {"app": "web"}, min_available=1))
    return world


def test_a_deleted_node_is_drained_and_its_instance_terminated_before_the_node_goes() -> None:
    world = _world()
    simulator = StepFunctionsSimulator(world.clock, steps_invoker(world.ports))
    workflows = SimulatedWorkflows(simulator)
    lifecycle = _lifecycle(world, workflows)

    lifecycle.reconcile(world.cluster.list_nodes(), world.clock.now())
    assert all(n["metadata"]["finalizers"] == [FINALIZER] for n in world.cluster.nodes.values())

    world.cluster.kubectl_delete_node("n1")
    assert "n1" in world.cluster.nodes, "the finalizer holds the Node"
    lifecycle.reconcile(world.cluster.list_nodes(), world.clock.now())
    run_clock(world.clock, simulator, limit_s=3600)

    (execution,) = workflows.disruptions()
    assert (execution.name, execution.status) == ("deleted-i-1", "SUCCEEDED"), execution.cause
    assert world.cluster.evicted == ["default/web-1"] and world.cluster.deleted == [], "evicted, not deleted"
    (evicted_at,) = world.cluster.times("evict", "default/web-1")
    (gone_at,) = world.cluster.times("delete-node", "n1")
    assert evicted_at < gone_at
    assert world.instances.state("i-1") == "terminated"
    assert "n1" not in world.cluster.nodes and world.claims.get("claim-n1") is None
    assert world.instances.state("i-2") == "running" and world.claims.get("claim-n2") is not None


def test_a_node_that_vanishes_anyway_takes_its_instance_and_claim_with_it() -> None:
    world = _world()
    lifecycle = _lifecycle(world, None)
    del world.cluster.nodes["n1"]  # finalizer stripped by hand, then deleted

    outcome = lifecycle.reconcile(world.cluster.list_nodes(), world.clock.now())

    assert outcome.claim_ids("node_gone") == ("claim-n1",)
    assert world.instances.state("i-1") in ("shutting-down", "terminated")
    assert world.claims.get("claim-n1") is None
    assert world.instances.state("i-2") == "running" and world.claims.get("claim-n2") is not None

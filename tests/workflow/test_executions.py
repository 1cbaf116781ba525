"""The whole disruption and rotation definitions executed by moto's ASL interpreter on virtual time."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from longshore.core.commands import DisruptionCommand, RotationRequest
from longshore.wiring import workflow_steps
from tests.workflow.fakes import START, World, make_pdb, make_pod, new_world
from tests.workflow.sfn_harness import StateMachines, state_machines

DISRUPTED = ("karpenter.sh/disrupted", "NoSchedule")
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]


@pytest.fixture
def world() -> World:
    w = new_world()
    for index in (1, 2, 3):
        w.add_node(f"n{index}", f"i-{index}")
        w.cluster.add_pod(make_pod(f"app-{index}", f"n{index}", labels={"app": "web"}))
        w.cluster.add_pod(make_pod(f"agent-{index}", f"n{index}", owner_kind="DaemonSet"))
    return w


@pytest.fixture
def machines(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[StateMachines]:
    with state_machines(world, monkeypatch) as sm:
        yield sm


def disrupt(machines: StateMachines, command: DisruptionCommand, **extra: object) -> dict[str, object]:
    return machines.run(machines.disruption_arn, command.execution_name(), {**command.to_input(), **extra})


def test_happy_path_with_surge(world: World, machines: StateMachines) -> None:
    command = DisruptionCommand(instance_id="i-1", reason="drifted", replace=True, requested_at=START)
    result = disrupt(machines, command)

    assert result["status"] == "SUCCEEDED", result
    output = result["output_json"]
    assert output["outcome"] == "disrupted" and output["drain"]["status"] == "drained"
    assert "n1" not in world.cluster.nodes and world.claims.get("claim-n1") is None
    assert world.instances.state("i-1") == "terminated"
    assert world.cluster.evicted == ["default/app-1"]
    # the replacement was initialized before the node was tainted (surge first)
    replacement = world.claims.get(output["replacement"]["claimId"])
    assert replacement is not None and replacement.state == "initialized"
    (tainted_at,) = world.cluster.times("taint", "n1")
    assert replacement.initialized_at is not None and replacement.initialized_at <= tainted_at
    # the other nodes were not touched
    assert world.cluster.taints("n2") == [] and world.cluster.pods_on("n2") == [
        "default/agent-2",
        "default/app-2",
    ]


def test_pdb_blocks_until_the_deadline_then_pods_are_deleted(world: World, machines: StateMachines) -> None:
    world.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}, grace=30))
    world.cluster.pdbs.append(make_pdb("db", {"app": "db"}, min_available=1))
    deadline = START + 600
    command = DisruptionCommand(
        instance_id="i-1", reason="expired", deadline_epoch=deadline, requested_at=START
    )
    result = disrupt(machines, command)

    assert result["status"] == "SUCCEEDED", result
    output = result["output_json"]
    assert output["drain"]["blockedByPdb"] >= 1 and output["drain"]["deleted"] == 1
    assert "default/db-0" in world.cluster.blocked and "default/db-0" not in world.cluster.evicted
    (deleted_at,) = world.cluster.times("delete-pod", "default/db-0")
    assert deadline - 30 <= deleted_at <= deadline  # deleted so that its 30 s grace ends by the deadline
    assert world.instances.state("i-1") == "terminated" and "n1" not in world.cluster.nodes


def test_a_failure_before_terminate_rolls_back_the_taint(world: World, machines: StateMachines) -> None:
    world.limits = type(world.limits)(max_drain_without_deadline_s=300)
    world.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}))
    world.cluster.pdbs.append(make_pdb("db", {"app": "db"}, max_unavailable=0))
    workflow_steps.CONTAINER.install(world.ports)  # pick up the shorter limit
    command = DisruptionCommand(instance_id="i-1", reason="drifted", requested_at=START)
    result = disrupt(machines, command)

    assert result["status"] == "FAILED"
    assert result["error"] == "DrainTimedOutError"
    assert "did not drain" in result["cause"] and "PodDisruptionBudget" in result["cause"]
    assert world.cluster.times("taint", "n1") and world.cluster.times("untaint", "n1")
    assert DISRUPTED not in world.cluster.taints("n1")
    assert "DisruptionFailed" in world.cluster.event_reasons("n1")
    assert world.instances.state("i-1") == "running" and world.claims.get("claim-n1") is not None
    assert world.cluster.pods_on("n1") == ["default/agent-1", "default/db-0"]  # the PDB was never overridden


def test_a_failed_replacement_rolls_back_before_anything_is_tainted(
    world: World, machines: StateMachines
) -> None:
    world.replacements.fail = True
    command = DisruptionCommand(instance_id="i-2", reason="drifted", replace=True, requested_at=START)
    result = disrupt(machines, command)

    assert result["status"] == "FAILED" and result["error"] == "ReplacementFailedError"
    assert world.cluster.times("taint", "n2") == [] and world.cluster.evicted == []
    assert "DisruptionFailed" in world.cluster.event_reasons("n2")


def test_validate_refuses_a_foreign_instance_without_touching_it(
    world: World, machines: StateMachines
) -> None:
    world.add_node("stranger", "i-9", claimed=False, owned=False)
    result = disrupt(machines, DisruptionCommand(instance_id="i-9", reason="manual"))

    assert result["status"] == "FAILED" and result["error"] == "NotOwnedError"
    assert "not owned by cluster demo-cluster" in result["cause"]
    assert world.cluster.taints("stranger") == [] and world.instances.state("i-9") == "running"


def test_rotation_of_three_nodes_one_at_a_time_canary_first(world: World, machines: StateMachines) -> None:
    request = RotationRequest(nodes=("n1", "n2", "n3"), max_unavailable=1, requested_at=START)
    result = machines.run(machines.rotation_arn, request.execution_name(), request.to_input())

    assert result["status"] == "SUCCEEDED", result
    assert all(name not in world.cluster.nodes for name in ("n1", "n2", "n3"))
    assert {world.instances.state(i) for i in ("i-1", "i-2", "i-3")} == {"terminated"}
    children = machines.executions(machines.disruption_arn)
    assert len(children) == 3 and {c["status"] for c in children} == {"SUCCEEDED"}
    # never more than one node disrupted at a time, and the canary (n1) finished before the others began
    assert world.cluster.max_tainted == 1
    order = [(what, name) for _, what, name in world.cluster.log if what in ("taint", "delete-node")]
    assert order[:2] == [("taint", "n1"), ("delete-node", "n1")]
    assert [what for what, _ in order] == ["taint", "delete-node"] * 3
    # surge: three replacements launched, each initialized before its node was tainted
    assert len(world.replacements.launched) == 3


def test_rotation_refuses_nodes_the_cluster_does_not_own(world: World, machines: StateMachines) -> None:
    world.add_node("stranger", "i-9", claimed=False, owned=False)
    request = RotationRequest(nodes=("n1", "stranger"), requested_at=START)
    result = machines.run(machines.rotation_arn, request.execution_name(), request.to_input())

    assert result["status"] == "FAILED" and result["error"] == "NotOwnedError"
    assert "stranger" in result["cause"] and "no NodeClaim in the store" in result["cause"]
    assert machines.executions(machines.disruption_arn) == []
    assert world.cluster.log == []


def test_rotation_input_from_the_docs_is_accepted(world: World, machines: StateMachines) -> None:
    # the JSON an operator pastes into the console (docs/workflow.md)
    payload = json.loads('{"nodes": ["n2", "n3"], "maxUnavailable": 2, "surge": false, "canary": false}')
    result = machines.run(machines.rotation_arn, "by-hand", payload)

    assert result["status"] == "SUCCEEDED", result
    assert "n2" not in world.cluster.nodes and "n3" not in world.cluster.nodes and "n1" in world.cluster.nodes
    assert world.replacements.launched == []

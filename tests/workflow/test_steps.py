"""Each workflow step on in-memory fakes: what it changes in the cluster, the stores and the state."""

from __future__ import annotations

from typing import Any

import pytest

from longshore.core.claims import NodeClaim
from longshore.core.commands import DisruptionCommand
from longshore.workflow import steps
from longshore.workflow.errors import (
    AlreadyDisruptingError,
    DrainTimedOutError,
    NodeMismatchError,
    NotOwnedError,
    ReplacementFailedError,
    ReplacementTimedOutError,
    StepInputError,
    TerminationTimedOutError,
)
from tests.workflow.fakes import CLUSTER, World, make_node, make_pdb, make_pod, new_world

DISRUPTED = ("karpenter.sh/disrupted", "NoSchedule")


def command_state(instance_id: str = "i-1", execution: str = "drifted-i-1", **kwargs: Any) -> dict[str, Any]:
    state = DisruptionCommand(
        instance_id=instance_id, reason=kwargs.pop("reason", "drifted"), **kwargs
    ).to_input()
    state["executionName"] = execution
    return state


@pytest.fixture
def world() -> World:
    w = new_world()
    w.add_node("n1", "i-1")
    return w


def validated(world: World, **kwargs: Any) -> dict[str, Any]:
    return steps.validate(command_state(**kwargs), world.ports)


def tainted(world: World, **kwargs: Any) -> dict[str, Any]:
    return steps.taint(validated(world, **kwargs), world.ports)


# -- validate


def test_validate_finds_node_claim_and_pool_from_the_instance(world: World) -> None:
    state = validated(world)
    assert (state["nodeName"], state["claimId"], state["nodePool"]) == ("n1", "claim-n1", "default")


def test_validate_accepts_an_unclaimed_instance_carrying_the_cluster_tag() -> None:
    world = new_world()
    world.add_node("n2", "i-2", claimed=False, owned=True, pool="gpu")
    state = validated(world, instance_id="i-2")
    assert (state["nodeName"], state["claimId"], state["nodePool"]) == ("n2", None, "gpu")


def test_validate_refuses_a_foreign_instance_and_says_so() -> None:
    world = new_world()
    world.add_node("stranger", "i-9", claimed=False, owned=False)
    with pytest.raises(NotOwnedError) as error:
        validated(world, instance_id="i-9")
    message = str(error.value)
    assert "stranger" in message and "i-9" in message and f"longshore.io/cluster={CLUSTER}" in message
    assert world.cluster.taints("stranger") == []


def test_validate_refuses_a_node_already_being_disrupted(world: World) -> None:
    steps.taint(validated(world, execution="other-execution"), world.ports)
    with pytest.raises(AlreadyDisruptingError, match="other-execution"):
        validated(world, execution="second")


def test_validate_refuses_a_node_that_runs_another_instance(world: World) -> None:
    with pytest.raises(NodeMismatchError, match="runs instance i-1, not i-7"):
        world.instances.add("i-7")
        validated(world, instance_id="i-7", node_name="n1")


def test_validate_reports_a_bad_input_clearly(world: World) -> None:
    with pytest.raises(StepInputError, match="'reason' has value 'bored'"):
        steps.validate({"instanceId": "i-1", "reason": "bored"}, world.ports)


# -- taint


def test_taint_adds_the_disrupted_taint_and_names_the_execution(world: World) -> None:
    state = tainted(world)
    node = world.cluster.nodes["n1"]
    assert DISRUPTED in world.cluster.taints("n1")
    assert node["metadata"]["annotations"]["longshore.io/disruption"] == "drifted-i-1"
    assert state["tainted"] is True and state["drain"]["status"] == "draining"
    assert "DisruptionTerminating" in world.cluster.event_reasons("n1")


def test_taint_is_idempotent_for_its_own_execution(world: World) -> None:
    state = tainted(world)
    again = steps.taint(state, world.ports)
    assert again["tainted"] is True and world.cluster.taints("n1").count(DISRUPTED) == 1


def test_deadline_is_the_earlier_of_the_command_and_the_pool_grace_period(world: World) -> None:
    now = world.clock.now()
    world.grace_periods["default"] = 600
    assert tainted(world, deadline_epoch=now + 900)["deadline"] == now + 600
    world2 = new_world()
    world2.add_node("n1", "i-1")
    state = tainted(world2)
    assert state["deadline"] is None and state["giveUpAt"] == now + world2.limits.max_drain_without_deadline_s


# -- drain


def test_drain_evicts_in_tiers_and_leaves_daemonsets_and_mirror_pods(world: World) -> None:
    world.cluster.add_pod(make_pod("app", "n1"))
    world.cluster.add_pod(
        make_pod("dns", "n1", priority_class="system-cluster-critical", namespace="kube-system")
    )
    world.cluster.add_pod(make_pod("ds", "n1", owner_kind="DaemonSet"))
    world.cluster.add_pod(make_pod("static", "n1", owner_kind="Node"))
    state = steps.drain(tainted(world), world.ports)
    assert world.cluster.evicted == ["default/app"]
    assert state["drain"]["status"] == "draining" and state["drain"]["remaining"] == 2
    world.clock.advance(state["drain"]["waitSeconds"])
    state = steps.drain(state, world.ports)  # app still terminating (30 s grace): dns waits
    assert world.cluster.evicted == ["default/app"]
    world.clock.advance(30)
    state = steps.drain(state, world.ports)
    assert world.cluster.evicted == ["default/app", "kube-system/dns"]
    world.clock.advance(30)
    state = steps.drain(state, world.ports)
    assert state["drain"]["status"] == "drained"
    assert world.cluster.pods_on("n1") == ["default/ds", "default/static"]


def test_pdb_blocks_until_the_deadline_then_the_pod_is_deleted_to_end_by_it(world: World) -> None:
    now = world.clock.now()
    world.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}, grace=30))
    world.cluster.pdbs.append(make_pdb("db", {"app": "db"}, min_available=1))
    state = tainted(world, deadline_epoch=now + 120)
    blocked_passes = 0
    while state["drain"]["status"] != "drained":
        state = steps.drain(state, world.ports)
        blocked_passes += state["drain"]["passBlocked"]
        assert world.clock.now() <= now + 200, "the drain must end soon after the deadline"
        world.clock.advance(state["drain"]["waitSeconds"])
    assert blocked_passes >= 1 and world.cluster.evicted == []
    assert [name for name, _ in world.cluster.deleted] == ["default/db-0"]
    ((_, grace),) = world.cluster.deleted
    assert grace is not None and grace <= 30
    assert "FailedDraining" in world.cluster.event_reasons(
        "n1"
    ) and "Disrupted" in world.cluster.event_reasons("db-0")
    assert state["drain"]["blockedByPdb"] == blocked_passes


def test_a_drain_without_deadline_gives_up_and_never_overrides_a_pdb(world: World) -> None:
    world.limits = steps.WorkflowLimits(max_drain_without_deadline_s=120)
    world.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}))
    world.cluster.pdbs.append(make_pdb("db", {"app": "db"}, max_unavailable=0))
    state = tainted(world)
    with pytest.raises(DrainTimedOutError, match="blocked by a PodDisruptionBudget"):
        for _ in range(100):
            state = steps.drain(state, world.ports)
            world.clock.advance(state["drain"]["waitSeconds"])
    assert world.cluster.deleted == [] and world.cluster.pods_on("n1") == ["default/db-0"]


def test_do_not_disrupt_pod_waits_and_a_duration_form_expires(world: World) -> None:
    now = world.clock.now()
    world.cluster.add_pod(
        make_pod("job", "n1", annotations={"karpenter.sh/do-not-disrupt": "2m"}, created=now - 60)
    )
    state = steps.drain(tainted(world), world.ports)
    assert world.cluster.evicted == [] and "do-not-disrupt" in state["drain"]["summary"]
    world.clock.advance(61)
    steps.drain(state, world.ports)
    assert world.cluster.evicted == ["default/job"]


def test_drain_poll_slows_down_after_five_minutes(world: World) -> None:
    world.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}))
    world.cluster.pdbs.append(make_pdb("db", {"app": "db"}, min_available=1))
    state = tainted(world)
    assert steps.drain(state, world.ports)["drain"]["waitSeconds"] == 10
    world.clock.advance(301)
    assert steps.drain(state, world.ports)["drain"]["waitSeconds"] == 60


# -- replacement


def test_replacement_launches_and_becomes_initialized(world: World) -> None:
    state = steps.launch_replacement(validated(world, replace=True), world.ports)
    assert state["replacement"]["status"] == "launching"
    assert world.replacements.launched == [state["replacement"]["claimId"]]
    assert steps.launch_replacement(state, world.ports) == state  # a retry launches nothing new
    state = steps.check_replacement(state, world.ports)
    assert state["replacement"]["status"] == "launching"
    world.clock.advance(world.replacements.ready_after)
    assert steps.check_replacement(state, world.ports)["replacement"]["status"] == "initialized"


def test_replacement_forgotten_fails(world: World) -> None:
    world.replacements.fail = True
    state = steps.launch_replacement(validated(world, replace=True), world.ports)
    world.clock.advance(world.replacements.ready_after)
    with pytest.raises(ReplacementFailedError, match="forgotten"):
        steps.check_replacement(state, world.ports)


def test_replacement_times_out(world: World) -> None:
    world.replacements.ready_after = 10**6
    state = steps.launch_replacement(validated(world, replace=True), world.ports)
    world.clock.advance(world.limits.replacement_timeout_s)
    with pytest.raises(ReplacementTimedOutError, match="still launching"):
        steps.check_replacement(state, world.ports)


# -- terminate, finalize


def test_terminate_waits_for_terminated_then_finalize_deletes_node_and_claim(world: World) -> None:
    state = steps.terminate(validated(world), world.ports)
    assert world.instances.state("i-1") == "shutting-down"
    state = steps.check_termination(state, world.ports)
    assert state["termination"]["status"] == "terminating"
    world.clock.advance(world.instances.SHUTDOWN_SECONDS)
    state = steps.check_termination(state, world.ports)
    assert state["termination"]["status"] == "terminated"
    state = steps.finalize(state, world.ports)
    assert (
        state["outcome"] == "disrupted"
        and "n1" not in world.cluster.nodes
        and world.claims.get("claim-n1") is None
    )


def test_termination_polls_are_bounded(world: World) -> None:
    world.instances.SHUTDOWN_SECONDS = 10**6
    state = steps.terminate(validated(world), world.ports)
    with pytest.raises(TerminationTimedOutError, match="still shutting-down"):
        for _ in range(world.limits.max_termination_polls + 1):
            state = steps.check_termination(state, world.ports)


# -- rollback


def test_rollback_removes_only_its_own_taint_and_records_why(world: World) -> None:
    state = tainted(world)
    state["error"] = {
        "Error": "DrainTimedOutError",
        "Cause": '{"errorType": "DrainTimedOutError", "errorMessage": "stuck on db-0"}',
    }
    result = steps.rollback(state, world.ports)
    assert DISRUPTED not in world.cluster.taints("n1")
    assert "longshore.io/disruption" not in world.cluster.nodes["n1"]["metadata"]["annotations"]
    assert result["rollback"] == {
        "error": "DrainTimedOutError",
        "reason": "stuck on db-0",
        "untainted": True,
        "retry": False,
    }
    assert result["outcome"] == "rolled-back"
    failed = [e for e in world.cluster.events if e.reason == "DisruptionFailed"]
    assert len(failed) == 1 and "stuck on db-0" in failed[0].message and failed[0].type == "Warning"


def test_rollback_leaves_another_executions_taint(world: World) -> None:
    steps.taint(validated(world, execution="owner"), world.ports)
    state = validated(new_world_with_n1(), execution="intruder")
    state["error"] = {"Error": "X", "Cause": "boom"}
    result = steps.rollback(state, world.ports)
    assert DISRUPTED in world.cluster.taints("n1") and result["rollback"]["untainted"] is False


def new_world_with_n1() -> World:
    w = new_world()
    w.add_node("n1", "i-1")
    return w


# -- rotation plan


def test_plan_rotation_splits_canary_and_rest(world: World) -> None:
    world.add_node("n2", "i-2")
    world.add_node("n3", "i-3", claimed=False)
    plan = steps.plan_rotation(
        {"nodes": ["n1", "n2", "n3"], "maxUnavailable": 2, "executionName": "rot-1"}, world.ports
    )
    assert plan["hasCanary"] is True and plan["canary"]["node"] == "n1"
    assert [i["node"] for i in plan["rest"]] == ["n2", "n3"]
    assert plan["maxUnavailable"] == 2
    inputs = [i["input"] for i in [plan["canary"], *plan["rest"]]]
    assert all(i["reason"] == "rotation" and i["replace"] is True for i in inputs)
    assert [i["claimId"] for i in inputs] == ["claim-n1", "claim-n2", None]
    assert len({i["name"] for i in [plan["canary"], *plan["rest"]]}) == 3


def test_plan_rotation_refuses_foreign_and_missing_nodes_naming_each(world: World) -> None:
    world.add_node("stranger", "i-9", claimed=False, owned=False)
    with pytest.raises(NotOwnedError) as error:
        steps.plan_rotation({"nodes": ["n1", "stranger", "ghost"]}, world.ports)
    message = str(error.value)
    assert "2 of 3" in message and "stranger (instance i-9" in message and "ghost (node not found)" in message
    assert "n1 (" not in message


def test_run_step_rejects_unknown_steps(world: World) -> None:
    with pytest.raises(StepInputError, match="'step' has value 'dance'"):
        steps.run_step("dance", {}, world.ports)


def test_drain_taints_and_drains_a_node_that_registered_after_validate() -> None:
    world = new_world()
    world.instances.add("i-7")
    world.claims.put(
        NodeClaim(
            id="claim-late", nodepool="default", node_class="default", instance_id="i-7", state="launched"
        )
    )
    state = steps.taint(validated(world, instance_id="i-7", execution="rebalance-i-7"), world.ports)
    assert state["nodeName"] is None and state["tainted"] is False
    world.cluster.add_node(make_node("late", "i-7"))  # joins while the surge waits for its replacement
    world.cluster.add_pod(make_pod("app", "late"))
    state = steps.drain(state, world.ports)
    assert state["nodeName"] == "late" and state["tainted"] is True
    assert state["drain"]["status"] == "draining"
    assert DISRUPTED in world.cluster.taints("late")
    state = steps.drain(state, world.ports)
    assert world.cluster.evicted == ["default/app"] and state["drain"]["status"] == "draining"


def test_drain_passes_are_bounded_even_with_a_far_deadline(world: World) -> None:
    world.limits = steps.WorkflowLimits(max_drain_passes=2)
    world.cluster.add_pod(make_pod("db-0", "n1", labels={"app": "db"}))
    world.cluster.pdbs.append(make_pdb("db", {"app": "db"}, min_available=1))
    state = tainted(world, deadline_epoch=world.clock.now() + 3600)
    state = steps.drain(steps.drain(state, world.ports), world.ports)
    with pytest.raises(DrainTimedOutError, match="limit of 2 drain passes"):
        steps.drain(state, world.ports)
    assert world.cluster.deleted == []

"""Issues #5 and #6 on virtual time: the planner, the real workflow definitions on the Step Functions simulator,
and the interruption Lambda fed through SQS, run against the simulated world (moto + the API emulator).

Every assertion reads what the runner observed from outside the system under test: taints and pods in the
emulator, CreateFleet and TerminateInstances calls and instances in moto, executions in the simulated Step
Functions service, and the rule checker's violations (which must be none in every scenario).
"""

from __future__ import annotations

from typing import Any

import pytest

from longshore_sim.runner import ScenarioRunner
from longshore_sim.scenario import BUNDLED, load_scenario
from tests.scenarios.optimum import whole_node_optimum

SCENARIOS = BUNDLED

pytestmark = pytest.mark.slow


def run(name: str) -> tuple[ScenarioRunner, dict[str, Any]]:
    runner = ScenarioRunner(load_scenario(SCENARIOS / f"{name}.yaml"))
    return runner, runner.run().summary


def assert_clean(summary: dict[str, Any]) -> None:
    assert summary["availability"] == {"voluntary_unavailable_pod_seconds": 0.0, "unsafe_terminations": 0}
    assert summary["violations"] == []
    assert summary["pods"]["never_ran"] == []
    assert summary["duplicate_launches"] == 0
    assert summary["workflows"]["failed"] == []
    assert all(check["ok"] for check in summary["checks"].values()), summary["checks"]


def test_seed_scale_to_zero_taints_the_empty_node_60_to_75_s_after_its_last_pod_left() -> None:
    _, summary = run("seed-inflate")
    assert_clean(summary)
    waits = summary["tainted_after_last_pod_left_s"]
    # v1alpha5 had no disruption budgets: every empty node goes when its ttlSecondsAfterEmpty passes.
    assert len(waits) == 5
    assert all(60.0 <= wait <= 75.0 for wait in waits.values()), waits
    assert summary["disruptions_by_reason"] == {"empty": 5}
    assert summary["nodes_terminated"] == 5 and summary["nodes_final"] == 0


def test_spot_warning_on_3_of_5_nodes_is_drained_and_replaced_before_the_reclaim() -> None:
    _, summary = run("spot-warning")
    assert_clean(summary)
    warned = summary["cordoned_after_warning_s"]
    assert len(warned) == 3
    assert all(0 <= seconds <= 5 for seconds in warned.values())
    assert all(0 <= s <= 10 for s in summary["replacement_requested_after_warning_s"].values())
    assert summary["all_evicted_pods_running_before_reclaim"] == dict.fromkeys(warned, True)
    assert not any(w["still_running_at_reclaim"] for w in summary["warnings"])
    assert summary["disruptions_by_reason"] == {"interruption": 3}
    assert summary["interruption"]["actions"] == {"interrupt": 3}
    assert summary["provisioner"]["triggered"] == 3
    # minAvailable 3 of 5: the three drains could not all evict at once, yet every pod runs again.
    assert summary["pods"]["total_seen"] == 8


def test_a_pdb_holds_the_drain_until_the_deadline_then_the_pods_are_deleted() -> None:
    _, summary = run("pdb-blocks-until-deadline")
    assert_clean(summary)
    assert summary["disruptions_by_reason"] == {"expired": 1}
    (drain,) = summary["drains"].values()
    assert drain["reason"] == "expired" and drain["deadline_s"] is not None
    assert drain["emptied_s"] >= drain["deadline_s"], "the PDB (maxUnavailable 0) allowed no eviction before"
    assert drain["emptied_s"] <= drain["deadline_s"] + 15
    assert summary["nodes_final"] == 1  # the replacement, launched first


def test_a_manual_rotation_of_3_nodes_replaces_one_at_a_time() -> None:
    _, summary = run("rotate-3-nodes")
    assert_clean(summary)
    assert list(summary["workflows"]["rotations"].values()) == ["SUCCEEDED"]
    assert summary["disruptions_by_reason"] == {"rotation": 3}
    assert summary["max_disrupting_at_once"] == {"default": 1}
    assert summary["nodes_launched"] == 6 and summary["nodes_terminated"] == 3
    tainted = sorted(d["tainted_s"] for d in summary["drains"].values())
    assert len(tainted) == 3 and tainted[0] < tainted[1] < tainted[2]


def test_kubectl_delete_node_drains_and_terminates_through_the_workflow() -> None:
    # The shipped world wires the provisioner's lifecycle to the disruption state machine, as the stack does:
    # without it the Node lingered with its finalizer and only a warning was logged (chaos seed 8).
    _, summary = run("kubectl-delete-node")
    assert_clean(summary)
    assert summary["disruptions_by_reason"] == {"deleted": 1}
    (drain,) = summary["drains"].values()
    assert drain["reason"] == "deleted" and drain["emptied_s"] is not None
    assert summary["nodes_terminated"] == 1


def test_a_throttled_claim_table_slows_passes_but_fails_none() -> None:
    # Every table operation fails its next 3 attempts, twice: the functions' backoff (on the injected clock,
    # after botocore's own attempts) absorbs it; no pass or invocation fails and nothing is lost.
    runner, summary = run("dynamodb-throttled")
    assert_clean(summary)
    assert sum(runner.world.dynamo_throttle.injected.values()) >= 6
    assert summary["provisioner"]["failed_invocations"] == 0 and summary["provisioner"]["crashes"] == 0
    assert summary["planner"]["failed_passes"] == 0
    assert (
        summary["disruptions_by_reason"].get("empty", 0)
        + summary["disruptions_by_reason"].get("underutilized", 0)
        >= 1
    )


def test_duplicate_foreign_health_and_rebalance_events_each_end_as_they_should() -> None:
    runner, summary = run("interruption-events")
    assert_clean(summary)
    interruption = summary["interruption"]
    assert interruption["messages_delivered"] == 8 and interruption["left_in_queue"] == 0
    assert interruption["ignored"] == {"duplicate": 2, "foreign": 1, "rebalance-ignored": 1}
    assert interruption["actions"] == {"drain": 2, "interrupt": 1, "notify": 1, "replace": 1}
    # One workflow for the node warned three times, two for the health event's instances, one rebalance.
    assert summary["disruptions_by_reason"] == {"interruption": 3, "rebalance": 1}
    events = runner.world.cluster.store.view("events")
    assert any(e.get("reason") == "RebalanceRecommendation" for e in events)
    assert summary["max_disrupting_at_once"]["notify-pool"] == 0


def test_consolidation_after_30_to_5_settles_on_the_cheapest_whole_nodes() -> None:
    runner, summary = run("consolidate-30-to-5")
    assert_clean(summary)
    assert summary["disruptions_by_reason"].get("underutilized", 0) >= 1
    assert summary["max_disrupting_at_once"] == {"general": 1}  # 10% budget
    optimum = whole_node_optimum(runner, 500, 512 * 2**20, 5)
    assert summary["cost_per_hour_final"] <= 1.05 * optimum
    # 1.05 x the fluid LP bound is out of reach for whole nodes: 5 pods of 500m on the pool's best node fill
    # it to 64 %; the ratio to the bound is the whole-node optimum's.
    assert summary["cost_ratio_final"] == pytest.approx(
        optimum / summary["lp_bound_per_hour_final"], rel=1e-3
    )


def test_30_day_expiry_rolls_through_the_pool_one_node_at_a_time() -> None:
    _, summary = run("expiry-30-days")
    assert_clean(summary)
    assert summary["disruptions_by_reason"] == {"expired": 5}
    assert summary["max_disrupting_at_once"] == {"default": 1}  # 10% of 5 nodes, rounded up
    tainted = [d["tainted_s"] for d in summary["drains"].values()]
    assert len(tainted) == 5 and min(tainted) >= 30 * 86400
    assert summary["planner"]["passes"] < 2000, "the quiet month is skipped, not polled every 10 s"


def test_an_ami_update_drifts_nodes_within_the_budget_and_not_during_the_freeze() -> None:
    _, summary = run("ami-drift")
    assert_clean(summary)
    assert summary["disruptions_by_reason"] == {"drifted": 5}
    assert summary["max_disrupting_at_once"] == {"general": 1}
    tainted = sorted(d["tainted_s"] for d in summary["drains"].values())
    freeze = (9 * 3600, 17 * 3600)  # the simulation starts on Thursday 2026-01-01 00:00 UTC
    assert not [t for t in tainted if freeze[0] <= t < freeze[1]]
    assert tainted[0] >= 8 * 3600 + 57 * 60 and tainted[-1] >= freeze[1], "some waited for the freeze to end"

"""Issue #17 on the simulated cluster: node auto-repair (`node-repair`) and a static NodePool (`static-pool`).

Read from outside the system under test, as in test_disruption_scenarios.py: the runner's summary of the
emulator, moto and the simulated Step Functions, with the rule checker finding no violation.
"""

from __future__ import annotations

import pytest

from tests.scenarios.test_disruption_scenarios import assert_clean, run

pytestmark = pytest.mark.slow

UNHEALTHY_AT_S = 300.0  # the scenario's nodeHealth step
TOLERATION_S = 30 * 60.0


def test_a_node_unknown_for_30_minutes_is_replaced_and_its_pods_run_elsewhere() -> None:
    runner, summary = run("node-repair")
    assert_clean(summary)  # every pod running at the end, none lost, no violation
    assert summary["disruptions_by_reason"] == {"unhealthy": 1}
    ((node, drain),) = summary["drains"].items()
    assert drain["reason"] == "unhealthy"
    assert drain["tainted_s"] >= UNHEALTHY_AT_S + TOLERATION_S  # not before the toleration ran out
    assert drain["emptied_s"] is not None
    assert summary["nodes_terminated"] == 1
    assert node not in {n["metadata"]["name"] for n in runner.world.cluster.store.view("nodes")}


def test_a_static_pool_holds_exactly_its_replicas_whatever_the_pods_do() -> None:
    runner, summary = run("static-pool")
    assert_clean(summary)
    nodes = runner.world.cluster.store.view("nodes")
    reserved = [n for n in nodes if n["metadata"]["labels"].get("karpenter.sh/nodepool") == "reserved"]
    assert len(reserved) == 3 and len(nodes) == 3  # the general pool's node came and went with the pods
    assert summary["instances_launched_by_type"]["m5.large/on-demand"] == 3  # launched once, never replaced
    assert set(summary["disruptions_by_reason"]) <= {"empty", "underutilized"}  # only general's nodes

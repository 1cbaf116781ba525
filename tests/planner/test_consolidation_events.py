"""Consolidation's Events end to end, on the planner test world: a Balanced pool that rejects a low-value
move says so on the node (`ConsolidationRejected`), a move it approves is announced with its score
(`ConsolidationCandidate`, `ConsolidationApproved`) and carried out, and a pool's savings threshold leaves a
node alone with the same kind of Event. Each test runs warm and cold (see test_service.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from longshore.core.model import NodePool, SavingsThreshold
from tests.builders import catalog, instance_type
from tests.planner.fakes import PlannerWorld, a_pool, cluster_config

# The pods of an m5.xlarge ($0.192/h) fit a c5.xlarge at $0.17/h: an 11 % saving, not worth it under Balanced.
MARGINAL = catalog(
    instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096),
    instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.192),
    instance_type("m5.2xlarge", vcpus=8, memory_gib=32, price=0.384),
    instance_type("c5.xlarge", vcpus=4, memory_gib=8, price=0.17),
)


@pytest.fixture(params=["warm", "cold"], autouse=True)
def planner_containers(request: pytest.FixtureRequest) -> Iterator[str]:
    PlannerWorld.containers = request.param
    try:
        yield request.param
    finally:
        PlannerWorld.containers = "warm"


def balanced(**options: object) -> NodePool:
    pool = a_pool(**options)  # type: ignore[arg-type]
    return replace(pool, disruption=replace(pool.disruption, consolidation_policy="Balanced"))


def test_balanced_rejects_a_low_value_move_with_an_event_and_touches_nothing() -> None:
    w = PlannerWorld(cluster_config(balanced()), the_catalog=MARGINAL)
    w.add_node("only")
    w.add_pod("w", "only", cpu="3", memory="4Gi")

    w.run(120)

    assert all(r.pending is None and r.acted == () for r in w.reports)
    assert w.simulator.executions() == () and "only" in w.cluster.nodes
    (event,) = w.events("only", "ConsolidationRejected")  # posted once: repeats are the same Event
    assert event.type == "Normal"
    assert event.message.startswith(
        "Balanced consolidation rejects the move for pool default: saving $0.0220/h"
    )
    assert event.message.endswith("score 0.11 < threshold 0.50 (k: 2, savings 11.5%, disruption 100.0%)")
    assert w.events("only", "ConsolidationCandidate") == []


def test_the_same_move_is_made_under_when_empty_or_underutilized() -> None:
    w = PlannerWorld(cluster_config(a_pool()), the_catalog=MARGINAL)
    w.add_node("only")
    w.add_pod("w", "only", cpu="3", memory="4Gi")
    pending = w.run_pass().pending
    assert pending is not None and [c.instance_type for c in pending.replacements] == ["c5.xlarge"]
    (event,) = w.events("only", "ConsolidationCandidate")
    assert (
        event.message
        == "Consolidation candidate: replace [only] -> [c5.xlarge/on-demand] (savings: $0.0220/h)"
    )
    assert w.events("only", "ConsolidationApproved") == []  # only Balanced pools are scored


def test_balanced_announces_an_approved_move_with_its_score_and_carries_it_out() -> None:
    w = PlannerWorld(cluster_config(balanced()))
    w.add_node("big", type_name="m5.2xlarge")
    w.add_pod("w", "big", cpu="1", memory="2Gi")

    first = w.run_pass()

    assert first.pending is not None and first.pending.node_names == ("big",)
    (candidate,) = w.events("big", "ConsolidationCandidate")
    assert (
        candidate.message
        == "Consolidation candidate: replace [big] -> [m5.large/on-demand] (savings: $0.2880/h)"
    )
    (approved,) = w.events("big", "ConsolidationApproved")
    assert approved.message == "score 0.75 >= threshold 0.50 (k: 2, savings 75.0%, disruption 100.0%)"
    w.run(600)
    assert "big" not in w.cluster.nodes


def test_a_pool_savings_threshold_leaves_the_node_alone_and_says_why() -> None:
    pool = a_pool()
    pool = replace(
        pool, disruption=replace(pool.disruption, consolidation_threshold=SavingsThreshold.parse("$0.05/h"))
    )
    w = PlannerWorld(cluster_config(pool), the_catalog=MARGINAL)
    w.add_node("only")
    w.add_pod("w", "only", cpu="3", memory="4Gi")
    report = w.run_pass()
    assert report.pending is None
    (event,) = w.events("only", "ConsolidationRejected")
    assert event.message == (
        "left alone: the move saves $0.0220/h for pool default, under its minimum of $0.0500/h "
        "(longshore.io/consolidation-min-savings: $0.05/h)"
    )

"""Consolidation beyond the basics: the Balanced score, the consolidateAfter cooldown on destinations, the
spot-to-spot feature gate, and the per-pool savings threshold.

Each test runs one planner pass on a small snapshot with the real packing engine (see test_planner.py for
the builders) and checks the decision, or the reason and kind a node left alone is given.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from longshore.core import labels as wk
from longshore.core.disruption import planner
from longshore.core.disruption.consolidation import SPOT_TO_SPOT_MIN_CHEAPER_TYPES
from longshore.core.disruption.decisions import Decision, PassedOverKind
from longshore.core.disruption.scoring import (
    PoolScore,
    PoolTotals,
    balanced_scores,
    reschedule_disruption_cost,
)
from longshore.core.disruption.state import DisruptionInput, ManagedNode
from longshore.core.model import ClusterConfig, NodePool, SavingsThreshold, Settings
from longshore.core.pods import Pod
from tests.builders import catalog, instance_type, node_class, pod, req
from tests.disruption.test_planner import HOUR, NOW, TYPES, a_pool, config, managed

# m5.xlarge ($0.192/h) whose pods fit a c5.xlarge at $0.17/h: a marginal move (11 % saved).
MARGINAL = catalog(
    instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096),
    instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.192),
    instance_type("c5.xlarge", vcpus=4, memory_gib=8, price=0.17),
)


def balanced(name: str = "default", **options: object) -> NodePool:
    base = a_pool(name, **options)  # type: ignore[arg-type]
    return replace(base, disruption=replace(base.disruption, consolidation_policy="Balanced"))


def with_threshold(pool: NodePool, text: str) -> NodePool:
    return replace(
        pool, disruption=replace(pool.disruption, consolidation_threshold=SavingsThreshold.parse(text))
    )


def plan_of(*nodes: ManagedNode, pools: tuple[NodePool, ...], types: object = TYPES, **extra: object):  # type: ignore[no-untyped-def]
    inp = DisruptionInput(now=NOW, config=config(*pools), nodes=nodes, catalog=types, **extra)  # type: ignore[arg-type]
    return planner.plan(inp)


def passed(plan: object, name: str) -> tuple[str, PassedOverKind]:
    entry = next(p for p in plan.passed_over if p.node == name)  # type: ignore[attr-defined]
    return entry.reason, entry.kind


# --- the score ------------------------------------------------------------------------------------------


def test_score_reproduces_the_design_examples() -> None:
    # designs/balanced-consolidation.md: "Oversized Node (approved)" and "Marginal Move (rejected)"
    oversized = PoolScore("p", 7.26, 7.26 / 58.08, 3 / 80)
    assert round(oversized.score, 2) == 3.33 and oversized.approved
    marginal = PoolScore("p", 2.42, 2.42 / 58.08, 8 / 80)
    assert round(marginal.score, 2) == 0.42 and not marginal.approved
    boundary = PoolScore("p", 2.42, 2.42 / 48.40, 8 / 80)  # "Uniform Pool Replace": exactly 1/k
    assert boundary.approved and boundary.threshold == 0.5
    assert PoolScore("p", 0.0, 0.0, 0.1).score == 0.0  # nothing saved: never approved
    assert marginal.describe() == "score 0.42 < threshold 0.50 (k: 2, savings 4.2%, disruption 10.0%)"


def test_disruption_cost_is_one_per_node_plus_positive_eviction_costs() -> None:
    costly = replace(
        pod("model", cpu="1"), annotations=(("controller.kubernetes.io/pod-deletion-cost", "2147483647"),)
    )
    cheap = replace(pod("scratch", cpu="1"), priority=-(2**30))  # eviction cost clamps to -10, counts 0
    node = managed("n", pods=(pod("w", cpu="1"), costly, cheap))
    assert reschedule_disruption_cost(node) == 1 + 1 + 10 + 0
    assert reschedule_disruption_cost(managed("empty")) == 1


def test_a_move_across_pools_is_scored_per_balanced_pool_with_savings_split_by_cost() -> None:
    a = managed("a", pods=(pod("w1", cpu="1"),), pool_name="left", price=0.3)
    b = managed("b", pods=(pod("w2", cpu="1"),), pool_name="right", price=0.1)
    pools = {"left": balanced("left"), "right": a_pool("right")}
    totals = {"left": PoolTotals(0.6, 4.0), "right": PoolTotals(0.2, 4.0)}
    scores = balanced_scores([a, b], 0.2, pools, totals)
    assert [s.pool for s in scores] == ["left"]  # the WhenEmptyOrUnderutilized pool is not scored
    assert scores[0].savings == pytest.approx(0.15)  # 0.2 x 0.3 / 0.4
    assert scores[0].savings_fraction == pytest.approx(0.25) and scores[0].disruption_fraction == 0.5


# --- Balanced in the planner -----------------------------------------------------------------------------


def test_balanced_rejects_a_marginal_replace_that_when_empty_or_underutilized_makes() -> None:
    node = managed("only", pods=(pod("w", cpu="3", memory="4Gi"),))
    eager = plan_of(node, pools=(a_pool(),), types=MARGINAL)
    assert [c.instance_type for c in eager.decisions[0].replacements] == ["c5.xlarge"]
    careful = plan_of(node, pools=(balanced(),), types=MARGINAL)
    assert careful.decisions == ()
    reason, kind = passed(careful, "only")
    assert kind is PassedOverKind.REJECTED
    assert reason.startswith("Balanced consolidation rejects the move for pool default: saving $0.0220/h")
    assert "score 0.11 < threshold 0.50 (k: 2, savings 11.5%, disruption 100.0%)" in reason


def test_balanced_approves_a_worthwhile_replace_and_the_decision_carries_the_score() -> None:
    big = managed("big", type_name="m5.2xlarge", price=0.384, pods=(pod("w", cpu="1", memory="2Gi"),))
    decision = plan_of(big, pools=(balanced(),)).decisions[0]
    assert [c.instance_type for c in decision.replacements] == ["m5.large"]
    (score,) = decision.scores
    assert score.approved
    assert score.describe() == "score 0.75 >= threshold 0.50 (k: 2, savings 75.0%, disruption 100.0%)"


def test_when_empty_or_underutilized_decisions_carry_no_score() -> None:
    big = managed("big", type_name="m5.2xlarge", price=0.384, pods=(pod("w", cpu="1", memory="2Gi"),))
    assert plan_of(big, pools=(a_pool(),)).decisions[0].scores == ()


def test_balanced_skips_a_node_whose_pods_cost_too_much_to_disrupt_even_for_a_delete() -> None:
    # designs/balanced-consolidation.md "Heterogeneous Disruption Cost": same savings, costlier pods.
    model = replace(
        pod("model", cpu="1"), annotations=(("controller.kubernetes.io/pod-deletion-cost", "2147483647"),)
    )
    busy = managed("busy", pods=(model,))
    fresh = (
        managed("a", pods=(pod("w1", cpu="1"),), idle_since=NOW - 10),
        managed("c", pods=(pod("w2", cpu="1"),), idle_since=NOW - 10),
    )
    result = plan_of(busy, *fresh, pools=(balanced(after=600),))
    assert result.decisions == ()
    reason, kind = passed(result, "busy")
    assert kind is PassedOverKind.REJECTED
    # delete: savings 0.192 / 0.576 = 33.3 %, disruption 11 / 15 = 73.3 %, score 0.45
    assert reason.endswith("score 0.45 < threshold 0.50 (k: 2, savings 33.3%, disruption 73.3%)")
    assert reason.startswith("Balanced consolidation: even deleting it (saving $0.1920/h)")


def test_balanced_revalidation_rejects_a_move_the_score_no_longer_approves() -> None:
    big = managed("big", type_name="m5.2xlarge", price=0.384, pods=(pod("w", cpu="1", memory="2Gi"),))
    decision = plan_of(big, pools=(balanced(),)).decisions[0]
    # meanwhile the pool had three more pods with a high deletion cost land on the node
    model = tuple(
        replace(
            pod(f"m{i}", cpu="100m"),
            annotations=(("controller.kubernetes.io/pod-deletion-cost", "2147483647"),),
        )
        for i in range(3)
    )
    grown = managed(
        "big", type_name="m5.2xlarge", price=0.384, pods=(pod("w", cpu="1", memory="2Gi"), *model)
    )
    other = managed("other", type_name="m5.2xlarge", price=0.384, pods=(pod("x", cpu="7"),))
    fresh = DisruptionInput(now=NOW + 15, config=config(balanced()), nodes=(grown, other), catalog=TYPES)
    verdict = planner.revalidate(decision, fresh)
    assert isinstance(verdict, str) and verdict.startswith("Balanced consolidation rejects the move")


# --- the consolidateAfter cooldown on destinations -------------------------------------------------------


def test_pods_are_not_moved_onto_a_node_inside_its_consolidate_after_window() -> None:
    candidate = managed("a", pods=(pod("w1", cpu="1"),))
    just_filled = managed("b", pods=(pod("w2", cpu="1"),), idle_since=NOW - 10)
    result = plan_of(candidate, just_filled, pools=(a_pool(after=60),))
    decision = result.decisions[0]
    assert decision.node_names == ("a",)
    assert [c.instance_type for c in decision.replacements] == ["m5.large"]  # not onto b: it is cooling
    later = DisruptionInput(
        now=NOW + 60, config=config(a_pool(after=60)), nodes=(candidate, just_filled), catalog=TYPES
    )
    moved = planner.plan(later).decisions[0]
    assert moved.replacements == () and len(moved.nodes) == 1  # b's window ended: a plain delete


def test_pending_pods_may_still_land_on_a_cooling_node() -> None:
    candidate = managed("a", pods=(pod("w1", cpu="1"),))
    cooling = managed("b", pods=(pod("w2", cpu="1"),), idle_since=NOW - 10)
    waiting = pod("new", cpu="2")
    decision = plan_of(candidate, cooling, pools=(a_pool(after=60),), pending=(waiting,)).decisions[0]
    # the pending pod goes to b (exempt); a's pod needs its own, cheaper node
    assert [c.pods for c in decision.replacements] == [("default/w1",)]


def test_no_cooldown_when_the_pool_consolidates_at_once() -> None:
    a = managed("a", pods=(pod("w1", cpu="1"),))
    b = managed("b", pods=(pod("w2", cpu="1"),), idle_since=NOW)
    decision = plan_of(a, b, pools=(a_pool(after=0),)).decisions[0]
    assert decision.replacements == ()


# --- spot-to-spot behind its feature gate ----------------------------------------------------------------


def _spot_world(gate: bool, cheaper: int = 5) -> tuple[ClusterConfig, object]:
    types = catalog(
        *[
            instance_type(f"c{i}.large", vcpus=2, memory_gib=4, price=0.1, spot_price=0.01 + i / 1000)
            for i in range(cheaper)
        ],
        instance_type("c9.4xlarge", vcpus=16, memory_gib=32, price=0.8, spot_price=0.3),
    )
    spot_pool = replace(a_pool(), requirements=(req(wk.CAPACITY_TYPE, "In", "spot"),))
    cfg = ClusterConfig(
        "demo",
        "us-east-1",
        "1.31",
        (spot_pool,),
        (node_class(),),
        settings=Settings(spot_to_spot_consolidation=gate),
    )
    return cfg, types


def _spot_node(name: str, *pods: Pod, allocatable: dict[str, str] | None = None) -> ManagedNode:
    base = managed(
        name, type_name="m5.2xlarge", price=0.3, capacity_type="spot", pods=pods, allocatable=allocatable
    )
    labels = tuple(sorted({**dict(base.node.labels), wk.INSTANCE_TYPE: "c9.4xlarge"}.items()))
    return replace(base, node=replace(base.node, labels=labels), instance_type="c9.4xlarge")


def test_spot_to_spot_is_off_by_default_as_in_karpenter() -> None:
    assert Settings().spot_to_spot_consolidation is False
    cfg, types = _spot_world(gate=False, cheaper=20)
    result = planner.plan(
        DisruptionInput(now=NOW, config=cfg, nodes=(_spot_node("big", pod("w", cpu="1")),), catalog=types)
    )  # type: ignore[arg-type]
    assert result.decisions == ()
    assert result.reason_for("big") == (
        "SpotToSpotConsolidation is disabled (featureGates.spotToSpotConsolidation), can't replace a spot node "
        "with a spot node"
    )


def test_spot_nodes_are_still_deleted_when_their_pods_fit_elsewhere_with_the_gate_off() -> None:
    cfg, types = _spot_world(gate=False)
    nodes = (_spot_node("a", pod("w1", cpu="1")), _spot_node("b", pod("w2", cpu="1")))
    decision = planner.plan(DisruptionInput(now=NOW, config=cfg, nodes=nodes, catalog=types)).decisions[0]  # type: ignore[arg-type]
    assert decision.replacements == () and len(decision.nodes) == 1


def test_single_node_spot_to_spot_needs_fifteen_cheaper_types_and_launches_from_the_cheapest_fifteen() -> (
    None
):
    cfg, types = _spot_world(gate=True, cheaper=5)
    few = planner.plan(
        DisruptionInput(now=NOW, config=cfg, nodes=(_spot_node("big", pod("w", cpu="1")),), catalog=types)
    )  # type: ignore[arg-type]
    assert few.reason_for("big") == "spot-to-spot needs 15 cheaper types, only 5 are"
    cfg, types = _spot_world(gate=True, cheaper=20)
    many = planner.plan(
        DisruptionInput(now=NOW, config=cfg, nodes=(_spot_node("big", pod("w", cpu="1")),), catalog=types)
    )  # type: ignore[arg-type]
    (claim,) = many.decisions[0].replacements
    assert claim.capacity_type == "spot"
    assert len(claim.instance_types) <= SPOT_TO_SPOT_MIN_CHEAPER_TYPES
    assert {o.capacity_type for o in claim.offerings} == {"spot"}


def test_multi_node_spot_to_spot_needs_no_fifteen_types() -> None:
    cfg, types = _spot_world(gate=True, cheaper=5)
    small = {"cpu": "900m", "memory": "29Gi", "pods": "58"}  # each node holds only its own pod
    nodes = (
        _spot_node("a", pod("w1", cpu="800m", memory="1Gi"), allocatable=small),
        _spot_node("b", pod("w2", cpu="800m", memory="1Gi"), allocatable=small),
    )
    decision = planner.plan(DisruptionInput(now=NOW, config=cfg, nodes=nodes, catalog=types)).decisions[0]  # type: ignore[arg-type]
    assert sorted(decision.node_names) == ["a", "b"]
    assert [c.capacity_type for c in decision.replacements] == ["spot"]


# --- the savings threshold (Longshore) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "required"),
    [("$0.30/h", "$0.3000/h"), ("0.3", "$0.3000/h"), ("80%", "$0.3072/h")],
)
def test_a_move_saving_less_than_the_pool_threshold_is_left_alone(written: str, required: str) -> None:
    big = managed("big", type_name="m5.2xlarge", price=0.384, pods=(pod("w", cpu="1", memory="2Gi"),))
    result = plan_of(big, pools=(with_threshold(a_pool(), written),))
    assert result.decisions == ()
    reason, kind = passed(result, "big")
    assert kind is PassedOverKind.REJECTED
    assert reason == (
        f"left alone: the move saves $0.2880/h for pool default, under its minimum of {required} "
        f"(longshore.io/consolidation-min-savings: {written})"
    )


def test_a_move_saving_enough_passes_the_threshold() -> None:
    big = managed("big", type_name="m5.2xlarge", price=0.384, pods=(pod("w", cpu="1", memory="2Gi"),))
    result = plan_of(big, pools=(with_threshold(a_pool(), "10%"),))
    assert isinstance(result.decisions[0], Decision)


def test_the_threshold_applies_to_deletes_too() -> None:
    a = managed("a", pods=(pod("w1", cpu="1"),), idle_since=NOW - HOUR)
    b = managed("b", pods=(pod("w2", cpu="1"),), idle_since=NOW - HOUR)
    result = plan_of(a, b, pools=(with_threshold(a_pool(), "$0.50/h"),))
    assert result.decisions == ()
    assert {passed(result, n)[1] for n in "ab"} == {PassedOverKind.REJECTED}


@pytest.mark.parametrize("text", ["lots", "150%", "-1", "$-0.1/h", "1e9"])
def test_threshold_values_that_mean_nothing_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"longshore\.io/consolidation-min-savings"):
        SavingsThreshold.parse(text)

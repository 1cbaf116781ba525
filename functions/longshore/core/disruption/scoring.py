"""Is a consolidation move worth its disruption: Karpenter's Balanced score, and Longshore's savings threshold.

Theory of operation.

**Balanced** (`consolidationPolicy: Balanced`, Karpenter v1.14.0; kubernetes-sigs/karpenter
`designs/balanced-consolidation.md`, `pkg/controllers/disruption/balanced.go`). A move's score compares the
share of its pool's cost it saves with the share of its pool's disruption it causes:

    score = (savings / pool total $/h) / (move disruption cost / pool total disruption cost)

and the move is approved when `score >= 1/k`, with `k = 2` (`BALANCED_K`). A node's disruption cost is 1
(`PER_NODE_BASE_DISRUPTION_COST`) plus, for each pod that would be evicted, `max(0, EvictionCost(pod))`, where
`EvictionCost = clamp(1 + pod-deletion-cost / 2^27 + priority / 2^25, -10, 10)` (`guards.eviction_cost`);
a move's is the sum over its nodes. Pool totals count every managed node of the pool, candidates or not,
once per pass. A move that spans pools is scored for each Balanced pool alone, with the net savings split in
proportion to each pool's share of the $/h removed, and passes only if every Balanced pool approves; pools
with another policy are not scored. Savings of zero or less score 0. A node whose best move (a delete,
saving its whole price) cannot reach the threshold is not evaluated (`CanPassThreshold`).

**Savings threshold** (a Longshore extension, `longshore.io/consolidation-min-savings` on the NodePool, see
`core.model.SavingsThreshold`): each source pool's share of the net savings must reach the pool's minimum,
`max(per_hour, fraction x the $/h the move removes from that pool)`. A pool without the annotation requires
`DisruptionInput.consolidation_min_savings_fraction` (5 %) of what it removes. This applies under every
consolidation policy, so full nodes are not churned for pennies.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from longshore.core.disruption.guards import eviction_cost
from longshore.core.disruption.state import DisruptionInput, ManagedNode
from longshore.core.model import SAVINGS_THRESHOLD_ANNOTATION, NodePool

BALANCED_K: Final = 2
PER_NODE_BASE_DISRUPTION_COST: Final = 1.0


def reschedule_disruption_cost(node: ManagedNode) -> float:
    """Karpenter's `RescheduleDisruptionCost`: 1 + the positive eviction costs of the pods that would move."""
    return PER_NODE_BASE_DISRUPTION_COST + sum(max(0.0, eviction_cost(p)) for p in node.reschedulable_pods())


def savings_ratio(node: ManagedNode) -> float:
    """$/h per unit of disruption: consolidation tries the highest first (Karpenter `Candidate.SavingsRatio`)."""
    return node.price / reschedule_disruption_cost(node)


@dataclass(frozen=True, slots=True)
class PoolTotals:
    cost: float  # $/h of every managed node of the pool
    disruption: float  # sum of their disruption costs


def pool_totals(inp: DisruptionInput) -> dict[str, PoolTotals]:
    cost: dict[str, float] = defaultdict(float)
    disruption: dict[str, float] = defaultdict(float)
    for node in inp.nodes:
        cost[node.nodepool] += node.price
        disruption[node.nodepool] += reschedule_disruption_cost(node)
    return {name: PoolTotals(cost[name], disruption[name]) for name in cost}


@dataclass(frozen=True, slots=True)
class PoolScore:
    """One Balanced pool's verdict on a move (Karpenter `ScoreResult`)."""

    pool: str
    savings: float  # the pool's share of the net $/h saved
    savings_fraction: float
    disruption_fraction: float
    k: int = BALANCED_K

    @property
    def score(self) -> float:
        if self.savings_fraction <= 0:
            return 0.0
        if self.disruption_fraction == 0:
            return float("inf")
        return self.savings_fraction / self.disruption_fraction

    @property
    def threshold(self) -> float:
        return 1.0 / self.k

    @property
    def approved(self) -> bool:
        return self.score >= self.threshold

    def describe(self) -> str:
        """Karpenter's event text: `score 3.33 >= threshold 0.50 (k: 2, savings 12.5%, disruption 3.8%)`."""
        sign = ">=" if self.approved else "<"
        return (
            f"score {self.score:.2f} {sign} threshold {self.threshold:.2f} (k: {self.k}, "
            f"savings {self.savings_fraction * 100:.1f}%, disruption {self.disruption_fraction * 100:.1f}%)"
        )


def _score(pool: str, savings: float, disruption: float, totals: PoolTotals | None) -> PoolScore:
    if totals is None or totals.cost <= 0 or totals.disruption <= 0:
        return PoolScore(pool, savings, 0.0, 0.0)  # nothing to normalise against: scores 0, never approved
    return PoolScore(pool, savings, savings / totals.cost, disruption / totals.disruption)


def balanced_scores(
    removed: Sequence[ManagedNode],
    savings: float,
    pools: Mapping[str, NodePool],
    totals: Mapping[str, PoolTotals],
) -> tuple[PoolScore, ...]:
    """The score of each Balanced source pool of a move that saves `savings` $/h net (`EvaluateBalancedMove`)."""
    by_pool: dict[str, list[ManagedNode]] = defaultdict(list)
    for node in removed:
        by_pool[node.nodepool].append(node)
    removed_cost = sum(n.price for n in removed)
    out: list[PoolScore] = []
    for name, nodes in sorted(by_pool.items()):
        pool = pools.get(name)
        if pool is None or pool.disruption.consolidation_policy != "Balanced":
            continue
        share = savings
        if len(by_pool) > 1 and removed_cost > 0:
            share = savings * sum(n.price for n in nodes) / removed_cost
        disruption = sum(reschedule_disruption_cost(n) for n in nodes)
        out.append(_score(name, share, disruption, totals.get(name)))
    return tuple(out)


def delete_score(node: ManagedNode, pool: NodePool, totals: Mapping[str, PoolTotals]) -> PoolScore | None:
    """The best score any move of `node` alone can reach (a delete saves its whole price), for a Balanced
    pool; None for other policies."""
    if pool.disruption.consolidation_policy != "Balanced":
        return None
    return _score(pool.name, node.price, reschedule_disruption_cost(node), totals.get(pool.name))


def balanced_refusal(scores: Sequence[PoolScore]) -> str | None:
    """Why Balanced rejects the move (the first pool that does), or None when every pool approves."""
    for result in scores:
        if not result.approved:
            return (
                f"Balanced consolidation rejects the move for pool {result.pool}: saving ${result.savings:.4f}/h "
                f"is not worth the disruption: {result.describe()}"
            )
    return None


def threshold_refusal(
    removed: Sequence[ManagedNode], savings: float, pools: Mapping[str, NodePool], default_fraction: float
) -> tuple[str, bool] | None:
    """Why the move saves too little for a source pool's savings threshold, and whether that threshold is the
    pool's own (the annotation) rather than the default; None when it saves enough."""
    by_pool: dict[str, float] = defaultdict(float)
    for node in removed:
        by_pool[node.nodepool] += node.price
    removed_cost = sum(by_pool.values())
    for name, pool_cost in sorted(by_pool.items()):
        pool = pools.get(name)
        threshold = pool.disruption.consolidation_threshold if pool is not None else None
        share = savings * pool_cost / removed_cost if removed_cost > 0 else savings
        if threshold is None:
            if share < default_fraction * pool_cost:
                return (
                    f"saving ${savings:.4f}/h is under {default_fraction:.0%} of ${removed_cost:.4f}/h; "
                    "not worth the disruption",
                    False,
                )
            continue
        required = max(threshold.per_hour, threshold.fraction * pool_cost)
        if share < required:
            return (
                f"left alone: the move saves ${share:.4f}/h for pool {name}, under its minimum of "
                f"${required:.4f}/h ({SAVINGS_THRESHOLD_ANNOTATION}: {threshold.written})",
                True,
            )
    return None

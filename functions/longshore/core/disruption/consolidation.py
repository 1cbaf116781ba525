"""Consolidation: which set of underutilized nodes to delete or repack onto cheaper nodes, and re-validation.

Theory of operation (kubernetes-sigs/karpenter `pkg/controllers/disruption/consolidation.go`,
`multinodeconsolidation.go`, `singlenodeconsolidation.go`, v1.14.1):

- **Candidates**: nodes with pods of pools that consolidate them (`WhenEmptyOrUnderutilized` or `Balanced`;
  `WhenEmpty` pools and `consolidateAfter: Never` pools are passed over), past `consolidateAfter` since their
  last pod event, not guarded. They are tried in order of $/h per unit of disruption cost (Karpenter's
  `SavingsRatio`, `scoring.savings_ratio`), highest first, within each pool's `Underutilized` budget.
- **Search**: beyond Karpenter's m→1, a set of nodes may be repacked onto *any* cheaper set of new nodes,
  because the packing engine plans whole batches. The largest valid prefix of the first 100 candidates is
  found by binary search (the whole prefix is tried first, which after a scale-down usually holds and costs
  one packing run); then single nodes are tried in order, and a plain delete may beat a repack.
- **Cooldown**: the simulation never plans a candidate's pods onto a node still inside its pool's
  `consolidateAfter` window (`passes.cooling_nodes`), as Karpenter's consolidation simulation refuses; so a node
  that just received pods is neither a candidate nor a destination until its window ends.
- **A move is refused** when a pod would have nowhere to go (or would wait for a node not initialized), when
  the only replacement is the node's own type or the new nodes cost as much or more, when spot would move to
  spot and `featureGates.spotToSpotConsolidation` is off (Karpenter's default), or, with the gate on, when a
  single spot node has fewer than 15 cheaper spot types (the replacement is then launched from the 15
  cheapest only, so it is not consolidated again at once). A move that spans several spot nodes needs no
  such count, as in Karpenter. It is *rejected* (`PassedOverKind.REJECTED`) when it saves less than a
  source pool's own savings threshold, or when a `Balanced` pool's score is under 1/k (`scoring`); saving
  less than the default 5 % stays an ordinary refusal (`UNCONSOLIDATABLE`).
- **Re-validation**: a decision carries `validate_after = now + 15 s`; `revalidate` re-checks it on a fresh
  snapshot before anything acts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from longshore.core import labels as wk
from longshore.core.commands import DisruptionReason
from longshore.core.disruption import budgets
from longshore.core.disruption.decisions import Decision, PassedOverKind
from longshore.core.disruption.guards import graceful_blocker
from longshore.core.disruption.passes import PassState, replacements
from longshore.core.disruption.scoring import (
    balanced_refusal,
    balanced_scores,
    delete_score,
    pool_totals,
    savings_ratio,
    threshold_refusal,
)
from longshore.core.disruption.state import DisruptionInput, ManagedNode
from longshore.core.scheduling.plan import ClaimPlan

VALIDATION_DELAY_S = 15.0
MULTI_NODE_MAX_CANDIDATES = 100
SINGLE_NODE_MAX_EVALUATIONS = 60
SPOT_TO_SPOT_MIN_CHEAPER_TYPES = 15


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a move is not made, and what kind of "no" it is for the nodes it would have removed."""

    reason: str
    kind: PassedOverKind = PassedOverKind.UNCONSOLIDATABLE


def _may_be_spot(claim: ClaimPlan) -> bool:
    return claim.capacity_type == "spot" or any(o.capacity_type == "spot" for o in claim.offerings)


def _cheapest_spot(claim: ClaimPlan, below: float) -> tuple[str, ...]:
    """The instance types with a spot offering cheaper than `below`, cheapest first."""
    seen: dict[str, None] = {}
    for offering in sorted(claim.offerings, key=lambda o: o.price):
        if offering.capacity_type == "spot" and offering.price < below:
            seen.setdefault(offering.instance_type, None)
    return tuple(seen)


class ConsolidatingPass(PassState):
    def __init__(self, inp: DisruptionInput) -> None:
        super().__init__(inp)
        self.totals = pool_totals(inp)

    def consolidation_candidates(self) -> list[ManagedNode]:
        found: list[ManagedNode] = []
        for node in self.open_nodes():
            pool = self.pool_of(node)
            if pool is None or node.is_empty or self.static(node, pool):
                continue
            if pool.disruption.consolidation_policy == "WhenEmpty":
                self.pass_over(
                    node,
                    f"pool {pool.name} only removes empty nodes (WhenEmpty)",
                    PassedOverKind.UNCONSOLIDATABLE,
                )
                continue
            after = pool.disruption.consolidate_after_seconds
            if after is None:
                self.pass_over(
                    node,
                    f"pool {pool.name} never consolidates (consolidateAfter Never)",
                    PassedOverKind.UNCONSOLIDATABLE,
                )
                continue
            if self.inp.now - node.idle_since() < after:
                self.pass_over(
                    node,
                    f"pods changed {self.inp.now - node.idle_since():.0f}s ago; pool waits {after}s",
                    PassedOverKind.TRANSIENT,
                    node.idle_since() + after,
                )
                continue
            blocker = self.inp.placement_blocker(node.nodepool) or graceful_blocker(
                node, self.inp.pdbs, self.inp.now, for_consolidation=True
            )
            if blocker:
                self.pass_over(node, blocker, PassedOverKind.BLOCKED)
                continue
            found.append(node)
        return sorted(found, key=lambda n: (-savings_ratio(n), n.name))

    def spot_refusal(
        self, removed: Sequence[ManagedNode], claims: tuple[ClaimPlan, ...], removed_cost: float
    ) -> Refusal | tuple[ClaimPlan, ...]:
        """Karpenter's spot-to-spot rule (`computeSpotToSpotConsolidation`), or the claims to launch."""
        if not all(n.capacity_type == "spot" for n in removed) or not any(_may_be_spot(c) for c in claims):
            return claims
        if not self.inp.config.settings.spot_to_spot_consolidation:
            return Refusal(
                "SpotToSpotConsolidation is disabled (featureGates.spotToSpotConsolidation), can't replace "
                "a spot node with a spot node"
            )
        if len(removed) > 1:
            return claims
        out: list[ClaimPlan] = []
        for claim in claims:
            if claim.capacity_type != "spot":
                out.append(claim)
                continue
            cheaper = _cheapest_spot(claim, removed_cost / len(claims))
            if len(cheaper) < SPOT_TO_SPOT_MIN_CHEAPER_TYPES:
                return Refusal(
                    f"spot-to-spot needs {SPOT_TO_SPOT_MIN_CHEAPER_TYPES} cheaper types, only {len(cheaper)} are"
                )
            keep = set(
                cheaper[
                    : max(
                        SPOT_TO_SPOT_MIN_CHEAPER_TYPES, claim.requirements.min_values(wk.INSTANCE_TYPE) or 0
                    )
                ]
            )
            out.append(
                replace(
                    claim,
                    instance_types=tuple(t for t in claim.instance_types if t in keep)
                    or claim.instance_types,
                    offerings=tuple(
                        o for o in claim.offerings if o.instance_type in keep and o.capacity_type == "spot"
                    )
                    or claim.offerings,
                )
            )
        return tuple(out)

    def evaluate(self, removed: Sequence[ManagedNode]) -> Decision | Refusal:
        plan = self.simulate(removed, cooldown=True)
        stranded = self.stranded(plan, removed)
        if stranded:
            return Refusal(stranded)
        # Pending pods the engine would launch for anyway are not this move's cost.
        claims = replacements(plan, removed)
        removed_cost = sum(n.price for n in removed)
        added = sum(c.price_per_hour for c in claims)
        savings = removed_cost - added
        if claims:
            removed_types = {n.instance_type for n in removed}
            if len(removed) == 1 and len(claims) == 1 and claims[0].instance_type in removed_types:
                return Refusal(f"the cheapest replacement is the same type ({claims[0].instance_type})")
            if savings <= 0:
                return Refusal(
                    f"no cheaper option: replacements cost ${added:.4f}/h vs ${removed_cost:.4f}/h now"
                )
            spot = self.spot_refusal(removed, claims, removed_cost)
            if isinstance(spot, Refusal):
                return spot
            claims = spot
        too_little = threshold_refusal(
            removed, savings, self.pools, self.inp.consolidation_min_savings_fraction
        )
        if too_little:
            reason, own = too_little  # the long-standing 5 % default stays "Unconsolidatable"
            return Refusal(reason, PassedOverKind.REJECTED if own else PassedOverKind.UNCONSOLIDATABLE)
        scores = balanced_scores(removed, savings, self.pools, self.totals)
        rejected = balanced_refusal(scores)
        if rejected:
            return Refusal(rejected, PassedOverKind.REJECTED)
        names = ", ".join(n.name for n in removed)
        if claims:
            what = ", ".join(f"{c.instance_type}/{c.capacity_type}" for c in claims)
            text = f"repack {names} onto {what}, saving ${savings:.4f}/h"
        else:
            text = f"pods of {names} fit on other nodes, saving ${savings:.4f}/h"
        return Decision(
            DisruptionReason.UNDERUTILIZED,
            tuple(removed),
            text,
            replacements=claims,
            savings_per_hour=round(savings, 6),
            validate_after=self.inp.now + VALIDATION_DELAY_S,
            scores=scores,
        )

    def within_budget(self, candidates: Iterable[ManagedNode]) -> list[ManagedNode]:
        left: dict[str, int] = {}
        out: list[ManagedNode] = []
        for node in candidates:
            pool = self.pools[node.nodepool]
            if pool.name not in left:
                left[pool.name] = self.budgets.allowance(pool, DisruptionReason.UNDERUTILIZED).allowed
            if left[pool.name] <= 0:
                allowance = self.budgets.allowance(pool, DisruptionReason.UNDERUTILIZED)
                self.pass_over(
                    node, allowance.describe(pool.name, budgets.UNDERUTILIZED), PassedOverKind.BLOCKED
                )
                continue
            left[pool.name] -= 1
            out.append(node)
        return out

    def consolidation(self) -> list[Decision]:
        candidates = self.within_budget(self.consolidation_candidates())
        if not candidates:
            return []
        prefix = candidates[:MULTI_NODE_MAX_CANDIDATES]
        best: Decision | None = None
        low, high = 2, len(prefix)
        if (
            high >= low
        ):  # the whole prefix first: in a cluster after a scale-down it usually holds (one solve)
            whole = self.evaluate(prefix)
            if isinstance(whole, Decision):
                best, low = whole, high + 1
            else:
                high -= 1
        while low <= high:  # binary search for the largest valid prefix (Karpenter's multi-node method)
            mid = (low + high) // 2
            result = self.evaluate(prefix[:mid])
            if isinstance(result, Decision):
                best, low = result, mid + 1
            else:
                high = mid - 1
        if best is None or best.replacements:
            # A plain delete of one node can beat a repack that saves no more and launches nodes.
            for node in candidates[:SINGLE_NODE_MAX_EVALUATIONS]:
                pool = self.pools[node.nodepool]
                upper = delete_score(node, pool, self.totals)
                if upper is not None and not upper.approved:  # Karpenter `CanPassThreshold`
                    self.pass_over(
                        node,
                        f"Balanced consolidation: even deleting it (saving ${node.price:.4f}/h) is not worth "
                        f"the disruption: {upper.describe()}",
                        PassedOverKind.REJECTED,
                    )
                    continue
                result = self.evaluate([node])
                if isinstance(result, Decision):
                    if best is None or _preference(result) > _preference(best):
                        best = result
                    break
                self.pass_over(node, result.reason, result.kind)
        if best is None:
            return []
        for node in best.nodes:
            self.budgets.take(node.nodepool)
        return [self.decide(best)]


def _preference(decision: Decision) -> tuple[float, int, int]:
    """More saved first; on a tie, fewer launches, then fewer nodes disrupted."""
    return (round(decision.savings_per_hour, 6), -len(decision.replacements), -len(decision.nodes))


def revalidate(decision: Decision, inp: DisruptionInput) -> Decision | str:
    """Re-check a consolidation decision on a fresh snapshot, 15 s after it was made.

    Valid when every node still exists, is still a candidate, the pools' `Underutilized` budgets still allow
    the move, and the move is still a delete (for a delete) or still saves money with no more replacements
    than planned (for a replace), and still passes the savings threshold and the Balanced score.
    """
    fresh = {n.name: n for n in inp.nodes}
    nodes: list[ManagedNode] = []
    for node in decision.nodes:
        current = fresh.get(node.name)
        if current is None:
            return f"node {node.name} is gone"
        blocker = inp.placement_blocker(current.nodepool) or graceful_blocker(
            current, inp.pdbs, inp.now, for_consolidation=True
        )
        if blocker:
            return f"node {node.name}: {blocker}"
        nodes.append(current)
    check = ConsolidatingPass(inp)
    per_pool: dict[str, int] = defaultdict(int)
    for node in nodes:
        per_pool[node.nodepool] += 1
    for pool_name, count in sorted(per_pool.items()):
        pool = check.pools.get(pool_name)
        if pool is None:
            return f"pool {pool_name} no longer exists"
        allowance = check.budgets.allowance(pool, DisruptionReason.UNDERUTILIZED)
        if allowance.allowed < count:
            return allowance.describe(pool.name, budgets.UNDERUTILIZED)
    result = check.evaluate(nodes)
    if isinstance(result, Refusal):
        return result.reason
    if len(result.replacements) > len(decision.replacements):
        return "the move now needs more replacement nodes than planned"
    return replace(result, validate_after=None)

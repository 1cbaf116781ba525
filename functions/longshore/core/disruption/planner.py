"""The disruption planner: which nodes to remove or replace now, and why every other node stays.

Theory of operation. One pass looks at a `DisruptionInput` snapshot and returns a `DisruptionPlan`:
commands to carry out (`Decision`) and, for every managed node left alone, a sentence saying why and the
kind of reason it is (`PassedOver`, `PassedOverKind`; all in `decisions.py`). Node auto-repair comes first
(`repair.py`: forceful, unbudgeted, held off when over 20 % of a pool is unhealthy); then the methods run in
this order, sharing the pools' budgets within the pass:

1. **Expiry** (`expireAfter` / `ttlSecondsUntilExpired`). Pools written as v1 expire forcefully: no budget,
   no pod guard at decision time (the drain still honours PDBs until the termination grace period). Pools
   written in the older dialects expire gracefully: guarded and budgeted (reason `Expired`).
2. **Emptiness**: empty nodes whose `consolidateAfter` (or `ttlSecondsAfterEmpty`) has elapsed, all
   removed in one decision, as many as the `Empty` budgets allow.
3. **Drift**: a changed pool or node-class hash, an AMI that is no longer the resolved one, or labels the
   pool's requirements no longer admit. Empty drifted nodes first, then the oldest; one decision per node,
   with its replacements planned first.
4. **Consolidation** (WhenEmptyOrUnderutilized), only when the pass has nothing else to do. Beyond
   Karpenter's m→1: a set of nodes may be repacked onto *any* cheaper set of new nodes. Candidates are
   ordered by $/h saved per unit of disruption; the largest valid prefix is found by binary search (the
   whole prefix first: after a scale-down it usually holds), then single nodes are tried in order.
   A move must save at least `consolidation_min_savings_fraction` of what it removes, never replaces a
   node with its own type or a pricier set, and moves spot to spot only with at least 15 cheaper types.
   Decisions carry `validate_after = now + 15 s`; `revalidate` re-checks them on a fresh snapshot. Nodes of
   static pools (`replicas`) are never candidates for emptiness or consolidation.

Each evaluation asks the packing engine where the evicted pods would go, so a decision never strands a pod.

Decisions of one pass account for each other. Every simulation removes the nodes already decided in the
pass and reschedules their pods too, so two decisions never count on the same free capacity. A node that a
decision plans to take evicted pods (a *receiver*) is not removed by any later method of the same pass; it
is passed over and reconsidered on the next pass, when those pods have landed (else the expiry of one busy
node and the emptiness of the only node that could take its pods would strand them). The cost: at most one
spare replacement, which consolidation removes later.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from longshore.core.commands import DisruptionReason
from longshore.core.disruption import budgets, repair
from longshore.core.disruption.decisions import Decision, DisruptionPlan, PassedOver, PassedOverKind
from longshore.core.disruption.drift import drift_reason
from longshore.core.disruption.guards import disruption_cost, graceful_blocker, node_blocker
from longshore.core.disruption.state import DisruptionInput, ManagedNode
from longshore.core.model import NodePool
from longshore.core.scheduling import solve
from longshore.core.scheduling.inputs import ExistingNode, SchedulingInput
from longshore.core.scheduling.plan import ClaimPlan, Plan

VALIDATION_DELAY_S = 15.0
MULTI_NODE_MAX_CANDIDATES = 100
SINGLE_NODE_MAX_EVALUATIONS = 60
SPOT_TO_SPOT_MIN_CHEAPER_TYPES = 15


class _Pass:
    def __init__(self, inp: DisruptionInput) -> None:
        self.inp = inp
        self.pools = {p.name: p for p in inp.config.node_pools}
        self.budgets = budgets.PassBudgets(inp)
        self.decided: set[str] = set()
        # nodes that may not take moved pods yet: Karpenter's "would schedule against an uninitialized node"
        self.booting = {n.name for n in inp.nodes if not n.node.initialized} | {
            n.name for n in inp.unmanaged if not n.initialized
        }
        self.receivers: dict[str, str] = {}  # node -> the decided node whose evicted pods it takes
        self.passed: dict[str, tuple[str, PassedOverKind]] = {}
        self.retry_at: dict[str, float] = {}

    # -- helpers ------------------------------------------------------------------------------------------
    def pool_of(self, node: ManagedNode) -> NodePool | None:
        return self.pools.get(node.nodepool)

    def pass_over(
        self, node: ManagedNode, reason: str, kind: PassedOverKind, retry_at: float | None = None
    ) -> None:
        """Record why `node` stays (the first reason a pass finds is the one it keeps)."""
        if node.name in self.passed:
            return
        self.passed[node.name] = (reason, kind)
        if retry_at is not None:
            self.retry_at[node.name] = retry_at

    def static(self, node: ManagedNode, pool: NodePool) -> bool:
        """Pass over a node of a static pool (`replicas`): never consolidated, empty or not (core.static_pools)."""
        if pool.replicas is not None:
            self.pass_over(node, f"pool {pool.name} is static (replicas)", PassedOverKind.UNCONSOLIDATABLE)
        return pool.replicas is not None

    def open_nodes(self) -> list[ManagedNode]:
        return [n for n in self.inp.nodes if n.name not in self.decided]

    def receiving(self, node: ManagedNode, why: str) -> bool:
        """Pass over `node` if a decision of this pass plans to put evicted pods on it."""
        source = self.receivers.get(node.name)
        if source is None:
            return False
        self.pass_over(
            node,
            f"{why}, but it takes pods evicted from {source} in this pass; next pass",
            PassedOverKind.BLOCKED,
        )
        return True

    def simulate(self, removed: Sequence[ManagedNode]) -> Plan:
        """Where the removed nodes' pods (and the pending ones) would go with those nodes gone.

        The nodes already decided in this pass are gone too, and their pods are rescheduled alongside.
        """
        gone = {n.name for n in removed} | self.decided
        leaving = [*(n for n in self.inp.nodes if n.name in self.decided), *removed]
        pods = tuple(
            replace(p, node_name="", nominated_node_name="") for n in leaving for p in n.reschedulable_pods()
        )
        others: list[ExistingNode] = [
            n.node for n in self.inp.nodes if n.name not in gone and not n.disrupting
        ]
        others.extend(self.inp.unmanaged)
        return solve(
            SchedulingInput(
                pods=(*self.inp.pending, *pods),
                pools=self.inp.config.pools_by_weight(),
                node_classes=self.inp.config.node_classes,
                catalog=self.inp.catalog,
                nodes=tuple(others),
                in_flight=self.inp.in_flight,
                daemonsets=self.inp.daemonsets,
                unavailable=self.inp.unavailable,
                settings=self.inp.config.settings,
            )
        )

    def stranded(self, plan: Plan, removed: Sequence[ManagedNode]) -> str | None:
        """Why the removed nodes' pods would not all run at once elsewhere: one with nowhere to go, or one
        that would wait for a node not initialized yet (an in-flight claim, a booting node), as Karpenter's
        disruption simulation refuses (kubernetes-sigs/karpenter pkg/controllers/disruption/helpers.go)."""
        moved = {p.key for n in removed for p in n.reschedulable_pods()}
        for pod, reason in plan.unschedulable:
            if pod in moved:
                return f"pod {pod} would have nowhere to go ({reason})"
        for placement in plan.existing:
            if placement.in_flight or placement.node in self.booting:
                waiting = next((p for p in placement.pods if p in moved), None)
                if waiting is not None:
                    return f"pod {waiting} would wait for node {placement.node}, not initialized yet"
        return None

    def decide(self, decision: Decision, plan: Plan | None = None) -> Decision:
        """Record `decision`; `plan` is its simulation, whose existing nodes that take pods become receivers."""
        for node in decision.nodes:
            self.decided.add(node.name)
            self.passed.pop(node.name, None)
            self.retry_at.pop(node.name, None)
        if plan is not None:
            moved = {p.key: n.name for n in decision.nodes for p in n.reschedulable_pods()}
            for placement in plan.existing:
                sources = sorted({moved[p] for p in placement.pods if p in moved})
                if sources and not placement.in_flight:
                    self.receivers.setdefault(placement.node, ", ".join(sources))
        return decision

    # -- methods ------------------------------------------------------------------------------------------
    def expiry(self) -> list[Decision]:
        out: list[Decision] = []
        for node in sorted(self.open_nodes(), key=lambda n: n.created_at):
            pool = self.pool_of(node)
            if pool is None or pool.expiry.after_seconds is None:
                continue
            expires_at = node.created_at + pool.expiry.after_seconds
            if self.inp.now < expires_at:
                continue
            age_h = (self.inp.now - node.created_at) / 3600
            why = f"{age_h:.1f}h old; pool {pool.name} expires nodes after {pool.expiry.after_seconds / 3600:g}h"
            if node.disrupting or self.receiving(node, "expired"):
                continue
            if not pool.expiry.forceful:
                blocker = graceful_blocker(node, self.inp.pdbs, self.inp.now)
                if blocker:
                    self.pass_over(node, f"expired but waiting: {blocker}", PassedOverKind.BLOCKED)
                    continue
                allowance = self.budgets.allowance(pool, DisruptionReason.EXPIRED)
                if allowance.allowed <= 0:
                    why_not = allowance.describe(pool.name, budgets.EXPIRED)
                    self.pass_over(node, f"expired but {why_not}", PassedOverKind.BLOCKED)
                    continue
            plan = self.simulate([node])
            self.budgets.take(pool.name)
            mode = "forceful (v1)" if pool.expiry.forceful else "graceful (older dialect)"
            out.append(
                self.decide(
                    Decision(
                        DisruptionReason.EXPIRED,
                        (node,),
                        f"{why}; {mode}",
                        replacements=_replacements(plan, [node]),
                        forceful=pool.expiry.forceful,
                    ),
                    plan,
                )
            )
        return out

    def emptiness(self) -> list[Decision]:
        chosen: list[ManagedNode] = []
        for node in sorted(self.open_nodes(), key=lambda n: (n.idle_since(), n.name)):
            pool = self.pool_of(node)
            if pool is None or not node.is_empty or self.static(node, pool):
                continue
            after = pool.disruption.consolidate_after_seconds
            if after is None:
                self.pass_over(
                    node,
                    f"empty, but pool {pool.name} never removes empty nodes (consolidateAfter Never)",
                    PassedOverKind.UNCONSOLIDATABLE,
                )
                continue
            if self.receiving(node, "empty"):
                continue
            idle = self.inp.now - node.idle_since()
            if idle < after:
                self.pass_over(
                    node,
                    f"empty for {idle:.0f}s of the {after}s pool {pool.name} waits",
                    PassedOverKind.TRANSIENT,
                    node.idle_since() + after,
                )
                continue
            blocker = node_blocker(node, self.inp.now, for_consolidation=False)
            if blocker:
                self.pass_over(node, blocker, PassedOverKind.BLOCKED)
                continue
            allowance = self.budgets.allowance(pool, DisruptionReason.EMPTY)
            if allowance.allowed <= 0:
                self.pass_over(node, allowance.describe(pool.name, budgets.EMPTY), PassedOverKind.BLOCKED)
                continue
            self.budgets.take(pool.name)
            chosen.append(node)
        if not chosen:
            return []
        saved = sum(n.price for n in chosen)
        names = ", ".join(n.name for n in chosen)
        return [
            self.decide(
                Decision(
                    DisruptionReason.EMPTY,
                    tuple(chosen),
                    f"empty past consolidateAfter: {names}",
                    savings_per_hour=round(saved, 6),
                )
            )
        ]

    def drift(self) -> list[Decision]:
        drifted: list[tuple[ManagedNode, NodePool, str]] = []
        for node in self.open_nodes():
            pool = self.pool_of(node)
            if pool is None or node.initialized_at is None:
                continue
            why = drift_reason(node, pool, self.inp)
            if why:
                drifted.append((node, pool, why))
        out: list[Decision] = []
        for node, pool, why in sorted(drifted, key=lambda t: (not t[0].is_empty, t[0].created_at)):
            if self.receiving(node, f"drifted ({why})"):
                continue
            blocker = graceful_blocker(node, self.inp.pdbs, self.inp.now)
            if blocker and pool.termination_grace_period_seconds is None:
                self.pass_over(node, f"drifted ({why}) but {blocker}", PassedOverKind.BLOCKED)
                continue
            allowance = self.budgets.allowance(pool, DisruptionReason.DRIFTED)
            if allowance.allowed <= 0:
                why_not = allowance.describe(pool.name, budgets.DRIFTED)
                self.pass_over(node, f"drifted ({why}) but {why_not}", PassedOverKind.BLOCKED)
                continue
            plan = self.simulate([node])
            stranded = self.stranded(plan, [node])
            if stranded:
                self.pass_over(node, f"drifted ({why}) but {stranded}", PassedOverKind.BLOCKED)
                continue
            self.budgets.take(pool.name)
            decision = Decision(
                DisruptionReason.DRIFTED, (node,), why, replacements=_replacements(plan, [node])
            )
            out.append(self.decide(decision, plan))
        return out

    # -- consolidation ------------------------------------------------------------------------------------
    def consolidation_candidates(self) -> list[ManagedNode]:
        found: list[tuple[float, ManagedNode]] = []
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
            blocker = graceful_blocker(node, self.inp.pdbs, self.inp.now, for_consolidation=True)
            if blocker:
                self.pass_over(node, blocker, PassedOverKind.BLOCKED)
                continue
            found.append((node.price / (1.0 + disruption_cost(node, pool, self.inp.now)), node))
        found.sort(key=lambda t: (-t[0], t[1].name))
        return [node for _, node in found]

    def evaluate(self, removed: Sequence[ManagedNode]) -> Decision | str:
        plan = self.simulate(removed)
        stranded = self.stranded(plan, removed)
        if stranded:
            return stranded
        # Pending pods the engine would launch for anyway are not this move's cost.
        claims = _replacements(plan, removed)
        removed_cost = sum(n.price for n in removed)
        added = sum(c.price_per_hour for c in claims)
        savings = removed_cost - added
        if claims:
            removed_types = {n.instance_type for n in removed}
            if len(removed) == 1 and len(claims) == 1 and claims[0].instance_type in removed_types:
                return f"the cheapest replacement is the same type ({claims[0].instance_type})"
            if savings <= 0:
                return f"no cheaper option: replacements cost ${added:.4f}/h vs ${removed_cost:.4f}/h now"
            if all(n.capacity_type == "spot" for n in removed) and any(
                c.capacity_type == "spot" for c in claims
            ):
                budget_price = removed_cost / max(len(claims), 1)
                for claim in claims:
                    cheaper = {o.instance_type for o in claim.offerings if o.price < budget_price}
                    if claim.capacity_type == "spot" and len(cheaper) < SPOT_TO_SPOT_MIN_CHEAPER_TYPES:
                        return (
                            f"spot-to-spot needs {SPOT_TO_SPOT_MIN_CHEAPER_TYPES} cheaper types, "
                            f"only {len(cheaper)} are"
                        )
            if savings < self.inp.consolidation_min_savings_fraction * removed_cost:
                return (
                    f"saving ${savings:.4f}/h is under {self.inp.consolidation_min_savings_fraction:.0%} "
                    f"of ${removed_cost:.4f}/h; not worth the disruption"
                )
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
        # The whole prefix first: in a cluster after a scale-down it usually holds (one solve).
        if high >= low:
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
                result = self.evaluate([node])
                if isinstance(result, Decision):
                    if best is None or _preference(result) > _preference(best):
                        best = result
                    break
                self.pass_over(node, result, PassedOverKind.UNCONSOLIDATABLE)
        if best is None:
            return []
        for node in best.nodes:
            self.budgets.take(node.nodepool)
        return [self.decide(best)]

    def run(self) -> DisruptionPlan:
        decisions, repair_blocked = repair.repairs(self, _replacements)  # node auto-repair (repair.py)
        decisions += self.expiry()
        decisions += self.emptiness()
        decisions += self.drift()
        if not decisions:
            decisions += self.consolidation()
        for node in self.inp.nodes:
            if node.name not in self.decided and node.name not in self.passed:
                if node.is_empty:
                    self.pass_over(node, "nothing to do", PassedOverKind.TRANSIENT)
                else:
                    self.pass_over(node, "no cheaper option", PassedOverKind.UNCONSOLIDATABLE)
        passed = tuple(
            PassedOver(name, why, kind, self.retry_at.get(name))
            for name, (why, kind) in sorted(self.passed.items())
        )
        return DisruptionPlan(tuple(decisions), passed, tuple(repair_blocked))


def _replacements(plan: Plan, removed: Sequence[ManagedNode]) -> tuple[ClaimPlan, ...]:
    """The new claims that take pods of `removed` (claims only for pending pods are the provisioner's)."""
    moved = {p.key for n in removed for p in n.reschedulable_pods()}
    return tuple(c for c in plan.new_claims if any(p in moved for p in c.pods))


def _preference(decision: Decision) -> tuple[float, int, int]:
    """More saved first; on a tie, fewer launches, then fewer nodes disrupted."""
    return (round(decision.savings_per_hour, 6), -len(decision.replacements), -len(decision.nodes))


def plan(inp: DisruptionInput) -> DisruptionPlan:
    """Decide this pass's disruptions (see the module docstring)."""
    return _Pass(inp).run()


def revalidate(decision: Decision, inp: DisruptionInput) -> Decision | str:
    """Re-check a consolidation decision on a fresh snapshot, 15 s after it was made.

    Valid when every node still exists, is still a candidate, the pools' `Underutilized` budgets still allow
    the move, and the move is still a delete (for a delete) or still saves money with no more replacements
    than planned (for a replace).
    """
    fresh = {n.name: n for n in inp.nodes}
    nodes: list[ManagedNode] = []
    for node in decision.nodes:
        current = fresh.get(node.name)
        if current is None:
            return f"node {node.name} is gone"
        blocker = graceful_blocker(current, inp.pdbs, inp.now, for_consolidation=True)
        if blocker:
            return f"node {node.name}: {blocker}"
        nodes.append(current)
    check = _Pass(inp)
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
    if isinstance(result, str):
        return result
    if len(result.replacements) > len(decision.replacements):
        return "the move now needs more replacement nodes than planned"
    return replace(result, validate_after=None)

"""The disruption planner: which nodes to remove or replace now, and why every other node stays.

Theory of operation. One pass looks at a `DisruptionInput` snapshot and returns a `DisruptionPlan`:
commands to carry out (`Decision`) and, for every managed node left alone, a sentence saying why and the
kind of reason it is (`PassedOver`, `PassedOverKind`; all in `decisions.py`). Node auto-repair comes first
(`repair.py`: forceful, unbudgeted, held off when over 20 % of a pool is unhealthy); then the methods run in
this order, sharing the pools' budgets within the pass:

1. **Expiry** (`expireAfter` / `ttlSecondsUntilExpired`). Pools written as v1 expire forcefully: no budget,
   no pod guard at decision time (the drain still honours PDBs until the termination grace period). Pools
   written in the older dialects expire gracefully: guarded and budgeted (reason `Expired`). A node in a
   Capacity Block expires the same way, forcefully, from 40 min before the block's end (`core.reservations`).
2. **Emptiness**: empty nodes whose `consolidateAfter` (or `ttlSecondsAfterEmpty`) has elapsed, all
   removed in one decision, as many as the `Empty` budgets allow.
3. **Drift**: a changed pool or node-class hash, an AMI that is no longer the resolved one, or labels the
   pool's requirements no longer admit. Empty drifted nodes first, then the oldest; one decision per node,
   with its replacements planned first.
4. **Consolidation** (`WhenEmptyOrUnderutilized` or `Balanced`), only when the pass has nothing else to
   do (`consolidation.py`: the search, the cooldown, spot-to-spot behind its feature gate, the savings
   threshold and the Balanced score of `scoring.py`, and the 15 s re-validation, `revalidate`). Nodes of
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

from longshore.core.commands import DisruptionReason
from longshore.core.disruption import budgets, buffer_hold, repair
from longshore.core.disruption.consolidation import (
    MULTI_NODE_MAX_CANDIDATES as MULTI_NODE_MAX_CANDIDATES,
)
from longshore.core.disruption.consolidation import (
    SINGLE_NODE_MAX_EVALUATIONS as SINGLE_NODE_MAX_EVALUATIONS,
)
from longshore.core.disruption.consolidation import (
    SPOT_TO_SPOT_MIN_CHEAPER_TYPES as SPOT_TO_SPOT_MIN_CHEAPER_TYPES,
)
from longshore.core.disruption.consolidation import VALIDATION_DELAY_S as VALIDATION_DELAY_S
from longshore.core.disruption.consolidation import ConsolidatingPass
from longshore.core.disruption.consolidation import revalidate as revalidate
from longshore.core.disruption.decisions import Decision, DisruptionPlan, PassedOver, PassedOverKind
from longshore.core.disruption.drift import drift_reason
from longshore.core.disruption.guards import graceful_blocker, node_blocker
from longshore.core.disruption.passes import replacements
from longshore.core.disruption.state import DisruptionInput, ManagedNode
from longshore.core.model import NodePool
from longshore.core.reservations import EXPIRATION_WINDOW_S


class _Pass(ConsolidatingPass):
    # -- methods ------------------------------------------------------------------------------------------
    def expiry(self) -> list[Decision]:
        out: list[Decision] = []
        for node in sorted(self.open_nodes(), key=lambda n: n.created_at):
            pool = self.pool_of(node)
            block = node.reservation_drain_at is not None and self.inp.now >= node.reservation_drain_at
            if pool is None or (pool.expiry.after_seconds is None and not block):
                continue
            if block:  # a Capacity Block ends: forceful, as Karpenter's capacityreservation.expiration
                ends = (node.reservation_drain_at or 0.0) + EXPIRATION_WINDOW_S
                why = (
                    f"its Capacity Block ends in {max(0.0, ends - self.inp.now) / 60:.0f} min: drained from "
                    f"{EXPIRATION_WINDOW_S / 60:.0f} min before the end, before EC2 reclaims it"
                )
            else:
                expires_at = node.created_at + (pool.expiry.after_seconds or 0)
                if self.inp.now < expires_at:
                    continue
                age_h = (self.inp.now - node.created_at) / 3600
                why = f"{age_h:.1f}h old; pool {pool.name} expires nodes after {(pool.expiry.after_seconds or 0) / 3600:g}h"
            if node.disrupting or self.receiving(node, "expired"):
                continue
            forceful = block or pool.expiry.forceful
            if not forceful:
                blocker = self.inp.placement_blocker(node.nodepool) or graceful_blocker(
                    node, self.inp.pdbs, self.inp.now
                )
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
            mode = "forceful" if block else "forceful (v1)" if forceful else "graceful (older dialect)"
            out.append(
                self.decide(
                    Decision(
                        DisruptionReason.EXPIRED,
                        (node,),
                        f"{why}; {mode}",
                        replacements=replacements(plan, [node]),
                        forceful=forceful,
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
                if buffer_hold.only_buffers(node):
                    why = f"holds capacity for CapacityBuffer {', '.join(buffer_hold.held(node))}"
                    self.pass_over(node, why, PassedOverKind.UNCONSOLIDATABLE)
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
            if pool.termination_grace_period_seconds is not None:
                blocker = None  # drift with a termination grace period goes ahead past pod guards
            blocker = self.inp.placement_blocker(pool.name) or blocker
            if blocker:
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
                DisruptionReason.DRIFTED, (node,), why, replacements=replacements(plan, [node])
            )
            out.append(self.decide(decision, plan))
        return out

    def run(self) -> DisruptionPlan:
        decisions, repair_blocked = repair.repairs(self, replacements)  # node auto-repair (repair.py)
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


def plan(inp: DisruptionInput) -> DisruptionPlan:
    """Decide this pass's disruptions (see the module docstring). CapacityBuffers' virtual pods are bound
    to the nodes that hold them first (`buffer_hold`), so those nodes are neither empty nor removed below
    the buffer."""
    return _Pass(buffer_hold.hold(inp, inp.buffers)).run()

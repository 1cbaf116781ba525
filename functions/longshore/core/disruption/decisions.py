"""What a planner pass returns: the decisions to carry out, and why every other managed node stays.

Invariants: a node is in at most one `Decision` of a plan, and every managed node of the input that is in no
decision has exactly one `PassedOver` entry. A `Decision.reason` is a `DisruptionReason`; a `PassedOver`
carries a `PassedOverKind` saying what kind of "no" it is, so what follows from it (an Event, a wake-up) never
depends on the wording of its human message.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from longshore.core.commands import DisruptionReason
from longshore.core.disruption.scoring import PoolScore
from longshore.core.disruption.state import ManagedNode
from longshore.core.scheduling.plan import ClaimPlan


@dataclass(frozen=True, slots=True)
class Decision:
    reason: DisruptionReason  # unhealthy | expired | empty | drifted | underutilized
    nodes: tuple[ManagedNode, ...]
    explanation: str
    replacements: tuple[ClaimPlan, ...] = ()
    savings_per_hour: float = 0.0
    forceful: bool = False
    validate_after: float | None = None
    deadline: float | None = None  # drain deadline set by the decision itself (a repair before an EC2 event)
    scores: tuple[PoolScore, ...] = ()  # consolidation: each Balanced source pool's approving score

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)


class PassedOverKind(Enum):
    """Why, in kind, a node was not disrupted this pass."""

    TRANSIENT = "transient"
    """Only "not yet": an emptiness or `consolidateAfter` wait, or nothing to do. Changes every pass."""
    UNCONSOLIDATABLE = "unconsolidatable"
    """Consolidation has nothing better for it: no cheaper option, its pods would have nowhere to go, the pool
    never consolidates or removes empty nodes (`consolidateAfter: Never`, `WhenEmpty`)..."""
    REJECTED = "rejected"
    """Consolidation found a move but judged it not worth the disruption: the Balanced score is under its
    threshold, or the move saves less than the pool's own savings threshold (its annotation)."""
    BLOCKED = "blocked"
    """Something forbids disrupting it now: a PDB, a budget, `do-not-disrupt`, not initialized, already being
    disrupted, nominated, or it takes pods evicted by another decision of the pass."""
    REPAIR_BLOCKED = "repair-blocked"
    """Unhealthy past its toleration, but more than 20 % of its pool is unhealthy: node auto-repair holds off
    (Karpenter's `NodeRepairBlocked`)."""


@dataclass(frozen=True, slots=True)
class PassedOver:
    """A node the pass did not disrupt: the kind of reason, and the sentence for people. `retry_at` is set when
    the reason is only "not yet": the instant at which time alone lifts it (an emptiness or consolidation wait
    ending)."""

    node: str
    reason: str
    kind: PassedOverKind
    retry_at: float | None = None


@dataclass(frozen=True, slots=True)
class RepairBlocked:
    """A pool whose unhealthy nodes are too many for node auto-repair this pass (alarmed)."""

    pool: str
    unhealthy: int
    nodes: int
    allowed: int


@dataclass(frozen=True, slots=True)
class DisruptionPlan:
    decisions: tuple[Decision, ...]
    passed_over: tuple[PassedOver, ...]
    repair_blocked: tuple[RepairBlocked, ...] = ()

    def reason_for(self, node: str) -> str | None:
        for decision in self.decisions:
            if node in decision.node_names:
                return f"{decision.reason}: {decision.explanation}"
        for skipped in self.passed_over:
            if skipped.node == node:
                return skipped.reason
        return None

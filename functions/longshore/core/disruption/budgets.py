"""Disruption budgets: how many of a pool's nodes a reason may disrupt right now.

Theory of operation (Karpenter `BuildDisruptionBudgetMapping`): every budget whose `reasons` include the
reason (or that lists none) and whose schedule window is active (or that has no schedule) caps
disruptions at `nodes`: a count, or a percentage of the pool's managed, initialized nodes rounded *up*.
Several active budgets give the minimum; no active budget means unlimited. An invalid schedule fails
closed (0). Nodes already being disrupted (draining, or NotReady replacements) consume the allowance.
Budgets bound the graceful reasons (Empty, Drifted, Underutilized, and Expired for pools written in the
older dialects, where expiry was graceful); forceful v1 expiry, interruption and manual rotation bypass them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Final

from longshore.core import cron
from longshore.core.commands import DisruptionReason
from longshore.core.disruption.state import DisruptionInput
from longshore.core.model import Budget, NodePool

UNLIMITED = 1 << 30

# Reason names as budgets spell them.
EMPTY = "Empty"
DRIFTED = "Drifted"
UNDERUTILIZED = "Underutilized"
EXPIRED = "Expired"
_BUDGET_REASONS: Final = {
    DisruptionReason.EMPTY: EMPTY,
    DisruptionReason.DRIFTED: DRIFTED,
    DisruptionReason.UNDERUTILIZED: UNDERUTILIZED,
    DisruptionReason.EXPIRED: EXPIRED,
}


def budget_reason(reason: DisruptionReason) -> str | None:
    """`reason` as budgets spell it (`Empty`, `Drifted`, `Underutilized`, `Expired`); None: budgets never bound it."""
    return _BUDGET_REASONS.get(reason)


@dataclass(frozen=True, slots=True)
class Allowance:
    """What a pool's budgets allow for one reason, and which budget decided it (for explanations)."""

    allowed: int
    limiting_budget: Budget | None

    def describe(self, pool: str, reason: str) -> str:
        if self.limiting_budget is None:
            return f"pool {pool}: no budget limits {reason} disruptions now"
        budget = self.limiting_budget
        window = f" (schedule {budget.schedule!r} for {budget.duration_seconds}s)" if budget.schedule else ""
        return f"pool {pool}: budget nodes={budget.nodes}{window} allows {self.allowed} more {reason} disruption(s)"


def budget_cap(budget: Budget, num_nodes: int) -> int:
    """The cap a single active budget sets for a pool of `num_nodes` nodes."""
    text = budget.nodes.strip()
    if text.endswith("%"):
        return math.ceil(int(text[:-1]) * num_nodes / 100)
    return int(text)


def is_active(budget: Budget, now: float) -> bool | None:
    """True/False for a valid budget; None when its schedule is invalid (the caller fails closed)."""
    if budget.schedule is None:
        return True
    try:
        schedule = cron.parse(budget.schedule)
    except cron.CronError:
        return None
    return schedule.window_active(now, budget.duration_seconds or 0)


def allowance(pool: NodePool, reason: str, num_nodes: int, disrupting: int, now: float) -> Allowance:
    """How many more nodes of `pool` may be disrupted for `reason` at `now`."""
    best = UNLIMITED
    limiting: Budget | None = None
    for budget in pool.disruption.budgets:
        if budget.reasons and reason not in budget.reasons:
            continue
        active = is_active(budget, now)
        cap = 0 if active is None else budget_cap(budget, num_nodes) if active else UNLIMITED
        if cap < best:
            best, limiting = cap, budget
    return Allowance(max(best - disrupting, 0) if best < UNLIMITED else UNLIMITED, limiting)


class PassBudgets:
    """Per-pool allowances for one planner pass, decremented as the pass takes decisions.

    A pool's node count is its initialized nodes not being disrupted; nodes being disrupted or NotReady, plus
    those the pass already took, consume the allowance.
    """

    def __init__(self, inp: DisruptionInput) -> None:
        self.inp = inp
        self.taken: dict[str, int] = defaultdict(int)
        self.count: dict[str, int] = defaultdict(int)
        self.disrupting: dict[str, int] = defaultdict(int)
        for node in inp.nodes:
            if node.initialized_at is not None and not node.disrupting:
                self.count[node.nodepool] += 1
            if node.disrupting or not node.ready:
                self.disrupting[node.nodepool] += 1

    def allowance(self, pool: NodePool, reason: DisruptionReason) -> Allowance:
        spelled = budget_reason(reason)
        if spelled is None:
            raise ValueError(f"budgets do not bound {reason} disruptions")
        return allowance(
            pool,
            spelled,
            self.count[pool.name],
            self.disrupting[pool.name] + self.taken[pool.name],
            self.inp.now,
        )

    def take(self, pool: str, n: int = 1) -> None:
        self.taken[pool] += n

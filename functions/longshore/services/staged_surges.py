"""Disruptions with several replacements (staged surges): when one is ready to start or must be abandoned, and
which ones a container that lost its memory rebuilds from the claims. `services.disruption` acts on the answers.

Rules:
- A decision with more than one replacement is staged: its executions start only once every replacement
  claim is initialized, all of them at once, named by the decision's time (so a start that another container
  repeats finds the same executions).
- A staged surge is abandoned when one of its replacement claims is gone (its launch failed, or the claim was
  deleted) or when they are not all initialized `REPLACEMENT_TIMEOUT_S` after the staging.
- Rebuilt after a cold start: replacement claims launched together (the same `replaces`, the same creation
  time), at least two, not deleting, younger than `REPLACEMENT_TIMEOUT_S`, none of them already known to the
  caller, whose nodes still exist and none of which carries the disrupted taint (tainted: its executions
  already started). The reason is the one the claims recorded (drift when it is not a known reason).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Literal

from longshore.core.claims import NodeClaim
from longshore.core.commands import REASONS, DisruptionReason
from longshore.core.disruption.decisions import Decision
from longshore.core.disruption.state import ManagedNode
from longshore.core.drain import DISRUPTED_TAINT_KEY
from longshore.services.disruption_snapshot import REPLACEMENT_TIMEOUT_S, Snapshot


@dataclass(frozen=True, slots=True)
class StagedSurge:
    """A decision with several replacements: its executions start once every replacement is initialized."""

    decision: Decision
    claim_ids: tuple[str, ...]
    at: float


def progress(
    staged: StagedSurge, claims: Mapping[str, NodeClaim], now: float
) -> tuple[Literal["ready", "waiting", "abandoned"], str]:
    """Whether `staged` can start now ("ready"), still waits, or is abandoned (with why)."""
    states = [claims[i].state if i in claims else None for i in staged.claim_ids]
    if any(s is None for s in states):
        return "abandoned", "a replacement was forgotten (its launch failed)"
    if now - staged.at > REPLACEMENT_TIMEOUT_S:
        return "abandoned", f"replacements not initialized after {REPLACEMENT_TIMEOUT_S:.0f} s"
    if all(s == "initialized" for s in states):
        return "ready", ""
    return "waiting", ""


def recovered(current: Snapshot, now: float, known: Set[str]) -> list[StagedSurge]:
    """The staged surges an earlier container left, rebuilt from `current`'s claims (module docstring), oldest
    first; claims in `known` belong to surges the caller already has or started."""
    groups: dict[tuple[tuple[str, ...], float], list[NodeClaim]] = {}
    for claim in current.claims:
        if claim.replaces and claim.state != "deleting" and now - claim.created_at <= REPLACEMENT_TIMEOUT_S:
            groups.setdefault((claim.replaces, claim.created_at), []).append(claim)
    found: list[StagedSurge] = []
    for (names, created_at), claims in sorted(groups.items(), key=lambda g: g[0][1]):
        if len(claims) < 2 or any(c.id in known for c in claims):
            continue
        nodes = tuple(n for n in (current.managed(name) for name in names) if n is not None)
        if not nodes or any(tainted(n) for n in nodes):
            continue
        recorded = claims[0].disruption_reason
        decision = Decision(
            DisruptionReason(recorded) if recorded in REASONS else DisruptionReason.DRIFTED,
            nodes,
            "a surge staged before a cold start: its executions start once every replacement is initialized",
        )
        found.append(StagedSurge(decision, tuple(sorted(c.id for c in claims)), created_at))
    return found


def tainted(node: ManagedNode) -> bool:
    """The node carries the disrupted taint: a workflow has begun on it."""
    return any(t.key == DISRUPTED_TAINT_KEY for t in node.node.taints)

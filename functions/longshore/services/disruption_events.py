"""The Events the disruption planner posts on nodes, and the one-line description of a decision.

Rules:

- A node passed over is explained with an Event whose reason is `Unconsolidatable` (consolidation finds no
  better placement for it) or `DisruptionBlocked` (something forbids disrupting it now: a PDB, a budget,
  `do-not-disrupt`, a drifted or expired node whose pods would have nowhere to go...), as the planner's
  `PassedOverKind` says, never the wording of its message; an unhealthy node that repair holds off (over 20 % of
  its pool unhealthy) gets a `NodeRepairBlocked` Warning, as Karpenter posts it. Reasons that only say "not yet" (`TRANSIENT`) are
  not posted: they change every pass.
- Consolidation's own Events, as Karpenter names them (kubernetes-sigs/karpenter
  `pkg/controllers/disruption/events/events.go`, v1.14): when a consolidation decision is made (it acts after
  its 15 s re-validation), each of its nodes gets `ConsolidationCandidate`, `Consolidation candidate: <move>
  (savings: $X/h)`, and, for each `Balanced` pool that approved it, `ConsolidationApproved` with the score
  (`score 0.75 >= threshold 0.50 (k: 2, savings 75.0%, disruption 100.0%)`). A decision dropped on
  re-validation gets `ConsolidationRejected`, `Consolidation rejected: <move>, reason: <why> (savings: $X/h)`;
  so does a node passed over as `REJECTED` (the Balanced score or the pool's savings threshold said no).
- A node with an unreadable pod is a `DisruptionBlocked` Warning; a node whose disruption started gets
  `Disrupting`; a decision abandoned because a replacement could not be launched gets a `DisruptionBlocked`
  Warning on each of its nodes.
- Each (node, reason) is posted again only when its message changed other than in its numbers, or after
  `EVENT_REPEAT_S`: "empty for 31 s" and "empty for 41 s" are the same Event.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from longshore.core.disruption.decisions import Decision, DisruptionPlan, PassedOver, PassedOverKind
from longshore.ports.kube import Cluster, KubeEvent, Manifest, ObjectRef

EVENT_REPEAT_S: Final = 30 * 60.0
_EVENT_REASON: Final = {
    PassedOverKind.TRANSIENT: None,
    PassedOverKind.UNCONSOLIDATABLE: "Unconsolidatable",
    PassedOverKind.REJECTED: "ConsolidationRejected",
    PassedOverKind.BLOCKED: "DisruptionBlocked",
    PassedOverKind.REPAIR_BLOCKED: "NodeRepairBlocked",  # Karpenter's Event reason (node health controller)
}
_NUMBERS = re.compile(r"\d+(?:\.\d+)?")


def event_reason_for(passed_over: PassedOver) -> str | None:
    """The Event reason for a node passed over, from its kind: `Unconsolidatable`, `ConsolidationRejected`,
    `DisruptionBlocked`, or None (transient: not posted)."""
    return _EVENT_REASON[passed_over.kind]


class NodeEvents:
    """Posts Events on nodes through the cluster port, each repeated only as the module docstring says."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._posted: dict[tuple[str, str], tuple[str, float]] = {}  # (node, reason) -> (message, when)

    def post(
        self,
        node_manifests: Mapping[str, Manifest],
        node: str,
        reason: str,
        message: str,
        now: float,
        *,
        warning: bool = False,
    ) -> bool:
        """Post one Event on `node` (its uid from `node_manifests`); False when it was a repeat."""
        key = (node, reason)
        normal = _NUMBERS.sub("#", message)
        previous = self._posted.get(key)
        if previous is not None and previous[0] == normal and now - previous[1] < EVENT_REPEAT_S:
            return False
        manifest = node_manifests.get(node) or {}
        uid = str((manifest.get("metadata") or {}).get("uid") or "")
        self.cluster.post_event(
            KubeEvent(
                ObjectRef(kind="Node", name=node, uid=uid),
                reason,
                message,
                "Warning" if warning else "Normal",
            )
        )
        self._posted[key] = (normal, now)
        return True

    def explain(
        self,
        plan: DisruptionPlan,
        dropped: Sequence[tuple[Decision, str]],
        node_manifests: Mapping[str, Manifest],
        unreadable: Mapping[str, str],
        now: float,
        candidate: Decision | None = None,
    ) -> int:
        """Post why nodes were passed over, dropped on re-validation, or unreadable, and the consolidation
        `candidate` this pass made (see the module rules); returns how many posted."""
        posted = 0
        if candidate is not None:
            move = describe_move(candidate)
            saving = f"Consolidation candidate: {move} (savings: ${candidate.savings_per_hour:.4f}/h)"
            for member in candidate.nodes:
                posted += self.post(node_manifests, member.name, "ConsolidationCandidate", saving, now)
            for score in candidate.scores:
                for member in candidate.nodes:
                    if member.nodepool == score.pool:
                        posted += self.post(
                            node_manifests, member.name, "ConsolidationApproved", score.describe(), now
                        )
        for skipped in plan.passed_over:
            reason = event_reason_for(skipped)
            if reason is not None:
                warning = skipped.kind is PassedOverKind.REPAIR_BLOCKED
                posted += self.post(
                    node_manifests, skipped.node, reason, skipped.reason, now, warning=warning
                )
        for decision, why in dropped:
            message = (
                f"Consolidation rejected: {describe_move(decision)}, reason: {why} "
                f"(savings: ${decision.savings_per_hour:.4f}/h)"
            )
            for node in decision.node_names:
                posted += self.post(node_manifests, node, "ConsolidationRejected", message, now)
        for node, why in sorted(unreadable.items()):
            posted += self.post(node_manifests, node, "DisruptionBlocked", why, now, warning=True)
        return posted


def describe_move(decision: Decision) -> str:
    """A consolidation move in short: `delete [a, b]` or `replace [a] -> [m5.large/spot]`."""
    nodes = ", ".join(decision.node_names)
    if not decision.replacements:
        return f"delete [{nodes}]"
    claims = ", ".join(f"{c.instance_type}/{c.capacity_type}" for c in decision.replacements)
    return f"replace [{nodes}] -> [{claims}]"


def describe_decision(decision: Decision) -> str:
    """One line for people: reason, nodes, replacements and the saving."""
    parts = [f"{decision.reason}: {decision.explanation}"]
    if decision.replacements:
        parts.append(
            "replacements first: "
            + ", ".join(
                f"{c.instance_type} ({c.capacity_type}, {c.zone}, ${c.price_per_hour:.4f}/h)"
                for c in decision.replacements
            )
        )
    if decision.savings_per_hour and "saving $" not in decision.explanation:
        parts.append(f"saves ${decision.savings_per_hour:.4f}/h")
    return "; ".join(parts)

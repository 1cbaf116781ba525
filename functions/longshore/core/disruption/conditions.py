"""What the planner says about each claim's node, as NodeClaim conditions (`core.karpenter_objects.ClaimFlags`).

Rules, for every managed node with a claim, as Karpenter's NodeClaim controllers set them
(`kubernetes-sigs/karpenter` `pkg/controllers/nodeclaim/disruption/`):
- `Drifted`: the node no longer matches what its pool and node class would build today
  (`core.disruption.drift.drift_reason`); the flag carries the reason, which names what changed.
- `Consolidatable`: the pool's `consolidateAfter` has passed since the node's last pod event (or its
  initialization), the pool consolidates at all (`consolidateAfter` not `Never`, not static), and the node is an initialized
  candidate not already being disrupted. The flag carries the instant it became true.
- `Disrupting`: a removal started: the node carries the `karpenter.sh/disrupted` taint or a workflow runs for
  it, or this planner started one (`started`: node -> reason). The flag carries the reason in Karpenter's
  spelling (`Empty`, `Underutilized`, `Drifted`, `Expired`, ...), or `Disrupting` when the reason is unknown.
Pure: the planner decides these from its pass's input; `services.claim_conditions` writes them.
"""

from __future__ import annotations

from collections.abc import Mapping

from longshore.core.disruption.drift import drift_reason
from longshore.core.disruption.state import DisruptionInput, ManagedNode
from longshore.core.karpenter_objects import ClaimFlags


def _reason(reason: str) -> str:
    return reason[:1].upper() + reason[1:] if reason else "Disrupting"


def node_flags(node: ManagedNode, inp: DisruptionInput, started: Mapping[str, str]) -> ClaimFlags:
    """The conditions the planner knows for one node (see the module rules)."""
    try:
        pool = inp.config.pool(node.nodepool)
    except KeyError:
        pool = None
    disrupting = node.name in started or node.disrupting
    drifted = (drift_reason(node, pool, inp) or "") if pool is not None else ""
    since = None
    if pool is not None and not disrupting and node.initialized_at is not None:
        after = pool.disruption.consolidate_after_seconds
        if after is not None and pool.replicas is None and node.idle_since() + after <= inp.now:
            since = node.idle_since() + after
    return ClaimFlags(
        drifted=drifted,
        consolidatable_since=since,
        disrupting=_reason(started.get(node.name, "")) if disrupting else "",
    )


def claim_flags(inp: DisruptionInput, started: Mapping[str, str]) -> dict[str, ClaimFlags]:
    """Claim id -> the conditions the planner knows for its node, for every managed node with a claim."""
    return {node.claim_id: node_flags(node, inp, started) for node in inp.nodes if node.claim_id}

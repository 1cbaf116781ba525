"""Why a node may not be disrupted voluntarily right now, and what disrupting it would cost.

Theory of operation (Karpenter `ValidateNodeDisruptable` / `ValidatePodsDisruptable`, kubernetes-sigs/karpenter
`pkg/controllers/state/statenode.go`, called from `NewCandidate` in `pkg/controllers/disruption/types.go`):
graceful disruption (emptiness, drift, consolidation, and expiry of pools written in the older dialects)
skips a node that is not initialized, already being disrupted, nominated for pending pods, annotated
`karpenter.sh/do-not-disrupt` (or the v1alpha5 `do-not-consolidate`, for consolidation only), or that runs
a pod protected by `do-not-disrupt` (including its duration form) or `do-not-evict`, a pod covered by a PDB
that allows no disruption now, or a pod covered by more than one PDB. Each check returns a sentence a
person understands; the first that applies is the node's reason.

`eviction_cost` is Karpenter's per-pod disruption cost, `clamp(1 + deletion_cost / 2^27 + priority / 2^25,
-10, 10)`; `scoring` sums it into a node's disruption cost (consolidation order, Balanced score).
"""

from __future__ import annotations

from collections.abc import Sequence

from longshore.core.disruption.state import (
    DO_NOT_CONSOLIDATE,
    DO_NOT_DISRUPT,
    DO_NOT_EVICT,
    POD_DELETION_COST,
    ManagedNode,
    PdbView,
)
from longshore.core.drain import parse_go_duration, parse_timestamp
from longshore.core.pods import Pod


def pod_protected(pod: Pod, now: float) -> str | None:
    """The annotation that protects this pod from eviction right now, described; None when it has none."""
    annotations = dict(pod.annotations)
    if annotations.get(DO_NOT_EVICT, "").strip().lower() == "true":
        return f"pod {pod.key} has {DO_NOT_EVICT}=true"
    value = annotations.get(DO_NOT_DISRUPT)
    if value is None:
        return None
    if value.strip().lower() == "true":
        return f"pod {pod.key} has {DO_NOT_DISRUPT}=true"
    duration = parse_go_duration(value)
    created = parse_timestamp(pod.created_at) if pod.created_at else None
    if duration is not None and created is not None and now < created + duration:
        left = int(created + duration - now)
        return f"pod {pod.key} has {DO_NOT_DISRUPT}={value} ({left}s left)"
    return None


def pdb_blocker(pod: Pod, pdbs: Sequence[PdbView]) -> str | None:
    covering = [pdb for pdb in pdbs if pdb.covers(pod)]
    if len(covering) > 1:
        names = ", ".join(f"{p.namespace}/{p.name}" for p in covering)
        return f"pod {pod.key} is covered by more than one PDB ({names}); eviction would fail"
    if covering and covering[0].disruptions_allowed <= 0:
        pdb = covering[0]
        return f"PDB {pdb.namespace}/{pdb.name} allows no disruption now (it protects pod {pod.key})"
    return None


def node_blocker(node: ManagedNode, now: float, *, for_consolidation: bool) -> str | None:
    """Node-level reasons that stop every graceful method."""
    if node.initialized_at is None:
        return "not initialized yet"
    if node.disrupting:
        return "already being disrupted"
    if node.nominated:
        return "nominated for pending pods"
    if (node.annotation(DO_NOT_DISRUPT) or "").strip().lower() == "true":
        return f"node has {DO_NOT_DISRUPT}=true"
    if for_consolidation and (node.annotation(DO_NOT_CONSOLIDATE) or "").strip().lower() == "true":
        return f"node has {DO_NOT_CONSOLIDATE}=true"
    return None


def pods_blocker(node: ManagedNode, pdbs: Sequence[PdbView], now: float) -> str | None:
    for pod in node.reschedulable_pods():
        reason = pod_protected(pod, now) or pdb_blocker(pod, pdbs)
        if reason:
            return reason
    return None


def graceful_blocker(
    node: ManagedNode, pdbs: Sequence[PdbView], now: float, *, for_consolidation: bool = False
) -> str | None:
    return node_blocker(node, now, for_consolidation=for_consolidation) or pods_blocker(node, pdbs, now)


def eviction_cost(pod: Pod) -> float:
    """Karpenter's `EvictionCost` (kubernetes-sigs/karpenter `pkg/utils/disruption/disruption.go`):
    `clamp(1 + pod-deletion-cost / 2^27 + priority / 2^25, -10, 10)`; an unreadable deletion cost counts 0."""
    try:
        deletion_cost = float(dict(pod.annotations).get(POD_DELETION_COST, "0"))
    except ValueError:
        deletion_cost = 0.0
    return min(10.0, max(-10.0, 1 + deletion_cost / 2**27 + pod.priority / 2**25))

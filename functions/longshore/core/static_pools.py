"""Static NodePools (`spec.replicas`): keep exactly `replicas` nodes, whatever the pods ask for.

Rules (kubernetes-sigs/karpenter `designs/static-capacity.md`, Karpenter's StaticCapacity feature):

- **Counting.** A pool's *active* nodes are its claims that are not being removed (claim `deleting`, node
  tainted `karpenter.sh/disrupted` or being deleted, or a removal this provisioner just started). Claims still
  launching count: a launch in flight is a node on its way.
- **Scale up.** Fewer active than `replicas`: launch the difference, without pending pods, at the cheapest
  offering the pool's requirements allow, but never past `limits.nodes` counting every claim of the pool
  (active or going: a drifted node's replacement waits for room, as upstream).
- **Scale down.** More active than `replicas` (someone ran `kubectl scale nodepool`): remove the extras
  through the disruption workflow (reason `static-scale-down`), which drains under PDBs and `do-not-disrupt`
  until the pool's `terminationGracePeriod`. Disruption budgets do not apply (a user's explicit request, as
  upstream). Which nodes go, in order: claims without a node yet, then nodes without a `do-not-disrupt` pod,
  then empty ones, fewer pods, the youngest, the name.
- Static pools never provision for pending pods (the provisioner leaves them out of the packing engine) and
  are never consolidated (the planner passes their nodes over); drift and expiry still replace their nodes.

Pure: the provisioner's `services.static_pools` reads the claims and nodes and acts on `StaticPlan`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from longshore.core.model import NodePool

NODES_LIMIT = "nodes"


@dataclass(frozen=True, slots=True)
class StaticMember:
    """One claim of a static pool, with what the choice of which to remove needs."""

    claim_id: str
    node: str | None  # None while its instance has not registered
    created_at: float
    going: bool = False  # being removed already
    pods: int = 0  # reschedulable pods on its node
    protected: bool = False  # a pod with an active do-not-disrupt


@dataclass(frozen=True, slots=True)
class StaticPlan:
    pool: str
    replicas: int
    active: int
    launch: int = 0
    remove: tuple[StaticMember, ...] = ()
    held: str = ""  # why fewer are launched than missing (limits.nodes)


def nodes_limit(pool: NodePool) -> int | None:
    """The pool's `limits.nodes`, if set."""
    return dict(pool.limits.items).get(NODES_LIMIT) if NODES_LIMIT in pool.limits else None


def plan(pool: NodePool, members: Sequence[StaticMember]) -> StaticPlan:
    """What to do for one static pool now (see the module rules)."""
    replicas = pool.replicas or 0
    active = [m for m in members if not m.going]
    if len(active) < replicas:
        missing = replicas - len(active)
        limit = nodes_limit(pool)
        room = missing if limit is None else max(0, min(missing, limit - len(members)))
        held = "" if room == missing else f"limits.nodes {limit} holds {missing - room} launch(es) back"
        return StaticPlan(pool.name, replicas, len(active), launch=room, held=held)
    extra = len(active) - replicas
    order = sorted(
        active,
        key=lambda m: (m.node is not None, m.protected, m.pods > 0, m.pods, -m.created_at, m.claim_id),
    )
    return StaticPlan(pool.name, replicas, len(active), remove=tuple(order[:extra]))


def static_pools(pools: Sequence[NodePool]) -> Mapping[str, NodePool]:
    return {p.name: p for p in pools if p.replicas is not None}

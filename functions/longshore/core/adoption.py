"""Taking over a cluster Karpenter ran: which of its NodeClaims Longshore adopts, without replacing a node.

Rules (the migration path in `docs/migration.md`):
- Only with Karpenter's controller stopped (scaled to zero) is adoption safe; the caller checks, this module
  decides per NodeClaim.
- A NodeClaim is adopted when it belongs to a NodePool Longshore is configured with, is not being deleted, and
  its instance is alive. Its claim record is rebuilt from the object (`core.karpenter_objects.
  claim_from_nodeclaim`), priced from the catalog's offering, and given the drift hashes of the pool and class
  *as configured now*: Karpenter's hash annotations use another algorithm, and an adopted node must not count
  as drifted for that reason alone (a later change of the pool drifts it as usual).
- Nothing is replaced, drained or relabelled on the node: the claim id is the NodeClaim's name, which is also
  the instance's `karpenter.sh/nodeclaim` tag, so the instance and node are found as Longshore's own once the
  instance carries `longshore.io/cluster` too (`adoption_tags`).
- A NodeClaim already managed by Longshore, or whose claim or instance already has a record, is skipped with a
  reason; so is every NodeClaim that cannot be adopted, and the reason says why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from longshore.core.claims import CloudInstance, NodeClaim
from longshore.core.karpenter_objects import MANAGED_BY, claim_from_nodeclaim
from longshore.core.model import ClusterConfig

CLUSTER_TAG = "longshore.io/cluster"
CREATED_AT_TAG = "longshore.io/created-at"


@dataclass(frozen=True, slots=True)
class Adoption:
    claim: NodeClaim
    tags: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class AdoptionPlan:
    adopt: tuple[Adoption, ...]
    skipped: tuple[tuple[str, str], ...]  # (NodeClaim name, why)


def adoption_tags(cluster: str, claim: NodeClaim) -> tuple[tuple[str, str], ...]:
    """The tags an adopted instance gains (Karpenter's own tags stay)."""
    return ((CLUSTER_TAG, cluster), (CREATED_AT_TAG, repr(float(claim.launched_at or claim.created_at))))


def plan_adoption(
    nodeclaims: Iterable[Mapping[str, Any]],
    records: Iterable[NodeClaim],
    instances: Mapping[str, CloudInstance],
    config: ClusterConfig,
    price: Callable[[str, str, str, str], float | None],
    hashes: Callable[[str], tuple[str, str]],
) -> AdoptionPlan:
    """Decide, for every NodeClaim object, whether it is adopted (see the module rules).

    `instances`: live instances by id; `price(pool, type, zone, capacity type)`: the catalog's price or None;
    `hashes(pool)`: the pool's and its class's drift hashes as configured now."""
    by_id = {r.id for r in records}
    by_instance = {r.instance_id for r in records if r.instance_id}
    pools = {p.name for p in config.node_pools}
    adopt: list[Adoption] = []
    skipped: list[tuple[str, str]] = []
    for obj in nodeclaims:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        reason = _refusal(obj, meta, pools, by_id)
        claim = claim_from_nodeclaim(obj) if reason is None else None
        if reason is None and claim is None:
            reason = "it names no NodePool (label karpenter.sh/nodepool)"
        if claim is not None and reason is None:
            instance = instances.get(claim.instance_id or "")
            if instance is None or not instance.alive:
                reason = f"its instance {claim.instance_id or '(none)'} is not running"
            elif claim.instance_id in by_instance:
                reason = f"its instance {claim.instance_id} already has a claim record"
        if reason is not None or claim is None:
            if reason is not None:
                skipped.append((name, reason))
            continue
        pool_hash, class_hash = hashes(claim.nodepool)
        cost = price(claim.nodepool, claim.instance_type or "", claim.zone or "", claim.capacity_type or "")
        adopted = replace(claim, price=cost, nodepool_hash=pool_hash, nodeclass_hash=class_hash)
        adopt.append(Adoption(adopted, adoption_tags(config.name, adopted)))
    return AdoptionPlan(tuple(adopt), tuple(skipped))


def _refusal(
    obj: Mapping[str, Any], meta: Mapping[str, Any], pools: set[str], records: set[str]
) -> str | None:
    labels = meta.get("labels") or {}
    if labels.get(MANAGED_BY) == "longshore":
        return "already managed by Longshore"
    if meta.get("deletionTimestamp"):
        return "it is being deleted"
    pool = labels.get("karpenter.sh/nodepool")
    if pool and pool not in pools:
        return f"NodePool {pool} is not in Longshore's configuration (add it, or read pools from the cluster)"
    if str(meta.get("name", "")) in records:
        return "a claim record of that name exists already"
    return None

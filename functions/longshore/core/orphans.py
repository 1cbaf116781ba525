"""Instances tagged for the cluster that no claim owns: re-adopt them, collect a few, or stop and alarm.

Theory of operation: an unclaimed instance (`core.claims.decide_orphans`: alive, older than the adoption grace,
no claim records it or will adopt it) is not proof that the instance is unused. The claim table can be
emptied, restored from an old backup or re-created, and a person can tag an instance by hand; in each case
every live node of the cluster looks unclaimed. So `plan_orphans` follows these rules, in order:

1. An unclaimed instance whose Node exists (by providerID) is *re-adopted*: its claim is rebuilt from the
   instance's tags and the Node (`adopted_claim`), and the lifecycle and the planner own it again. Nothing
   running on it is touched; if it is not needed, consolidation removes it through the drain workflow like
   any other node. A Node that was never registered (it still carries `karpenter.sh/unregistered`: the
   claim was lost between launch and registration) gets a `launched` claim, so the lifecycle's registration
   removes the taint, labels it and adds the finalizer next pass; a `registered` claim is never registered
   again, and its tainted Node would count as room that no pod can use (pending pods planned onto it forever).
2. An unclaimed instance without a Node is collectable only once it is older than the registration timeout
   (`REGISTRATION_TIMEOUT_S`): it never registered, so it can run no pod.
3. At most `collection_bound(cluster size)` = max(1, 10 % of the live instances tagged for the cluster) are
   collected per pass.
4. Mass orphans: when more instances are collectable (rule 2) than that bound, something is wrong with the
   claim records or the tags, not with the instances. Nothing is collected; the lifecycle logs an error and
   emits `OrphansMassDetected` (alarmed), and re-adoption (which terminates nothing) still proceeds.

Pure: plans only; `services.lifecycle` carries them out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from longshore.core import labels as wk
from longshore.core.claims import (
    ORPHAN_GRACE_S,
    REGISTRATION_TIMEOUT_S,
    CloudInstance,
    NodeClaim,
    NodeObservation,
    decide_orphans,
    provider_id,
)
from longshore.core.taints import UNREGISTERED_TAINT

COLLECTION_FRACTION: Final = 0.10


def collection_bound(cluster_size: int) -> int:
    """How many orphans one pass may collect: 1 or 10 % of the cluster, whichever is larger."""
    return max(1, math.floor(cluster_size * COLLECTION_FRACTION))


@dataclass(frozen=True, slots=True)
class OrphanPlan:
    adopt: tuple[tuple[CloudInstance, NodeObservation], ...] = ()
    collect: tuple[CloudInstance, ...] = ()
    candidates: int = 0  # unclaimed, no Node, past the registration timeout
    bound: int = 1

    @property
    def mass(self) -> bool:
        return self.candidates > self.bound


def plan_orphans(
    instances: Iterable[CloudInstance],
    claims: Iterable[NodeClaim],
    nodes_by_instance: Mapping[str, NodeObservation],
    now: float,
    grace_s: float = ORPHAN_GRACE_S,
    registration_timeout_s: float = REGISTRATION_TIMEOUT_S,
) -> OrphanPlan:
    """What to do with the unclaimed instances among `instances` (see the module docstring's rules)."""
    live = tuple(i for i in instances if i.alive)
    unclaimed = decide_orphans(live, claims, now, grace_s)
    bound = collection_bound(len(live))
    adopt = tuple(
        (i, nodes_by_instance[i.instance_id]) for i in unclaimed if i.instance_id in nodes_by_instance
    )
    never_registered = tuple(
        i
        for i in unclaimed
        if i.instance_id not in nodes_by_instance and now - i.created_at >= registration_timeout_s
    )
    collect = () if len(never_registered) > bound else never_registered
    return OrphanPlan(adopt, collect, len(never_registered), bound)


def adopted_claim(
    instance: CloudInstance, node: NodeObservation, claim_id: str, node_class: str, now: float
) -> NodeClaim:
    """The claim of a re-adopted instance: `registered` with its Node (the lifecycle initializes it when it is
    Ready), or `launched` when the Node was never registered (the lifecycle registers it next pass), its
    offering from the instance, its pool from the tag or the Node's label."""
    labels = dict(node.labels)
    registered = not any(
        (t.key, t.effect) == (UNREGISTERED_TAINT.key, UNREGISTERED_TAINT.effect) for t in node.taints
    )
    return NodeClaim(
        id=claim_id,
        nodepool=instance.nodepool or labels.get(wk.NODEPOOL, ""),
        node_class=labels.get(wk.NODECLASS, node_class),
        instance_type=instance.instance_type,
        instance_types=(instance.instance_type,),
        zone=instance.zone,
        capacity_type=instance.capacity_type,
        instance_id=instance.instance_id,
        node_name=node.name if registered else None,
        provider_id=node.provider_id or provider_id(instance.zone, instance.instance_id),
        image_id=instance.image_id,
        state="registered" if registered else "launched",
        launched_at=instance.created_at or now,
        registered_at=now if registered else None,
        created_at=now,
        reason="re-adopted: the instance had no claim record but a live Node",
    )

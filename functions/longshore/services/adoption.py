"""Carry out an adoption plan (`core.adoption`): tag each instance, write its claim record, mark its NodeClaim.

Rules:
- Per NodeClaim, in this order, each step idempotent: the instance gains Longshore's cluster tag (so it is
  Longshore's for orphan collection and interruption handling), the claim record is created if absent (the
  claim id is the NodeClaim's name, which the instance's `karpenter.sh/nodeclaim` tag already carries), and the
  NodeClaim object gets the `longshore.io/managed-by` label (so the NodeClaim sync keeps it from then on). A
  run that stops half-way is finished by the next run: a tagged instance without a record is planned again.
- Nothing touches the node or its pods: no taint, no drain, no replacement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from longshore.core.adoption import AdoptionPlan, plan_adoption
from longshore.core.catalog import Catalog
from longshore.core.claims import instance_id_of
from longshore.core.disruption.drift import claim_hashes
from longshore.core.karpenter_objects import MANAGED_BY
from longshore.core.model import ClusterConfig
from longshore.core.overlays import pool_view
from longshore.ports.cloud import Instances, InstanceTags
from longshore.ports.karpenter import KarpenterObjects
from longshore.ports.store import ClaimStore


@dataclass(frozen=True, slots=True)
class AdoptionResult:
    adopted: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]


class Adopter:
    def __init__(
        self,
        *,
        objects: KarpenterObjects,
        store: ClaimStore,
        instances: Instances,
        tags: InstanceTags,
        config: ClusterConfig,
        catalog: Callable[[], Catalog],
    ) -> None:
        self._objects = objects
        self._store = store
        self._instances = instances
        self._tags = tags
        self._config = config
        self._catalog = catalog

    def plan(self) -> AdoptionPlan:
        nodeclaims = self._objects.list_objects("NodeClaim")
        ids = [
            i
            for o in nodeclaims
            if (i := instance_id_of(str((o.get("status") or {}).get("providerID") or ""))) is not None
        ]
        instances = {i.instance_id: i for i in self._instances.describe(ids)}
        catalog = self._catalog()

        def price(pool: str, type_name: str, zone: str, capacity_type: str) -> float | None:
            chosen = self._config.pool(pool)
            view = pool_view(catalog, chosen, self._config.node_class_of(chosen).ami_family)  # overlay prices
            found = view.get(type_name)
            if found is None:
                return None
            return next(
                (o.price for o in found.offerings if o.zone == zone and o.capacity_type == capacity_type),
                None,
            )

        def hashes(pool: str) -> tuple[str, str]:
            chosen = self._config.pool(pool)
            return claim_hashes(chosen, self._config.node_class_of(chosen))

        return plan_adoption(nodeclaims, self._store.list(), instances, self._config, price, hashes)

    def apply(self, plan: AdoptionPlan) -> AdoptionResult:
        existing = {
            str((o.get("metadata") or {}).get("name")): o for o in self._objects.list_objects("NodeClaim")
        }
        adopted: list[str] = []
        for adoption in plan.adopt:
            claim = adoption.claim
            self._tags.tag([claim.instance_id or ""], adoption.tags)
            self._store.create_if_absent(claim)
            obj = existing.get(claim.id)
            if obj is not None:
                meta = obj.get("metadata") or {}
                labels = {**(meta.get("labels") or {}), MANAGED_BY: "longshore"}
                self._objects.apply("NodeClaim", {**obj, "metadata": {**meta, "labels": labels}})
            adopted.append(claim.id)
        return AdoptionResult(tuple(adopted), plan.skipped)

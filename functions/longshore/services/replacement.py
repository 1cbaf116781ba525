"""Replacement nodes for the disruption workflow's surge step (`ports.workflow.ReplacementLauncher`).

Theory of operation. When a disruption is started with `replace: true` (a rotation that surges, a rebalance
recommendation under the `replace` policy, a surge expiry or drift), the workflow's `launch_replacement` step
calls `ClusterReplacementLauncher.launch_replacement(claim, node, reason, now)` before it taints the node, and
then waits until the returned claim is `initialized`. This module decides what to launch and launches it:

1. *Idempotency first.* The replacement's claim id is deterministic from the node being replaced (its claim
   id, else its node name, else its instance id) and the reason (`replacement_claim_id`). A claim with that id
   that is already launched, registered or initialized is the answer: a retried step launches nothing. One
   left in `launching` is launched again with the same id, so the launcher adopts a crashed run's instance or
   waits for the run that holds the attempt. Only a claim in `deleting` (the replacement came and went) makes
   room for the next generation of the id (`<id>-g2`, ...), found the same way on every retry.
2. *Which pods need a home*, and 3. *plan on fresh capacity*: `services.replacement_plan` (the pods the drain
   will evict, solved against sealed existing nodes, the node's own pool first), and the decision for empty
   nodes (replaced only for the reasons in `CAPACITY_PRESERVING_REASONS`, by a node of the same pool).
4. *Launch.* The claim with the most pods is the primary: its id is the deterministic one, the workflow waits
   for it. Claims beyond it (pods that cannot share one node) are launched too, as `<id>-2`, `<id>-3`...; the
   workflow does not wait for them, and their pods wait for them as pending pods. Claims go through
   `services.launch_requests.launch_request` (options cheapest first, kubelet values) and `ports.cloud.Launcher`
   (CreateFleet with capacity-error fallback across the options, ICE marks in the shared store). The record
   carries the pool and node-class hashes (`core.disruption.drift.claim_hashes`) for drift detection.
5. *Nothing to launch.* When the primary's launch fails (every offering refused), the plan is made again with
   the offerings now marked unavailable, which moves the pods to other types and then other pools; at most
   `MAX_PLANNING_ROUNDS` rounds, and never twice the same options. When no plan or launch succeeds,
   `ReplacementUnavailableError` says why (the engine's reason per pod, and each launch failure), and the
   workflow rolls the disruption back.
6. *Room taken while it booted.* Pods that arrive while a replacement boots may be bound to it by the
   scheduler, so its room can be gone when it is initialized. Before the workflow taints the node it asks
   `top_up(claim, node, reason, now, after)`: the pods the drain would evict are solved against the room
   there is now (`ReplacementPlanner.homeless`: initialized nodes only, none being deleted or replaced by a
   surge, no new claim). When every pod has a home the answer is None and the node is tainted; otherwise a
   further replacement is launched for the pods left without one (planned as in 2 and 3, with the id
   derived from `after`, the claim waited for until now, so a retried step launches nothing) and the
   workflow waits for it within the same replacement timeout. A voluntary disruption thus never evicts pods
   that have nowhere to run.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from longshore.core import telemetry
from longshore.core.catalog import Catalog
from longshore.core.claims import LaunchRequest, LaunchResult, NodeClaim
from longshore.core.disruption.drift import claim_hashes
from longshore.core.model import ClusterConfig
from longshore.core.scheduling import ClaimPlan
from longshore.ports.cloud import Launcher, PlacementGroups
from longshore.ports.kube import Cluster
from longshore.ports.metrics import MetricsSink
from longshore.ports.store import ClaimStore, OfferingAvailability
from longshore.ports.workflow import ReplacementUnavailableError
from longshore.services.launch_requests import launch_request
from longshore.services.replacement_plan import (
    CAPACITY_PRESERVING_REASONS,
    CatalogSource,
    PlanningState,
    ReplacementPlan,
    ReplacementPlanner,
    ReplacementSource,
)

log = logging.getLogger(__name__)

#: Plan-and-launch rounds before giving up (each round plans around the offerings the last one found empty).
MAX_PLANNING_ROUNDS: Final = 3

__all__ = [
    "CAPACITY_PRESERVING_REASONS",
    "MAX_PLANNING_ROUNDS",
    "ClusterReplacementLauncher",
    "current_claim_id",
    "replacement_claim_id",
]


def replacement_claim_id(source: str, reason: str) -> str:
    """The deterministic claim id of the replacement for `source` (claim id, node name or instance id)."""
    digest = hashlib.sha256(f"replacement\0{source}\0{reason}".encode()).hexdigest()[:12]
    return f"replacement-{digest}"


def current_claim_id(base: str, claims: Mapping[str, NodeClaim]) -> str:
    """`base`, or the first generation `<base>-g<n>` whose claim is absent or not `deleting`."""
    candidate, generation = base, 1
    while (found := claims.get(candidate)) is not None and found.state == "deleting":
        generation += 1
        candidate = f"{base}-g{generation}"
    return candidate


def _describe_claim(claim: ClaimPlan) -> str:
    return f"{claim.nodepool}/{claim.instance_type} {claim.capacity_type} in {claim.zone}"


class ClusterReplacementLauncher:
    """`ports.workflow.ReplacementLauncher` with the packing engine and the fleet launcher (see the module doc)."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        store: ClaimStore,
        offerings: OfferingAvailability,
        launcher: Launcher,
        config: ClusterConfig,
        catalog: CatalogSource,
        metrics: MetricsSink | None = None,
        placement_groups: PlacementGroups | None = None,
    ) -> None:
        self._store = store
        self._offerings = offerings
        self._launcher = launcher
        self._config = config
        self._metrics = metrics
        self._planner = ReplacementPlanner(
            cluster=cluster, store=store, config=config, catalog=catalog, placement_groups=placement_groups
        )

    # -- the port --------------------------------------------------------------------------------------------

    def launch_replacement(
        self, claim: NodeClaim | None, node: dict[str, Any] | None, reason: str, now: float
    ) -> str:
        try:
            return self._launch(ReplacementSource.of(claim, node), reason, now)
        except ReplacementUnavailableError as error:
            self._emit(telemetry.REPLACEMENTS_UNAVAILABLE, {telemetry.DIM_REASON: reason})
            log.warning("no replacement can be launched", extra={"reason": reason, "why": str(error)})
            raise

    def plan(
        self, claim: NodeClaim | None, node: dict[str, Any] | None, reason: str, now: float
    ) -> ReplacementPlan:
        """The replacement plan for a node, without launching (for dry runs and tests)."""
        source = ReplacementSource.of(claim, node)
        return self._planner.plan(
            source, reason, self._planner.snapshot(source, now), self._offerings.unavailable(now)
        )

    # -- launching -------------------------------------------------------------------------------------------

    def _launch(self, source: ReplacementSource, reason: str, now: float) -> str:
        known = {c.id: c for c in self._store.list()}
        claim_id = current_claim_id(replacement_claim_id(source.key, reason), known)
        found = known.get(claim_id)
        if found is not None and found.state != "launching":
            log.info(
                "replacement already launched",
                extra={"node": source.node_name, "claim": claim_id, "state": found.state, "reason": reason},
            )
            return claim_id
        state = self._planner.snapshot(source, now, exclude_claim=claim_id)
        return self._launch_planned(source, reason, state, claim_id, now)

    def top_up(
        self, claim: NodeClaim | None, node: dict[str, Any] | None, reason: str, now: float, after: str
    ) -> str | None:
        """Rule 6: None when the pods of `claim`/`node` all have a home now; else the claim id of a further
        replacement launched for those that have none (idempotent per `after`, the claim waited for until
        now). Raises `ReplacementUnavailableError` when nothing can be launched for them."""
        source = ReplacementSource.of(claim, node)
        claim_id = f"{after}-more"
        known = {c.id: c for c in self._store.list()}
        found = known.get(claim_id)
        if found is not None and found.state != "launching":
            return claim_id  # a retried step: launched already
        state = self._planner.snapshot(source, now, exclude_claim=claim_id)
        homeless = self._planner.homeless(state)
        if not homeless:
            return None
        log.info(
            "the replacement's room was taken while it booted; launching another",
            extra={"node": source.node_name, "after": after, "claim": claim_id, "pods": len(homeless)},
        )
        try:
            return self._launch_planned(source, reason, replace(state, moved=homeless), claim_id, now)
        except ReplacementUnavailableError as error:
            self._emit(telemetry.REPLACEMENTS_UNAVAILABLE, {telemetry.DIM_REASON: reason})
            log.warning("no further replacement can be launched", extra={"reason": reason, "why": str(error)})
            raise

    def _launch_planned(
        self, source: ReplacementSource, reason: str, state: PlanningState, claim_id: str, now: float
    ) -> str:
        failures: list[str] = []
        tried: set[frozenset[tuple[str, str, str]]] = set()
        for _ in range(MAX_PLANNING_ROUNDS):
            planned = self._planner.plan(source, reason, state, self._offerings.unavailable(now), failures)
            primary, *extras = planned.claims
            request = self._request(primary, claim_id, source, reason, state.catalog, now, planned.empty)
            options = frozenset(o.key for o in request.options)
            if options in tried:
                break
            tried.add(options)
            result = self._launcher.launch(request, now)
            self._emit_launch(result)
            if result.ok or result.status == "in_progress":
                self._launched(source, reason, planned, result)
                for index, extra in enumerate(extras, start=2):
                    self._launch_extra(extra, f"{claim_id}-{index}", source, reason, state.catalog, now)
                return claim_id
            failures.append(f"launching {_describe_claim(primary)} failed: {result.reason or 'no instance'}")
        raise ReplacementUnavailableError(
            f"no replacement for {source.subject} ({reason}): "
            + "; ".join(failures or ["no launch succeeded"])
        )

    def _request(
        self,
        plan: ClaimPlan,
        claim_id: str,
        source: ReplacementSource,
        reason: str,
        catalog: Catalog,
        now: float,
        empty: bool,
    ) -> LaunchRequest:
        request = launch_request(plan, catalog, self._config, now)
        pool = self._config.pool(plan.nodepool)
        pool_hash, class_hash = claim_hashes(pool, self._config.node_class_of(pool))
        claim = replace(
            request.claim,
            id=claim_id,
            pods=() if empty else request.claim.pods,
            nodepool_hash=pool_hash,
            nodeclass_hash=class_hash,
            reason=f"replaces {source.subject} ({reason})",
            # the planner counts the replaced node as going away and this claim as taken by its pods
            replaces=(source.node_name,) if source.node_name else (),
        )
        return replace(request, claim=claim)

    def _launch_extra(
        self,
        plan: ClaimPlan,
        claim_id: str,
        source: ReplacementSource,
        reason: str,
        catalog: Catalog,
        now: float,
    ) -> None:
        result = self._launcher.launch(
            self._request(plan, claim_id, source, reason, catalog, now, False), now
        )
        self._emit_launch(result)
        if not (result.ok or result.status == "in_progress"):
            log.warning(
                "an additional replacement could not be launched; its pods will wait as pending pods",
                extra={"claim": claim_id, "pods": len(plan.pods), "why": result.reason},
            )

    def _launched(
        self, source: ReplacementSource, reason: str, planned: ReplacementPlan, result: LaunchResult
    ) -> None:
        if result.status in ("launched", "adopted"):
            self._emit(telemetry.REPLACEMENTS_LAUNCHED, {telemetry.DIM_REASON: reason})
        launched = result.claim
        log.info(
            "launched replacement",
            extra={
                "node": source.node_name,
                "claim": result.claim_id,
                "status": result.status,
                "reason": reason,
                "instance_type": launched.instance_type if launched else None,
                "capacity_type": launched.capacity_type if launched else None,
                "zone": launched.zone if launched else None,
                "pods": len(planned.moved),
                "claims": len(planned.claims),
                "unschedulable": [f"{key}: {why}" for key, why in planned.unschedulable],
            },
        )

    # -- metrics -------------------------------------------------------------------------------------------------

    def _emit(self, name: str, dimensions: Mapping[str, str]) -> None:
        if self._metrics is not None:
            self._metrics.emit(name, 1.0, "Count", dimensions)

    def _emit_launch(self, result: LaunchResult) -> None:
        if self._metrics is None:
            return
        for point in result.metrics:
            self._metrics.emit(point.name, point.value, "Count", dict(point.dimensions))

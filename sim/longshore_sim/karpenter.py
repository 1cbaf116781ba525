"""Karpenter's objects in the simulated cluster, as the provisioner function keeps them (`longshore sandbox`).

The deployed provisioner ends every invocation with `services.karpenter_sync.publish`: a NodeClaim per launched
claim, pool status, and the `deleted` disruption of the node of every NodeClaim a user deleted. The simulation
runs the same function after each of its provisioner invocations when the runner asks for it
(`ScenarioRunner(karpenter_objects=True)`, on in the sandbox), so `kubectl get nodeclaims` and `kubectl delete
nodeclaim` work against the emulator. The planner then also writes the conditions it decides (Drifted,
Consolidatable, Disrupting: `services.claim_conditions`) after each pass, as the deployed planner does.
Off by default: the shipped scenarios are measured without it.

A deleted NodeClaim or Node (`kubectl delete nodeclaim|node`) wakes the provisioner (`SimulatedWorld.trigger`):
deployed, the next scheduled invocation (within a minute) notices it; the runner skips scheduled invocations
while the world is quiet, so without the wake a deletion in a quiet sandbox would wait for the next unrelated
event.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from longshore.services.karpenter_sync import ClaimSync, KarpenterObjectSync
    from longshore_sim.world import SimulatedWorld

log = logging.getLogger(__name__)


class KarpenterObjects:
    """Publishes the world's claims as NodeClaims through the production adapter and service."""

    def __init__(self, world: SimulatedWorld) -> None:
        from longshore.adapters.kube.karpenter import KubeKarpenterObjects
        from longshore.services.karpenter_sync import KarpenterObjectSync

        self._world = world
        self._sync: KarpenterObjectSync = KarpenterObjectSync(
            KubeKarpenterObjects(world.api_client, sleep=world.sleep), world.kube, world.time
        )
        world.cluster.store.admission.append(self._on_admission)
        self._planner_conditions(world)

    def _planner_conditions(self, world: SimulatedWorld) -> None:
        """Every planner the world builds (a cold start too) writes its NodeClaim conditions."""
        from dataclasses import replace

        from longshore.services.claim_conditions import NodeClaimConditions

        conditions = NodeClaimConditions(self._sync)
        build = world._new_planner

        def with_conditions() -> Any:
            service = build()
            service.ports = replace(service.ports, conditions=conditions)
            return service

        world._new_planner = with_conditions
        world.planner.ports = replace(world.planner.ports, conditions=conditions)

    def _on_admission(self, operation: str, plural: str, obj: Any, old: Any) -> None:
        if operation == "DELETE" and plural in ("nodeclaims", "nodes"):
            self._world.trigger(f"{plural[:-1]} {(old or {}).get('metadata', {}).get('name')} deleted")

    def publish(self) -> ClaimSync | None:
        """What the provisioner handler does after its passes (a failure is noted, as the handler logs it)."""
        from longshore.services.karpenter_sync import publish

        world = self._world
        try:
            return publish(self._sync, world.store.list(), (), world.workflows, world.clock.now())
        except Exception as error:  # the next invocation writes them again
            log.warning("could not update Karpenter's objects", extra={"error": str(error)})
            return None

    def deletion_pending(self) -> bool:
        """A NodeClaim Longshore wrote is being deleted: the world is not quiet until its node is gone."""
        return any(
            (o.get("metadata") or {}).get("deletionTimestamp")
            for o in self._world.cluster.store.view("nodeclaims")
        )

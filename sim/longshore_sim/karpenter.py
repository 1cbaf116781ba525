"""Karpenter's objects in the simulated cluster, as the provisioner function keeps them (`longshore sandbox`).

The deployed provisioner ends every invocation with `services.karpenter_sync.publish`: a NodeClaim per launched
claim, pool status, and the `deleted` disruption of the node of every NodeClaim a user deleted. The simulation
runs the same function (the provisioner container's `publish_objects`) after each of its provisioner
invocations when the runner asks for it (`ScenarioRunner(karpenter_objects=True)`, on in the sandbox), so
`kubectl get nodeclaims`, `kubectl get nodepools` and `kubectl delete nodeclaim` work against the emulator.
Off by default: the shipped scenarios are measured without it. The planner, built by `wiring.planner`, writes
the conditions it decides (Drifted, Consolidatable, Disrupting: `services.claim_conditions`) after each pass
in every simulation, as the deployed planner does.

A deleted NodeClaim or Node (`kubectl delete nodeclaim|node`) wakes the provisioner (`SimulatedWorld.trigger`):
deployed, the next scheduled invocation (within a minute) notices it; the runner skips scheduled invocations
while the world is quiet, so without the wake a deletion in a quiet sandbox would wait for the next unrelated
event. For the same reason a NodePool or EC2NodeClass created, changed or deleted with kubectl (its spec, not
a status write) wakes the provisioner and the planner: with `poolSource: both` their containers read it and
rebuild, and the provisioner writes its status.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from longshore_sim.world import SimulatedWorld

log = logging.getLogger(__name__)
POOL_KINDS = ("nodepools", "ec2nodeclasses")


class KarpenterObjects:
    """Publishes the world's claims as NodeClaims through the production adapter and service."""

    def __init__(self, world: SimulatedWorld) -> None:
        self._world = world
        world.cluster.store.admission.append(self._on_admission)

    def _on_admission(self, operation: str, plural: str, obj: Any, old: Any) -> None:
        if operation == "DELETE" and plural in ("nodeclaims", "nodes"):
            self._world.trigger(f"{plural[:-1]} {(old or {}).get('metadata', {}).get('name')} deleted")
        if plural in POOL_KINDS and (
            operation == "DELETE" or (obj or {}).get("spec") != (old or {}).get("spec")
        ):
            # a pool or class applied with kubectl (not a status write): deployed, the next scheduled
            # invocations read it within a minute; here they may be skipped as quiet, so wake both functions
            name = (obj or old or {}).get("metadata", {}).get("name")
            self._world.trigger(f"{plural[:-1]} {name} {operation.lower()}d")
            self._world.wake_planner(f"{plural[:-1]} {name} {operation.lower()}d")

    def publish(self) -> None:
        """What the provisioner handler does after its passes: `ProvisionerRuntime.publish_objects` of the
        provisioner's container (a failure is logged, never raised)."""
        self._world.provisioners.current().publish_objects()

    def deletion_pending(self) -> bool:
        """A NodeClaim Longshore wrote is being deleted: the world is not quiet until its node is gone."""
        return any(
            (o.get("metadata") or {}).get("deletionTimestamp")
            for o in self._world.cluster.store.view("nodeclaims")
        )

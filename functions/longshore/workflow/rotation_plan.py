"""The rotation's first step, `plan_rotation`: resolve and check every node before any is touched (the state
machine then starts one disruption execution per node, a canary first)."""

from __future__ import annotations

from typing import Any

from longshore.core.commands import CommandError, DisruptionCommand, RotationRequest, execution_name_of
from longshore.workflow import nodes
from longshore.workflow.context import (
    CLUSTER_TAG,
    State,
    StepPorts,
    owned_by_tag,
)
from longshore.workflow.errors import (
    NotOwnedError,
    StepInputError,
)

# ----------------------------------------------------------------------------------------------------------
# Rotation


def _rotation_target(ports: StepPorts, node_name: str) -> tuple[str | None, str | None, str | None]:
    """(instance id, claim id, refusal reason) of one node to rotate."""
    node = ports.cluster.get_node(node_name)
    if node is None:
        return None, None, "node not found"
    instance_id = nodes.instance_id_of_node(node)
    if instance_id is None:
        return None, None, "node has no aws:/// providerID"
    claim = ports.claims.by_instance(instance_id)
    if claim is None and not owned_by_tag(ports, instance_id):
        return (
            instance_id,
            None,
            (
                f"instance {instance_id}: no NodeClaim in the store and no {CLUSTER_TAG}={ports.cluster_name} tag"
            ),
        )
    if nodes.has_disrupted_taint(node):
        return instance_id, None, "already being disrupted"
    return instance_id, claim.id if claim else None, None


def plan_rotation(state: State, ports: StepPorts) -> State:
    """Check every node, then split them into the canary and the rest, each as a disruption execution input."""
    try:
        request = RotationRequest.from_input({k: v for k, v in state.items() if k != "executionName"})
    except CommandError as error:
        raise StepInputError(str(error)) from error
    parent = str(state.get("executionName") or request.execution_name())
    now = ports.clock.now()
    items, refused = [], []
    for node_name in request.nodes:
        instance_id, claim_id, refusal = _rotation_target(ports, node_name)
        if refusal is not None or instance_id is None:
            refused.append(f"{node_name} ({refusal})")
            continue
        command = DisruptionCommand(
            instance_id=instance_id,
            reason=request.reason,
            node_name=node_name,
            claim_id=claim_id,
            replace=request.surge,
            requested_at=now,
        )
        child_input: dict[str, Any] = {**command.to_input(), "drainSeconds": request.drain_seconds}
        items.append(
            {"name": execution_name_of(parent[:40], instance_id), "node": node_name, "input": child_input}
        )
    if refused:
        raise NotOwnedError(
            f"refusing to rotate {len(refused)} of {len(request.nodes)} nodes in cluster {ports.cluster_name}: "
            + "; ".join(refused)
        )
    canary = items[0] if request.canary and items else None
    rest = items[1:] if canary is not None else items
    return {
        **request.to_input(),
        "executionName": parent,
        "hasCanary": canary is not None,
        "canary": canary,
        "rest": rest,
    }
